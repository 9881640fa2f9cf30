//! Where `connstorm sweep` puts the server and the load, and why, so that the server — not the
//! generator — reaches its limit first where the CPUs allow (issue 37: on loopback the load side
//! does the handshake's softirq work of both ends, so a load with as many CPUs as the server
//! limits every step).
//!
//! - Before the probe ([`initial`]): the split `bench` makes (the first third of the CPUs serve,
//!   the rest load: more load CPUs than server CPUs from 3 CPUs up), or the lists given; a
//!   load with no more CPUs than the server is said.
//! - After a probe the load side limited ([`after_probe`]), when the CPUs were not given: the
//!   probe's CPU per connection on each side says how many CPUs the load needs per server CPU;
//!   if a split exists where the load has [`LOAD_HEADROOM`] times the server's capacity, the
//!   sweep moves to it and probes again before stepping.
//!
//! What was chosen and why is stored in the record's `config.placement` and printed first.

use std::net::SocketAddr;

use results::analysis::side_busy_pct;
use results::record::PhaseRecord;

use crate::setup::Setup;

/// Capacity the load needs beyond the server's (connections/s its CPUs can make over those the
/// server's can accept, from each side's CPU per connection) before the server is called the
/// limit: 1.25.
pub const LOAD_HEADROOM: f64 = 1.25;

/// How the CPUs were chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Given {
    /// `--server-cpus` or `--load-cpus` was given (the split is the user's: never moved).
    pub lists: bool,
    /// `--whole-machine`.
    pub whole_machine: bool,
}

/// Where server and load run, and how that was chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct Cpus {
    /// Server CPUs.
    pub server: Vec<usize>,
    /// Load CPUs.
    pub load: Vec<usize>,
    /// `--target`: the server is not ours.
    pub target: Option<SocketAddr>,
    /// How the lists were chosen.
    pub given: Given,
}

impl Cpus {
    /// The CPUs of `setup`, chosen as `given` says.
    pub fn of(setup: &Setup, given: Given) -> Cpus {
        Cpus {
            server: setup.server_cpus.clone(),
            load: setup.load_cpus.clone(),
            target: setup.target,
            given,
        }
    }
}

fn list(cpus: &[usize]) -> String {
    common::cpulist::format(cpus)
}

/// The placement as it starts, in words (`server CPUs [0], load CPUs [1-3]: …`).
pub fn initial(cpus: &Cpus) -> String {
    let (s, l, given) = (&cpus.server, &cpus.load, cpus.given);
    if let Some(t) = cpus.target {
        return format!(
            "load CPUs [{}] against {t} (the server is not ours: its CPUs are unknown); steps the generator limits are flagged",
            list(l)
        );
    }
    if given.whole_machine {
        return format!(
            "whole machine: a server and a load worker on each of CPUs [{}]; steps the generator limits are flagged",
            list(s)
        );
    }
    let shared: Vec<usize> = l.iter().copied().filter(|c| s.contains(c)).collect();
    let head = format!(
        "server CPUs [{}], load CPUs [{}]{}",
        list(s),
        list(l),
        if given.lists { " as given" } else { "" }
    );
    if !shared.is_empty() {
        return format!(
            "{head}: the load shares CPUs [{}] with the server, so the generator may reach its limit first; steps it limits are flagged, and no knee is declared from them",
            list(&shared)
        );
    }
    if l.len() > s.len() {
        return format!(
            "{head}: {} load CPUs for {} server CPU{}, so the server, not the generator, should reach its limit first",
            l.len(),
            s.len(),
            if s.len() == 1 { "" } else { "s" }
        );
    }
    let why = if given.lists {
        "give --load-cpus more CPUs than --server-cpus"
    } else {
        "the CPUs do not allow more load CPUs than server CPUs here"
    };
    format!(
        "{head}: the load has no more CPUs than the server ({why}); on loopback the load side also does the handshake's kernel work, so the generator may reach its limit first: steps it limits are flagged, and no knee is declared from them"
    )
}

