//! Parsers for the units used on the command line: durations (`30s`, `500ms`, `2m`), connection
//! rates (`20k/s`, `2000/s`, `1M/min`, `1000000cpm`) and CPU lists (`0-3,8`).
//! Each returns a message that says what is wrong and an example of what works; clap shows it and
//! exits with code 2. These are the `value_parser`s of the binary's options (and of every other
//! command line that takes the same units), kept here so each unit is parsed once.

use std::time::Duration;

/// Longest spin `--spin auto` chooses, ns (100 µs; `loadgen::AUTO_SPIN_MAX_NS`): here so that
/// the reports, which read records and not the generator, can tell a spin at the cap from one
/// measured below it.
pub const AUTO_SPIN_MAX_NS: u64 = 100_000;

/// Longest duration any option accepts (30 days): keeps every deadline computation in range.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);

/// Parses a duration with a unit: `30s`, `500ms`, `2m`, `1h`, `1m30s`, `250us`.
///
/// # Errors
/// A message when there is no unit, the number is not a number, or the duration is zero.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.parse::<f64>().is_ok() {
        return Err(format!(
            "duration {s:?} has no unit: write e.g. `{t}s` or `{t}ms`"
        ));
    }
    let d = humantime::parse_duration(t)
        .map_err(|e| format!("invalid duration {s:?} ({e}): write e.g. `30s`, `500ms` or `2m`"))?;
    if d > MAX_DURATION {
        return Err(format!(
            "duration {s:?} is longer than the longest run connstorm accepts (30 days): give a shorter one"
        ));
    }
    Ok(d)
}

/// Like [`parse_duration`] but zero is refused.
///
/// # Errors
/// See [`parse_duration`]; also zero.
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!(
            "duration {s:?} is zero: give a positive duration, e.g. `10s`"
        ));
    }
    Ok(d)
}

/// Parses a connection rate into connections per second.
///
/// Accepted forms: `20000`, `20000/s`, `20k/s`, `1.5k`, `1M/min`, `1000000/min`, `1000000cpm`
/// (`k` = 1e3, `M`/`m` = 1e6, before the `/`).
///
/// # Errors
/// A message for zero, negative, non-finite or unparsable rates.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let (num, per_sec_divisor) = if let Some(n) = lower.strip_suffix("/s") {
        (n.to_string(), 1.0)
    } else if let Some(n) = lower.strip_suffix("/sec") {
        (n.to_string(), 1.0)
    } else if let Some(n) = lower.strip_suffix("/min") {
        (n.to_string(), 60.0)
    } else if let Some(n) = lower.strip_suffix("cpm") {
        (n.to_string(), 60.0)
    } else {
        (lower.clone(), 1.0)
    };
    let num = num.trim();
    let (digits, mult) = match num.chars().last() {
        Some('k') => (&num[..num.len() - 1], 1e3),
        Some('m') => (&num[..num.len() - 1], 1e6),
        _ => (num, 1.0),
    };
    let v: f64 = digits.trim().parse().map_err(|_| {
        format!("invalid rate {s:?}: write connections per second like `20k/s` or `2000/s`, or per minute like `1M/min`")
    })?;
    let rate = v * mult / per_sec_divisor;
    if !rate.is_finite() || rate <= 0.0 {
        return Err(format!(
            "rate {s:?} must be above zero connections per second, e.g. `2000/s`"
        ));
    }
    Ok(rate)
}

/// Parses `HOST:PORT` as one server address (`bench --target`): a name must resolve to exactly
/// one address, since a benchmark of "the first one the resolver gave" would measure one of
/// several servers without saying which, or a refused one (`localhost` → `::1` while the server
/// listens on 127.0.0.1). Port 0 is refused (nothing can be connected to it).
///
/// # Errors
/// A message for unparsable or unresolvable addresses, port 0, and a name with several
/// addresses (every one listed, with how to pick one).
pub fn parse_target(s: &str) -> Result<std::net::SocketAddr, String> {
    one_target(s, &crate::addr::resolve_targets(s)?.addrs)
}

