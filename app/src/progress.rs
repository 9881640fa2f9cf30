//! Progress of `bench`, `sweep`, `ab` and `load` on stderr: on a terminal one indicatif bar (command,
//! trial k of n, phase, elapsed, seconds done of planned, ETA) with every note printed above
//! it; otherwise the plain per-second lines `load` prints, one per measured second.
//!
//! The bar is process-wide (one long command runs at a time), so the deep code that runs
//! phases only reports seconds ([`second`]), and every note on stderr goes through [`note`]
//! (`output::note`), which prints it above the bar. Planned seconds are warm-up plus
//! measurement of every phase; the ETA is indicatif's, from the rate of seconds done (set-up
//! and drains make it a little optimistic).
//!
//! This module is the bottom of the printing: it uses no other module of this crate.

use std::io::IsTerminal as _;
use std::sync::Mutex;
use std::time::Duration;

static BAR: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);

fn bar() -> Option<indicatif::ProgressBar> {
    BAR.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Ends the bar (cleared from the terminal) when dropped.
#[must_use = "the bar ends when the guard is dropped"]
pub struct Guard(());

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(b) = BAR.lock().unwrap_or_else(|p| p.into_inner()).take() {
            b.finish_and_clear();
        }
    }
}

/// Starts the bar for `command` (`"bench"`, `"sweep"`, `"ab"`) with `planned` seconds of
/// phases in all, when stderr is a terminal; without one, nothing changes (the plain lines).
pub fn begin(command: &str, planned: Duration) -> Guard {
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(planned.as_secs_f64().ceil().max(1.0) as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix} [{elapsed_precise}] {bar:30} {pos}/{len} s  ETA {eta}  {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_prefix(command.to_string());
        bar.enable_steady_tick(Duration::from_millis(500));
        *BAR.lock().unwrap_or_else(|p| p.into_inner()) = Some(bar);
    }
    Guard(())
}

/// Shows trial `k` of `n` (1-based) in the bar's prefix (`ab trial 3/10 B`).
pub fn trial(command: &str, k: u32, n: u32, side: &str) {
    if let Some(b) = bar() {
        b.set_prefix(format!("{command} trial {k}/{n} {side}"));
    }
}

/// One second of phase `phase` is done: on a terminal the bar moves on (its length grows if
/// the run outlasts the plan) and names the phase; otherwise `line` is printed.
pub fn second(phase: &str, line: &str) {
    match bar() {
        Some(b) => {
            advance(&b);
            b.set_message(format!("phase {phase}"));
        }
        None => note(line),
    }
}

/// One second of `load` is done: `line` is printed (above the bar on a terminal) and the bar,
/// if any, moves on.
pub fn second_line(line: &str) {
    note(line);
    if let Some(b) = bar() {
        advance(&b);
    }
}

fn advance(b: &indicatif::ProgressBar) {
    if b.position() + 1 > b.length().unwrap_or(0) {
        b.set_length(b.position() + 1);
    }
    b.inc(1);
}

/// Writes one line to stderr: above the bar when one is shown, else as a plain line. Write
/// errors are ignored: a closed stderr must not lose a run before its record is written
/// (`output::note`, which every note goes through, is this).
pub fn note(line: &str) {
    use std::io::Write as _;
    if !println(line) {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// Prints `line` above the bar and returns `true` when a bar is shown; `false` (nothing
/// printed) otherwise.
pub fn println(line: &str) -> bool {
    match bar() {
        Some(b) => {
            b.println(line);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_bar_nothing_is_printed_above_it() {
        // Test binaries' stderr is captured (not a terminal): no bar starts.
        let _g = begin("bench", Duration::from_secs(3));
        assert!(!println("x"));
    }
}
