//! Progress of `bench`, `sweep`, `ab` and `load` on stderr: on a terminal one indicatif bar (command,
//! trial k of n, phase, elapsed, seconds done of planned, ETA) with every note printed above
//! it; otherwise the plain per-second lines `load` prints, one per measured second.
//!
//! The bar is process-wide (one long command runs at a time), so the deep code that runs
//! phases only reports seconds ([`second`]) and notes go through [`println()`] from
//! `output::note`. Planned seconds are warm-up plus measurement of every phase; the ETA is
//! indicatif's, from the rate of seconds done (set-up and drains make it a little optimistic).

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
        None => crate::output::note(line),
    }
}

/// One second of `load` is done: `line` is printed (above the bar on a terminal) and the bar,
/// if any, moves on.
pub fn second_line(line: &str) {
    crate::output::note(line);
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

/// Planned seconds of one `bench` run: warm-up and measurement of its peak and latency phases.
pub fn bench_seconds(duration: Duration) -> Duration {
    let (peak, latency, warmup) = crate::run::split_duration(duration);
    peak + latency + warmup * 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_plan_counts_both_phases_and_their_warmups() {
        assert_eq!(
            bench_seconds(Duration::from_secs(15)),
            Duration::from_secs(17)
        );
        assert_eq!(
            bench_seconds(Duration::from_secs(2)),
            Duration::from_millis(2400)
        );
    }

    #[test]
    fn without_a_bar_nothing_is_printed_above_it() {
        // Test binaries' stderr is captured (not a terminal): no bar starts.
        let _g = begin("bench", Duration::from_secs(3));
        assert!(!println("x"));
    }
}
