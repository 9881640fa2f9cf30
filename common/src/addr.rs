//! Addresses on the command line: a `--target HOST:PORT` resolved to **every** address its name
//! has ([`resolve_targets`]), and `--source` addresses and inclusive ranges
//! ([`parse_sources`]). The messages say what to write instead.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Largest number of addresses one source range may name.
pub const MAX_SOURCES: u128 = 65_536;

/// One target resolved: every address, in the resolver's order without repeats, and the host
/// name when it was given as a name (`localhost:9000` → `localhost`; `[::1]:9000` and
/// `127.0.0.1:9000` → `None`), the default TLS server name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Every address, first as the resolver returned it; never empty.
    pub addrs: Vec<SocketAddr>,
    /// The host part when it is a name.
    pub name: Option<String>,
}

/// Resolves one `HOST:PORT` to every address it has (getaddrinfo(3) through the std resolver, so
/// /etc/hosts and nsswitch apply).
///
/// # Errors
/// A message for an unparsable or unresolvable target, one that resolves to nothing, and port 0.
pub fn resolve_targets(s: &str) -> Result<Resolved, String> {
    use std::net::ToSocketAddrs;
    let mut addrs: Vec<SocketAddr> = s
        .trim()
        .to_socket_addrs()
        .map_err(|e| {
            format!(
                "invalid target {s:?} ({e}): write HOST:PORT, e.g. `127.0.0.1:9000`, `[::1]:9000` or `localhost:9000`"
            )
        })?
        .collect();
    let mut seen = std::collections::HashSet::new();
    addrs.retain(|a| seen.insert(*a));
    let Some(first) = addrs.first() else {
        return Err(format!(
            "target {s:?} resolves to no address: give HOST:PORT of the server"
        ));
    };
    if first.port() == 0 {
        return Err(format!(
            "target {s:?} has port 0, which nothing listens on: give the server's port"
        ));
    }
    let host = s.trim().rsplit_once(':').map(|(h, _)| h).unwrap_or("");
    let name = (!host.is_empty() && !host.starts_with('[') && host.parse::<IpAddr>().is_err())
        .then(|| host.to_string());
    Ok(Resolved { addrs, name })
}

/// Parses one source item: an address, or an inclusive range `A-B` of one family of at most
/// [`MAX_SOURCES`] addresses (`127.0.0.2-127.0.0.250`), expanded in ascending order.
///
/// # Errors
/// A message for an unparsable address, a range mixing IPv4 and IPv6, one that ends before it
/// starts, or one too large.
pub fn parse_sources(s: &str) -> Result<Vec<IpAddr>, String> {
    let s = s.trim();
    let ip = |t: &str| -> Result<IpAddr, String> {
        t.trim().parse().map_err(|_| {
            format!("invalid source address {t:?}: write an IP address or a range like `127.0.0.2-127.0.0.250`")
        })
    };
    let Some((a, b)) = s.split_once('-') else {
        return Ok(vec![ip(s)?]);
    };
    let (a, b) = (ip(a)?, ip(b)?);
    let (lo, hi, v4) = match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            (u128::from(u32::from(a)), u128::from(u32::from(b)), true)
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), false),
        _ => return Err(format!("source range {s:?} mixes IPv4 and IPv6")),
    };
    if hi < lo {
        return Err(format!(
            "source range {s:?} ends before it starts: write low-high"
        ));
    }
    if hi - lo >= MAX_SOURCES {
        return Err(format!(
            "source range {s:?} names more than {MAX_SOURCES} addresses"
        ));
    }
    Ok((lo..=hi)
        .map(|v| {
            if v4 {
                IpAddr::from(Ipv4Addr::from(v as u32))
            } else {
                IpAddr::from(Ipv6Addr::from(v))
            }
        })
        .collect())
}

/// Whether connecting to `ip` stays on this host, in this network namespace: a loopback address
/// (127.0.0.0/8, ::1, or IPv4-mapped loopback `::ffff:127.x.y.z`), or the unspecified address
/// (connect(2) to 0.0.0.0 or :: reaches the local host; ip(7)).
pub fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_unspecified(),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_ranges_expand_and_bad_ones_are_refused() {
        let v = parse_sources("127.0.0.2-127.0.0.5").unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v[3], "127.0.0.5".parse::<IpAddr>().unwrap());
        assert_eq!(parse_sources("::1").unwrap().len(), 1);
        assert!(parse_sources("127.0.0.5-127.0.0.2").is_err());
        assert!(parse_sources("127.0.0.1-::1").is_err());
        assert!(parse_sources("10.0.0.0-10.255.255.255").is_err());
        assert!(parse_sources("nope").is_err());
    }

    #[test]
    fn a_target_keeps_its_name_only_when_it_is_a_name() {
        let ip = resolve_targets("127.0.0.1:9000").unwrap();
        assert_eq!(ip.addrs, vec!["127.0.0.1:9000".parse().unwrap()]);
        assert_eq!(ip.name, None);
        assert_eq!(resolve_targets("[::1]:9000").unwrap().name, None);
        let e = resolve_targets("127.0.0.1:0").unwrap_err();
        assert!(e.contains("port 0"), "{e}");
        assert!(resolve_targets("127.0.0.1").is_err());
    }

    #[test]
    fn local_addresses_are_loopback_unspecified_and_mapped_loopback() {
        for a in ["127.0.0.9", "0.0.0.0", "::1", "::", "::ffff:127.0.0.1"] {
            assert!(is_local(a.parse().unwrap()), "{a}");
        }
        for a in ["10.0.0.1", "::ffff:10.0.0.1", "2001:db8::1"] {
            assert!(!is_local(a.parse().unwrap()), "{a}");
        }
    }
}
