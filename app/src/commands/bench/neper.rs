//! `--like 'tcp_crr -T THREADS -F FLOWS [-l SECS]'`: a kernel developer's neper test as
//! connstorm options (docs/neper.md has the table and what differs).
//!
//! neper `tcp_crr` (github.com/google/neper): `-T` threads, `-F` flows kept in flight in total
//! (spread over the threads), closed loop, one destination port; each flow connects, sends a
//! request, reads the response, and the client closes first, so TIME_WAIT sockets build up on
//! the client and every connect() searches the ephemeral ports of the one (source, destination,
//! port) triple — the contention Linux 6.15's connect() series removed. In connstorm:
//!
//! | neper | connstorm |
//! |---|---|
//! | `tcp_crr` | the peak phase (closed loop) is the measurement |
//! | `-F FLOWS` | `--concurrency FLOWS` |
//! | `-T THREADS` | at most THREADS load workers (one per CPU; fewer CPUs: fewer workers with the same flows in all) |
//! | client closes first | `--close fin` (TIME_WAIT on the client) and `--mode hold` (the server closes only after the client's FIN) |
//! | `-l SECS` (default 10) | a peak phase of SECS seconds (`--duration` = SECS / 0.4) |
//! | `-4` | loopback IPv4 (the default) |
//!
//! Not mapped (refused with the reason): `-6` (bench's loopback is IPv4), `-H` (a remote
//! server: use `connstorm load`), request and response sizes other than 1 (connstorm sends no
//! request: a connection costs one round trip less), other neper tests.

use std::time::Duration;

use crate::bad_input;

/// The longest `-l` accepted: its bench (`-l` / 0.4) fits in
/// [`crate::limits::MAX_BENCH_DURATION`].
pub const MAX_PEAK_SECS: u64 = crate::limits::MAX_BENCH_DURATION.as_secs() * 2 / 5;

/// A parsed `tcp_crr` command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpCrr {
    /// `-T`: client threads (default 1).
    pub threads: u32,
    /// `-F`: flows in flight in all (default 1).
    pub flows: u32,
    /// `-l`: test length, s (default 10).
    pub seconds: u64,
}

/// Parses `--like`: `tcp_crr` followed by neper options.
///
/// # Errors
/// Bad input naming the option that cannot be mapped and what to do instead.
pub fn parse(like: &str) -> anyhow::Result<TcpCrr> {
    let words = shlex::split(like)
        .ok_or_else(|| bad_input(format!("--like {like:?}: not shell words (an open quote?)")))?;
    let mut it = words.iter().map(String::as_str);
    match it.next() {
        Some("tcp_crr") => {}
        Some(other) => {
            return Err(bad_input(format!(
                "--like: neper's {other} is not a connection-rate test: only tcp_crr (connect, \
                 request/response, close) maps to connstorm; e.g. --like 'tcp_crr -T 8 -F 1000'"
            )))
        }
        None => {
            return Err(bad_input(
                "--like is empty: give a neper command, e.g. --like 'tcp_crr -T 8 -F 1000'",
            ))
        }
    }
    let mut t = TcpCrr {
        threads: 1,
        flows: 1,
        seconds: 10,
    };
    let number = |opt: &str, v: Option<&str>| -> anyhow::Result<u64> {
        v.and_then(|v| v.parse::<u64>().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                bad_input(format!(
                    "--like: neper {opt} takes a number above 0, e.g. {opt} 8 (got {:?})",
                    v.unwrap_or("nothing")
                ))
            })
    };
    let small = |opt: &str, n: u64| {
        u32::try_from(n).map_err(|_| bad_input(format!("--like: neper {opt} {n} is too large")))
    };
    while let Some(w) = it.next() {
        // `-T8` and `--num-threads=8` as neper's getopt takes them.
        let (opt, inline) = match w.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v)),
            _ if w.len() > 2 && w.starts_with('-') && !w.starts_with("--") => {
                (&w[..2], Some(&w[2..]))
            }
            _ => (w, None),
        };
        let mut value = || inline.or_else(|| it.next());
        match opt {
            "-T" | "--num-threads" => t.threads = small(opt, number(opt, value())?)?,
            "-F" | "--num-flows" => t.flows = small(opt, number(opt, value())?)?,
            "-l" | "--test-length" => {
                let n = number(opt, value())?;
                // bench runs SECS / 0.4 in all and at most MAX_BENCH_DURATION: a longer test
                // is refused here, naming -l (not a --duration the user never gave).
                let most = MAX_PEAK_SECS;
                if n > most {
                    return Err(bad_input(format!(
                        "--like: neper {opt} {n} asks for a bench of {n} s / 0.4 (the peak phase \
                         is 40% of it), longer than bench accepts ({} h): give {opt} {most} or \
                         less, or use `connstorm load --concurrency FLOWS --close fin` for long \
                         runs",
                        crate::limits::MAX_BENCH_DURATION.as_secs() / 3600
                    )));
                }
                t.seconds = n;
            }
            "-4" | "--ipv4" | "-c" | "--client" => {}
            "-Q" | "--request-size" | "-R" | "--response-size" => {
                let n = number(opt, value())?;
                if n != 1 {
                    return Err(bad_input(format!(
                        "--like: neper {opt} {n} is not mapped: connstorm's closed loop sends no \
                         request bytes (connect, then the client's FIN); drop {opt}, or use \
                         `connstorm bench --http` for a request and response per connection"
                    )));
                }
            }
            "-6" | "--ipv6" => {
                return Err(bad_input(
                    "--like: neper -6 is not mapped: bench runs on IPv4 loopback; for IPv6 run \
                     `connstorm server --listen [::1]:9000` and `connstorm load --target \
                     [::1]:9000 --concurrency FLOWS --close fin`",
                ))
            }
            "-H" | "--host" => {
                return Err(bad_input(
                    "--like: neper -H (a remote server) is not mapped in bench: run `connstorm \
                     server` there and `connstorm load --target HOST:PORT --concurrency FLOWS \
                     --close fin` here",
                ))
            }
            other => {
                return Err(bad_input(format!(
                    "--like: neper option {other} is not mapped (mapped: -T, -F, -l, -4, -c, -Q 1, \
                     -R 1; see docs/neper.md): drop it"
                )))
            }
        }
    }
    Ok(t)
}

