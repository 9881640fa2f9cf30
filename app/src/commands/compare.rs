//! `connstorm compare`: compare two sets of run records (A vs B) under the statistics rule of
//! `results::compare` (Hodges–Lehmann shift, exact Mann–Whitney interval, minimum trials, noise
//! floor, flagged trials left out).

use std::ffi::OsString;
use std::path::PathBuf;

use results::analysis as compare;
use results::render::CompareFormat as Format;

use super::records::{read_record, refuse_input_as_output, write_output};
use crate::bad_input;

/// The statistics rule, for `--help` of `compare` and `ab` ([`compare::RULE_HELP`]).
pub const RULE_HELP: &str = compare::RULE_HELP;

/// Options shared by `compare` and `ab` for how the sides are named and the table shown.
#[derive(Debug, Clone, clap::Args)]
pub struct ShowArgs {
    /// Name of side A in tables, verdicts and plots (default: its toggle values, setup command
    /// or record labels; a name longer than 16 characters is shown as `A`, the whole name once).
    #[arg(long, value_name = "NAME", value_parser = crate::commands::bench::args::parse_label)]
    pub label_a: Option<String>,
    /// Name of side B (see --label-a).
    #[arg(long, value_name = "NAME", value_parser = crate::commands::bench::args::parse_label)]
    pub label_b: Option<String>,
    /// Text output: every column (each side's min, max and count, flagged trials' figures, the
    /// verdict in words); the default table fits 120 columns.
    #[arg(long)]
    pub wide: bool,
}

impl ShowArgs {
    /// The sides' names must tell them apart: `--label-a x --label-b x` printed "x vs x" and
    /// trials `x#1` on both sides; an empty name printed "A:  (2 trials …)".
    ///
    /// # Errors
    /// Bad input (exit 2) naming the option and the fix.
    pub fn check(&self) -> anyhow::Result<()> {
        for (opt, l) in [("--label-a", &self.label_a), ("--label-b", &self.label_b)] {
            if l.as_deref().is_some_and(|l| l.trim().is_empty()) {
                return Err(bad_input(format!(
                    "{opt} is empty: give the side a name (e.g. {opt} 6.18), or leave {opt} out \
                     to name it by what differs"
                )));
            }
        }
        if let (Some(a), Some(b)) = (&self.label_a, &self.label_b) {
            if a == b {
                return Err(bad_input(format!(
                    "--label-a and --label-b are both {a:?}: the report could not tell the sides \
                     (or their trials) apart; give two different names"
                )));
            }
        }
        Ok(())
    }

    /// The table width asked for.
    pub fn width(&self) -> results::render::Width {
        if self.wide {
            results::render::Width::Wide
        } else {
            results::render::Width::Default
        }
    }
}

/// Options shared by `compare` and `ab` for the comparison.
#[derive(Debug, Clone, clap::Args)]
pub struct RuleArgs {
    /// Noise floor in percent of A's median: smaller shifts get no verdict even when
    /// significant (default: A's run-to-run spread per metric).
    #[arg(long, value_name = "PCT", value_parser = parse_min_effect)]
    pub min_effect: Option<f64>,
    /// Keep flagged trials (their record carries a warning) in the verdict.
    #[arg(long)]
    pub include_flagged: bool,
}

fn parse_min_effect(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..100.0).contains(&v) => Ok(v / 100.0),
        _ => Err(format!(
            "--min-effect {s:?}: give a percentage from 0 up to (not including) 100, e.g. `2` or `2%`"
        )),
    }
}

impl RuleArgs {
    /// The library options.
    pub fn options(&self) -> compare::CompareOptions {
        compare::CompareOptions {
            min_effect: self.min_effect,
            include_flagged: self.include_flagged,
        }
    }
}

pub use results::analysis::{check_setups, refuse_duplicates};

