//! The binary's side of `bench`, `sweep` and `ab`: the composition itself lives in the
//! `connstorm-bench` crate (re-exported here under the paths the commands use); this module adds
//! only what prints (notes, progress lines) and the build's version in records.

pub use ::bench::{baseline, cpus, harness, summary};

pub mod record;
pub mod run;

/// Starts a harness ([`harness::Harness::start`]) and shows its notes on stderr.
///
/// # Errors
/// See [`harness::Harness::start`].
pub fn start(setup: harness::Setup) -> anyhow::Result<harness::Harness> {
    let h = harness::Harness::start(setup)?;
    for n in h.notes() {
        note(&n);
    }
    Ok(h)
}

/// Shows one note of the composition crate on stderr, prefixed `connstorm: `.
pub fn note(line: &str) {
    crate::output::note(&format!("connstorm: {line}"));
}

/// Shows one per-second progress line of a phase on stderr ([`summary::progress_line`]).
pub fn progress(spec: &harness::PhaseSpec, row: &loadgen::TimelineRow) {
    if let Some(line) = summary::progress_line(spec, row) {
        crate::progress::second(&spec.name, &line);
    }
}
