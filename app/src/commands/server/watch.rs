//! The watch loop of a running `connstorm server`: one progress line a second on stderr until
//! `--duration` passes or a stop signal arrives.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use server::render::{progress_line, MIN_PARTIAL};
use server::Server;

/// Watches a started server until `duration` (if any) has passed since the call or `stop` turns
/// true, polling every 20 ms; `on_line` gets one progress line a second
/// ([`server::render::progress_line`]) and one for the last, partial second when it lasted at
/// least [`MIN_PARTIAL`] (scaled to a per-second rate and marked). Returns true when `stop` ended
/// the watch, and the accepts the lines counted. The caller then stops the server
/// ([`Server::stop`]) and prints [`closing_line`], so that the lines add up to the summary.
pub fn watch(
    srv: &Server,
    duration: Option<Duration>,
    stop: &AtomicBool,
    on_line: &mut dyn FnMut(&str),
) -> Watched {
    let started = Instant::now();
    let mut last = srv.stats();
    let mut last_at = started;
    let mut next_tick = started + Duration::from_secs(1);
    let stopped = loop {
        if crate::signals::stopped(stop) {
            break true;
        }
        let now = Instant::now();
        if duration.is_some_and(|d| now >= started + d) {
            break false;
        }
        if now >= next_tick {
            let cur = srv.stats();
            on_line(&progress_line(
                now - started,
                now - last_at,
                &last,
                &cur,
                false,
            ));
            (last, last_at) = (cur, now);
            next_tick = next_tick_after(next_tick, now);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let now = Instant::now();
    if now - last_at >= MIN_PARTIAL {
        let cur = srv.stats();
        on_line(&progress_line(
            now - started,
            now - last_at,
            &last,
            &cur,
            true,
        ));
        last = cur;
    }
    Watched {
        stopped,
        started,
        lined_accepts: last.accepted(),
    }
}

/// How a watch ended ([`watch`]).
#[derive(Debug, Clone, Copy)]
pub struct Watched {
    /// A stop signal ended it (not `--duration`).
    pub stopped: bool,
    /// When it began.
    pub started: Instant,
    /// The accepts its lines counted (the `total` of the last line).
    pub lined_accepts: u64,
}

/// The line printed after the server stopped, when its summary holds accepts that no progress
/// line counted: those of the last fraction of a second (shorter than [`MIN_PARTIAL`], not worth
/// a rate) and those the workers took from their accept queues while stopping. Without it the
/// lines ended at a total below the summary's (issue 35: lines to 60,266, summary 60,800).
/// `None` when the lines already add up.
pub fn closing_line(watched: &Watched, elapsed: Duration, accepted_total: u64) -> Option<String> {
    let rest = accepted_total.checked_sub(watched.lined_accepts)?;
    (rest > 0).then(|| {
        format!(
            "t={:>6.2} s at stop: accepts {} after the last line (its last fraction of a second and the accept queues drained while stopping), total {}",
            elapsed.as_secs_f64(),
            results::numfmt::count(rest),
            results::numfmt::count(accepted_total)
        )
    })
}

/// The first whole-second tick after `now`: ticks missed while the process was stopped or
/// starved are skipped (one line covers them, [`server::render::LONG_TICK`]), not printed back
/// to back over the 20 ms between polls, each scaled into a false rate.
fn next_tick_after(mut tick: Instant, now: Instant) -> Instant {
    while tick <= now {
        tick += Duration::from_secs(1);
    }
    tick
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 35 item 4: lines ending at 60,266 accepts beside a summary of 60,800 (the last 534
    /// in no line) get a closing line with the 534, so the lines add up to the summary.
    #[test]
    fn the_closing_line_counts_the_accepts_no_line_counted() {
        let w = Watched {
            stopped: false,
            started: Instant::now(),
            lined_accepts: 60_266,
        };
        let l = closing_line(&w, Duration::from_millis(60_040), 60_800).unwrap();
        assert!(l.contains("accepts 534 after the last line"), "{l}");
        assert!(l.ends_with("total 60,800"), "{l}");
        assert!(l.starts_with("t= 60.04 s at stop"), "{l}");
        let whole = Watched {
            lined_accepts: 60_800,
            ..w
        };
        assert_eq!(closing_line(&whole, Duration::from_secs(60), 60_800), None);
    }

    #[test]
    fn ticks_missed_while_stopped_are_skipped_not_printed_back_to_back() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        assert_eq!(next_tick_after(t0 + s(1), t0 + s(1)), t0 + s(2));
        // Stopped from 1.5 s to 4 s: the next line is due at 5 s, not at 2, 3 and 4 s at once.
        assert_eq!(
            next_tick_after(t0 + s(2), t0 + Duration::from_millis(4_020)),
            t0 + s(5)
        );
    }
}
