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
/// the watch. The caller then stops the server ([`Server::stop`]).
pub fn watch(
    srv: &Server,
    duration: Option<Duration>,
    stop: &AtomicBool,
    on_line: &mut dyn FnMut(&str),
) -> bool {
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
        on_line(&progress_line(
            now - started,
            now - last_at,
            &last,
            &srv.stats(),
            true,
        ));
    }
    stopped
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