/// A move after the probe: the new CPUs and the note that says why.
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    /// New server CPUs.
    pub server: Vec<usize>,
    /// New load CPUs.
    pub load: Vec<usize>,
    /// Why, for `config.placement`.
    pub note: String,
}

/// The number of server CPUs out of `n` that leaves the load [`LOAD_HEADROOM`] times the
/// server's capacity, given each side's CPU µs per connection: the largest `s` with
/// `(n − s) / load_us ≥ LOAD_HEADROOM × s / server_us`; `None` when even one server CPU is too
/// many (the CPUs do not allow it).
pub fn server_share(n: usize, server_us: f64, load_us: f64) -> Option<usize> {
    if !(server_us > 0.0 && load_us > 0.0) || n < 2 {
        return None;
    }
    let s = (n as f64 * server_us / (server_us + LOAD_HEADROOM * load_us)).floor() as usize;
    (s >= 1).then_some(s.min(n - 1))
}

/// After a probe on `cpus` (`probe`, its closed-loop phase): when the CPUs were not given, the
/// load side limited the probe (its CPU at least [`results::analysis::SATURATED_PCT`] and above
/// the server's), and [`server_share`] of the same CPUs gives the server fewer CPUs, the move to
/// that split; else `None` and, when the load limited the probe, the note that says why it
/// stays.
pub fn after_probe(cpus: &Cpus, probe: &PhaseRecord) -> (Option<Move>, Option<String>) {
    let given = cpus.given;
    if given.lists || given.whole_machine || cpus.target.is_some() {
        return (None, None);
    }
    let busy =
        |c: &results::record::SideCpu| (c.wall_ns > 0 && c.cpus > 0).then(|| side_busy_pct(c));
    let (Some(load), Some(server)) = (
        busy(&probe.cpu.load),
        probe.cpu.server.as_ref().and_then(busy),
    ) else {
        return (None, None);
    };
    if load < results::analysis::SATURATED_PCT || load < server {
        return (None, None);
    }
    let (Some(load_us), Some(server_us)) = (
        probe.cpu.load.us_per_conn(),
        probe.cpu.server.as_ref().and_then(|c| c.us_per_conn()),
    ) else {
        return (None, None);
    };
    let mut all: Vec<usize> = cpus.server.iter().chain(&cpus.load).copied().collect();
    all.sort_unstable();
    all.dedup();
    let probed = format!(
        "the probe on server CPUs [{}], load CPUs [{}] was load-limited (load CPU {load:.0}%, server {server:.0}%; CPU per connection: load {load_us:.1} µs, server {server_us:.1} µs, so the load needs {:.1}× the server's CPUs)",
        list(&cpus.server),
        list(&cpus.load),
        load_us / server_us
    );
    match server_share(all.len(), server_us, load_us) {
        Some(s) if s < cpus.server.len() => {
            let (server, load) = (all[..s].to_vec(), all[s..].to_vec());
            let note = format!(
                "server CPUs [{}], load CPUs [{}], chosen because {probed}: {} load CPUs for {s} server CPU{}, so the server should reach its limit first; probed again there",
                list(&server),
                list(&load),
                load.len(),
                if s == 1 { "" } else { "s" }
            );
            (Some(Move { server, load, note }), None)
        }
        _ => (
            None,
            Some(format!(
                "{}; {probed}, and {} CPUs allow no split that gives the load more: steps the generator limits are flagged, and no knee is declared from them",
                initial(cpus).split(':').next().unwrap_or_default(),
                all.len()
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On loopback the load side spent 17.0 µs per connection and the server 6.2 µs (the
    /// README's sample of build 081e122, a 2-vCPU run): the load needs 2.7× the server's CPUs,
    /// so of 8 CPUs 1 serves (7 load: 7/17 ≥ 1.25 × 1/6.2), of 16 CPUs 3, and 2 CPUs allow none.
    #[test]
    fn the_server_gets_the_cpus_the_load_leaves_it() {
        assert_eq!(server_share(8, 6.2, 17.0), Some(1));
        assert_eq!(server_share(16, 6.2, 17.0), Some(3));
        assert_eq!(server_share(2, 6.2, 17.0), None);
        // A heavier server (HTTP) keeps more of them.
        assert_eq!(server_share(8, 20.0, 17.0), Some(3));
        assert_eq!(server_share(8, 0.0, 17.0), None);
    }

    fn cpus(server: &[usize], load: &[usize], lists: bool) -> Cpus {
        Cpus {
            server: server.to_vec(),
            load: load.to_vec(),
            target: None,
            given: Given {
                lists,
                whole_machine: false,
            },
        }
    }

    fn probe(load_pct: f64, server_pct: f64, load_us: f64, server_us: f64) -> PhaseRecord {
        let conns = 100_000u64;
        let side = |pct: f64, us: f64| {
            let mut c = results::record::SideCpu::new(0, 0, 1_000_000_000, 1, conns)
                .with_run_ns((pct / 100.0 * 1e9) as u64, conns);
            c.us_per_conn_run = Some(us);
            c
        };
        let mut p = PhaseRecord::default();
        p.cpu.load = side(load_pct, load_us);
        p.cpu.server = Some(side(server_pct, server_us));
        p
    }

    #[test]
    fn a_load_limited_probe_moves_cpus_to_the_load_where_they_allow() {
        // 9 CPUs, 3 serving: the load (17.0 µs a connection) needs 2.7× the server's (6.2 µs)
        // CPUs, so 2 serve and 7 load (7/17 ≥ 1.25 × 2/6.2; 3 would leave 6/17 < 1.25 × 3/6.2).
        let s = cpus(&[0, 1, 2], &[3, 4, 5, 6, 7, 8], false);
        let (m, note) = after_probe(&s, &probe(98.0, 50.0, 17.0, 6.2));
        let m = m.expect("a move");
        assert_eq!((m.server, m.load), (vec![0, 1], vec![2, 3, 4, 5, 6, 7, 8]));
        assert!(
            m.note.contains("load CPU 98%, server 50%")
                && m.note.contains("2.7×")
                && m.note.contains("7 load CPUs for 2 server CPUs"),
            "{}",
            m.note
        );
        assert_eq!(note, None);
        // Not load-limited, or the CPUs given: nothing moves.
        assert_eq!(after_probe(&s, &probe(60.0, 97.0, 17.0, 6.2)), (None, None));
        let given = cpus(&[0, 1, 2], &[3, 4, 5, 6, 7, 8], true);
        assert_eq!(
            after_probe(&given, &probe(98.0, 50.0, 17.0, 6.2)),
            (None, None)
        );
        // Two CPUs: no split helps, and the note says so.
        let two = cpus(&[0], &[1], false);
        let (m, note) = after_probe(&two, &probe(98.0, 50.0, 17.0, 6.2));
        assert_eq!(m, None);
        let note = note.unwrap();
        assert!(note.contains("2 CPUs allow no split"), "{note}");
    }

    #[test]
    fn the_initial_placement_says_whether_the_load_has_more_cpus() {
        let t = initial(&cpus(&[0], &[1, 2, 3], false));
        assert!(
            t.starts_with("server CPUs [0], load CPUs [1-3]: 3 load CPUs for 1 server CPU"),
            "{t}"
        );
        let t = initial(&cpus(&[0], &[1], false));
        assert!(
            t.contains("the CPUs do not allow more load CPUs than server CPUs here"),
            "{t}"
        );
        let t = initial(&cpus(&[0, 1], &[1], true));
        assert!(
            t.starts_with("server CPUs [0-1], load CPUs [1] as given: the load shares CPUs [1] with the server"),
            "{t}"
        );
    }
}