/// The one address `s` resolved to (`addrs`, non-empty), else the message of [`parse_target`].
fn one_target(s: &str, addrs: &[std::net::SocketAddr]) -> Result<std::net::SocketAddr, String> {
    match addrs {
        [one] => Ok(*one),
        all => {
            let list: Vec<String> = all.iter().map(ToString::to_string).collect();
            Err(format!(
                "target {s:?} resolves to {} addresses ({}): a benchmark measures one server address; give one of them (e.g. --target {}), or use `connstorm load --target {}`, which loads every address and reports each",
                all.len(),
                list.join(", "),
                list[0],
                s.trim()
            ))
        }
    }
}

/// Parses a non-empty CPU list (`0-3,8`).
///
/// # Errors
/// The cpulist parser's message.
pub fn parse_cpus(s: &str) -> Result<Vec<usize>, String> {
    let cpus = crate::cpulist::parse_nonempty(s).map_err(|e| e.to_string())?;
    // The parser merges repeats (as the kernel does for sysfs lists); on the command line a
    // repeated CPU is a typo that would silently run fewer workers than asked.
    let mut named = 0usize;
    for part in s.split(|c: char| c == ',' || c.is_whitespace()) {
        named += crate::cpulist::parse(part)
            .map_err(|e| e.to_string())?
            .len();
    }
    if named != cpus.len() {
        return Err(format!(
            "CPU list {s:?} names a CPU more than once: list each CPU once (one worker per CPU)"
        ));
    }
    Ok(cpus)
}

/// Parses a listen address, `IP:PORT` with a port of 0 to 65535 (0: the kernel picks a free
/// one, bind(2)). No name resolution: a server binds an address of its own.
///
/// # Errors
/// A message with an example when it does not parse (a port above 65535 included).
pub fn parse_listen(s: &str) -> Result<std::net::SocketAddr, String> {
    s.trim().parse().map_err(|_| {
        format!(
            "invalid listen address {s:?}: write IP:PORT with a port from 0 to 65535 (0 picks a \
             free one), e.g. `127.0.0.1:9000`, `0.0.0.0:9000` or `[::]:9000`"
        )
    })
}

/// Parses a listen(2) backlog: 1 to 2147483647 connections (listen(2) takes an int; the kernel
/// caps it at `net.core.somaxconn`, 4096 by default since Linux 5.4).
///
/// # Errors
/// A message for zero, non-numbers and values above `i32::MAX`.
pub fn parse_backlog(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u64>() {
        Ok(v) if (1..=i32::MAX as u64).contains(&v) => Ok(v as u32),
        _ => Err(format!(
            "backlog {s:?} is out of range: give 1 to {} connections per listener (the kernel \
             caps it at net.core.somaxconn anyway, 4096 by default)",
            i32::MAX
        )),
    }
}