/// The examples after `connstorm compare --help` and in its man page.
pub const EXAMPLES: &str = "\
Examples:
  # Two records, one trial a side
  connstorm compare base.json patched.json
  # Several trials a side (bench --out base, bench --out patched); options may follow
  connstorm compare base/*.json -- patched/*.json --format markdown -o verdict.md
  # No verdict for shifts below 2% of A's median; the sides named
  connstorm compare --a a/*.json --b b/*.json --min-effect 2 --label-a 6.18 --label-b 6.18+fix";

/// Options of `connstorm compare`.
///
/// Give the sides as `A.json B.json` (one trial each), `A1.json A2.json -- B1.json B2.json`
/// (options may follow the B files), or `--a A1.json A2.json --b B1.json B2.json`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES, after_long_help = RULE_HELP)]
pub struct Args {
    /// Side A's records; or, with exactly two files and no `--`, A then B.
    #[arg(value_name = "A")]
    pub a_files: Vec<PathBuf>,
    /// Side A's records (instead of positional files).
    #[arg(long = "a", value_name = "RECORD", num_args = 1.., conflicts_with = "a_files")]
    pub a: Vec<PathBuf>,
    /// Side B's records (also what follows `--`).
    #[arg(long = "b", value_name = "RECORD", num_args = 1..)]
    pub b: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Write the comparison to PATH instead of stdout (`-` = stdout).
    #[arg(long, short, value_name = "PATH", default_value = "-")]
    pub output: PathBuf,
    /// Compare even when the sides' setups differ (engine, target vs loopback, CPUs, close and
    /// server mode, netns, RTT, durations); the differences are listed in the output.
    #[arg(long)]
    pub allow_mismatch: bool,
    /// The statistics rule's options.
    #[command(flatten)]
    pub rule: RuleArgs,
    /// Side names and table width.
    #[command(flatten)]
    pub show: ShowArgs,
}

/// Rewrites the first standalone `--` of `connstorm compare …` and `connstorm plot …` into
/// `--b`, so options after side B's files are options, not files
/// (`compare A1 A2 -- B1 B2 -o x`). Other commands' arguments pass unchanged.
pub fn b_side_separator(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut v: Vec<OsString> = args.into_iter().collect();
    let sub = v
        .iter()
        .skip(1)
        .find(|a| !a.to_string_lossy().starts_with('-'));
    if sub.is_some_and(|s| s == "compare" || s == "plot") {
        if let Some(i) = v.iter().position(|a| a == "--") {
            v[i] = "--b".into();
        }
    }
    v
}

/// Splits the arguments into side A and side B.
fn sides(args: &Args) -> anyhow::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let usage = "give the sides as `connstorm compare A.json B.json`, `connstorm compare A1.json A2.json -- B1.json B2.json` or `connstorm compare --a A1.json A2.json --b B1.json B2.json`";
    let a_given = if args.a.is_empty() {
        &args.a_files
    } else {
        &args.a
    };
    let (a, b) = if !args.b.is_empty() {
        (a_given.clone(), args.b.clone())
    } else if args.a.is_empty() && args.a_files.len() == 2 {
        (vec![args.a_files[0].clone()], vec![args.a_files[1].clone()])
    } else {
        return Err(bad_input(format!(
            "{} record file(s) and no side B: {usage}",
            a_given.len()
        )));
    };
    if a.is_empty() {
        return Err(bad_input(format!("side A has no records: {usage}")));
    }
    Ok((a, b))
}

/// Runs `connstorm compare`.
///
/// # Errors
/// Bad input (exit 2) for missing sides, unreadable/invalid records, mismatched setups or an
/// output that is one of the records (before any output is written); an I/O error writing the
/// output.
pub fn run(args: Args) -> anyhow::Result<i32> {
    args.show.check()?;
    let (a, b) = sides(&args)?;
    let all: Vec<PathBuf> = a.iter().chain(&b).cloned().collect();
    common::files::check_output_file("-o", &args.output)?;
    refuse_input_as_output("-o", &args.output, &all)?;
    let read = |paths: &[PathBuf]| {
        paths
            .iter()
            .map(|p| read_record(p))
            .collect::<anyhow::Result<Vec<_>>>()
    };
    let (ra, rb) = (read(&a)?, read(&b)?);
    refuse_duplicates(a.iter().zip(&ra).chain(b.iter().zip(&rb)))?;
    let (a, b) = (ra, rb);
    let comparison = compare::compare(
        &a,
        &b,
        (args.show.label_a.as_deref(), args.show.label_b.as_deref()),
        &args.rule.options(),
    );
    check_setups(&comparison, args.allow_mismatch)?;
    write_output(
        &args.output,
        &results::render::comparison_with(&comparison, args.format, args.show.width()),
    )?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn options_after_the_b_files_stay_options() {
        let got = b_side_separator(os(&[
            "connstorm",
            "compare",
            "a.json",
            "--",
            "b.json",
            "-o",
            "x",
        ]));
        assert_eq!(
            got,
            os(&["connstorm", "compare", "a.json", "--b", "b.json", "-o", "x"])
        );
        let got = b_side_separator(os(&["connstorm", "plot", "a", "--", "b", "--kind", "ab"]));
        assert_eq!(got[3], "--b");
        let other = os(&["connstorm", "ab", "--a-setup", "x", "--", "y"]);
        assert_eq!(b_side_separator(other.clone()), other);
        #[derive(clap::Parser)]
        struct Cli {
            #[command(subcommand)]
            command: Sub,
        }
        #[derive(clap::Subcommand)]
        enum Sub {
            Compare(Args),
        }
        use clap::Parser as _;
        let cli = Cli::try_parse_from(b_side_separator(os(&[
            "connstorm",
            "compare",
            "a1.json",
            "a2.json",
            "--",
            "b1.json",
            "b2.json",
            "-o",
            "out.md",
            "--format",
            "markdown",
        ])))
        .unwrap();
        let Sub::Compare(args) = cli.command;
        assert_eq!(args.a_files.len(), 2);
        assert_eq!(args.b, [PathBuf::from("b1.json"), PathBuf::from("b2.json")]);
        assert_eq!(args.output, PathBuf::from("out.md"));
        assert_eq!(args.format, Format::Markdown);
    }

    #[test]
    fn min_effect_is_a_percentage() {
        assert_eq!(parse_min_effect("2"), Ok(0.02));
        assert_eq!(parse_min_effect("2.5%"), Ok(0.025));
        assert!(parse_min_effect("-1").is_err());
        assert!(parse_min_effect("abc").is_err());
    }

    /// Names and addresses of the sides: equal or empty `--label-a`/`--label-b` (`compare`
    /// and `ab`) are bad input, before any record is read or trial run.
    #[test]
    fn side_names_that_cannot_tell_the_sides_apart_are_bad_input() {
        let show = |a: Option<&str>, b: Option<&str>| ShowArgs {
            label_a: a.map(str::to_string),
            label_b: b.map(str::to_string),
            wide: true,
        };
        for (a, b, want) in [
            (Some("x"), Some("x"), "both \"x\""),
            (Some(""), Some("y"), "--label-a is empty"),
            (None, Some(" "), "--label-b is empty"),
        ] {
            let e = show(a, b).check().unwrap_err();
            assert!(
                e.downcast_ref::<common::error::BadInput>().is_some(),
                "{a:?} {b:?}"
            );
            assert!(e.to_string().contains(want), "{a:?} {b:?}: {e}");
        }
        show(Some("6.18"), Some("6.18+fix")).check().unwrap();
        show(None, None).check().unwrap();
        show(Some("x"), None).check().unwrap();
    }
}