/// Whether `like` (already accepted by [`parse`]) sets the test length (`-l SECS`, `-lSECS`,
/// `--test-length SECS`, `--test-length=SECS`): `scale` runs each step for its own
/// `--step-duration`, so there a length is refused rather than dropped unread.
pub fn gives_length(like: &str) -> bool {
    shlex::split(like).is_some_and(|words| {
        words.iter().any(|w| {
            w == "--test-length"
                || w.starts_with("--test-length=")
                || (w.starts_with("-l") && !w.starts_with("--"))
        })
    })
}

impl TcpCrr {
    /// `bench --duration` whose peak phase is the test length (40% of the duration).
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.seconds as f64 / 0.4)
    }

    /// The mapping as one line for the user.
    pub fn describe(&self, load_workers: usize) -> String {
        format!(
            "--like tcp_crr -T {} -F {} -l {}: --concurrency {} --close fin --mode hold, a {} s \
             peak phase (--duration {} s), {} load worker(s){}",
            self.threads,
            self.flows,
            self.seconds,
            self.flows,
            self.seconds,
            common::numfmt::exact(self.duration().as_secs_f64()),
            load_workers,
            if (load_workers as u64) < u64::from(self.threads) {
                format!(
                    " (neper's {} threads: one connstorm worker per CPU, the same {} flows in all)",
                    self.threads, self.flows
                )
            } else {
                String::new()
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_command_lines_parse() {
        assert_eq!(
            parse("tcp_crr -T 200 -F 30000").unwrap(),
            TcpCrr {
                threads: 200,
                flows: 30000,
                seconds: 10
            }
        );
        assert_eq!(
            parse("tcp_crr -T128 -F1000 -l30 -c -4").unwrap(),
            TcpCrr {
                threads: 128,
                flows: 1000,
                seconds: 30
            }
        );
        assert_eq!(
            parse("tcp_crr --num-threads=2 --num-flows=64")
                .unwrap()
                .duration(),
            Duration::from_secs(25)
        );
    }

    #[test]
    fn what_cannot_be_mapped_is_refused_with_what_to_do() {
        for (line, want) in [
            ("tcp_crr -T 200 -F 30000 -6", "[::1]:9000"),
            ("tcp_rr -T 1", "only tcp_crr"),
            ("tcp_crr -H 10.0.0.1", "connstorm load --target"),
            ("tcp_crr -F 0", "above 0"),
            // absurd sizes: a test length past bench's 24 h (and past what a Duration holds)
            // names -l, never panics.
            ("tcp_crr -l 34561", "-l 34560 or less"),
            ("tcp_crr -l 18446744073709551615", "-l 34560 or less"),
            ("tcp_crr -R 64", "--http"),
            ("tcp_crr -U", "-U is not mapped"),
            ("", "empty"),
        ] {
            let e = parse(line).unwrap_err();
            assert!(
                e.downcast_ref::<common::error::BadInput>().is_some(),
                "{line}"
            );
            assert!(e.to_string().contains(want), "{line}: {e}");
        }
    }
}