/// Parses a byte count of at most `max`: plain bytes (`4096`) or with a binary suffix `K`/`KiB`
/// (1,024) or `M`/`MiB` (1,048,576), e.g. `64K`, `1M`.
///
/// # Errors
/// A message naming the bound for non-numbers, fractions and values above `max`.
pub fn parse_bytes_at_most(s: &str, max: u64) -> Result<u64, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let mul = match unit.trim() {
        "" | "B" => Some(1),
        "K" | "k" | "KiB" => Some(1 << 10),
        "M" | "MiB" => Some(1 << 20),
        _ => None,
    };
    match (num.parse::<u64>(), mul) {
        (Ok(n), Some(m)) if n.checked_mul(m).is_some_and(|v| v <= max) => Ok(n * m),
        _ => Err(format!(
            "{s:?}: give a byte count up to {} ({} bytes), e.g. 4096, 64K or 1M",
            if max >= 1 << 20 && max.is_multiple_of(1 << 20) {
                format!("{} MiB", max >> 20)
            } else {
                format!("{} KiB", max >> 10)
            },
            crate::numfmt::count(max)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_take_binary_suffixes_and_name_the_bound() {
        assert_eq!(parse_bytes_at_most("4096", 1 << 20), Ok(4096));
        assert_eq!(parse_bytes_at_most("64K", 1 << 20), Ok(65_536));
        assert_eq!(parse_bytes_at_most("1M", 1 << 20), Ok(1 << 20));
        assert_eq!(parse_bytes_at_most("0", 1 << 20), Ok(0));
        for bad in [
            "2M",
            "1.5K",
            "-1",
            "lots",
            "1048577",
            "18446744073709551615K",
        ] {
            let e = parse_bytes_at_most(bad, 1 << 20).unwrap_err();
            assert!(e.contains("up to 1 MiB (1,048,576 bytes)"), "{bad}: {e}");
        }
    }

    #[test]
    fn backlog_and_listen_out_of_range_are_refused() {
        assert_eq!(parse_backlog("128"), Ok(128));
        assert_eq!(parse_backlog("2147483647"), Ok(i32::MAX as u32));
        for bad in ["0", "2147483648", "1099511627776", "-1", "lots"] {
            assert!(
                parse_backlog(bad).unwrap_err().contains("1 to 2147483647"),
                "{bad}"
            );
        }
        assert_eq!(parse_listen(" 127.0.0.1:0").unwrap().port(), 0);
        assert!(parse_listen("[::]:9000").unwrap().is_ipv6());
        assert!(parse_listen("127.0.0.1:70000")
            .unwrap_err()
            .contains("0 to 65535"));
        assert!(parse_listen("localhost:9000").is_err(), "no resolution");
    }

    #[test]
    fn rates_in_every_form() {
        assert_eq!(parse_rate("20k/s").unwrap(), 20_000.0);
        assert_eq!(parse_rate("2000/s").unwrap(), 2000.0);
        assert_eq!(parse_rate("2000").unwrap(), 2000.0);
        assert_eq!(parse_rate("1M/min").unwrap(), 1_000_000.0 / 60.0);
        assert_eq!(parse_rate("1000000cpm").unwrap(), 1_000_000.0 / 60.0);
        assert!(parse_rate("0/s").is_err());
        assert!(parse_rate("-5/s").is_err());
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("nan").is_err());
    }

    #[test]
    fn durations_need_units() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("30").unwrap_err().contains("no unit"));
        assert!(parse_duration("abc").is_err());
        assert!(parse_positive_duration("0s").is_err());
        assert!(parse_duration("18446744073709551615s").is_err());
        assert!(parse_duration("31days").unwrap_err().contains("30 days"));
    }

    #[test]
    fn targets_need_a_real_port() {
        assert_eq!(parse_target("127.0.0.1:9000").unwrap().port(), 9000);
        assert!(parse_target("[::1]:0").unwrap_err().contains("port 0"));
        assert!(parse_target("nohost").unwrap_err().contains("HOST:PORT"));
        // A name with several addresses is refused naming each of them, not cut to the first
        // (as `localhost` resolves where /etc/hosts also maps ::1).
        let both: Vec<std::net::SocketAddr> = ["[::1]:9000", "127.0.0.1:9000"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        let e = one_target("localhost:9000", &both).unwrap_err();
        assert!(
            e.contains("resolves to 2 addresses ([::1]:9000, 127.0.0.1:9000)"),
            "{e}"
        );
        assert!(e.contains("connstorm load --target localhost:9000"), "{e}");
        assert_eq!(one_target("x:1", &both[1..]), Ok(both[1]));
    }

    #[test]
    fn cpu_lists_refuse_repeats() {
        assert_eq!(parse_cpus("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_cpus("0,0").unwrap_err().contains("more than once"));
        assert!(parse_cpus("0-3,2").is_err());
        assert!(parse_cpus("").is_err());
        assert!(parse_cpus("0 0").unwrap_err().contains("more than once"));
        assert!(parse_cpus("all,0").unwrap_err().contains("more than once"));
    }
}
