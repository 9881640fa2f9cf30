//! The accept-queue wait's shared vocabulary: what the server and the load generator of one
//! process (`connstorm bench`) each record so that the wait of a connection in the listener's
//! accept queue can be measured after the phase, without a write shared by the two sides.
//!
//! - [`conn_key`]: the key a connection is known by on both sides, the client's address and
//!   port (the server's peer, the client's local name): with one destination per run, the
//!   4-tuple's variable half.
//! - [`keeps`]: the rule that keeps 1 key in N when the server cannot stamp every accept within
//!   its memory bound (the client applies the same rule to its samples, so both keep the same
//!   connections).
//! - [`Stamps`]: one side's preallocated buffer of `(key, CLOCK_MONOTONIC ns)` stamps; a push
//!   never allocates and a full buffer counts what it could not keep.
//!
//! - [`join`]: after the phase, each server stamp (accept) with its client stamp (handshake
//!   completion): the waits ([`Joined`]).

use std::net::{IpAddr, SocketAddr};

/// One stamp: a connection's key ([`conn_key`]) and a CLOCK_MONOTONIC time, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Stamp {
    /// The connection's key ([`conn_key`]).
    pub key: u64,
    /// When, CLOCK_MONOTONIC ns.
    pub t_ns: u64,
}

/// Bytes one [`Stamp`] takes in a buffer (16).
pub const STAMP_BYTES: usize = std::mem::size_of::<Stamp>();

/// The key of a connection from its client's address and port (`addr`): an IPv4 address and
/// port exactly (`addr << 16 | port`); an IPv6 address folded to 47 bits beside its port, with
/// the top bit set (two IPv6 clients of one run whose folds collide share keys; loopback runs
/// have one client address). `None` for port 0: the socket was not (or no longer) bound, so it
/// names no connection.
pub fn conn_key(addr: &SocketAddr) -> Option<u64> {
    let port = addr.port();
    if port == 0 {
        return None;
    }
    let ip = match addr.ip() {
        IpAddr::V4(v4) => u64::from(u32::from(v4)),
        // An IPv4-mapped address is the IPv4 client (a dual-stack listener sees it so).
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => u64::from(u32::from(v4)),
            None => {
                let bits = u128::from(v6);
                let folded = mix((bits >> 64) as u64 ^ mix(bits as u64));
                (1 << 47) | (folded & ((1 << 47) - 1))
            }
        },
    };
    Some(ip << 16 | u64::from(port))
}

/// Whether the rule "1 key in `every`" keeps `key`: a hash of the key modulo `every` is 0
/// (`every` ≤ 1 keeps all). Both sides apply it to the same key, so they keep the same
/// connections.
#[inline]
pub fn keeps(key: u64, every: u32) -> bool {
    every <= 1 || mix(key).is_multiple_of(u64::from(every))
}

/// A 64-bit finalizer (SplitMix64's): spreads keys that differ in a few low bits (consecutive
/// ports) over all bits.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One side's stamps of a phase: a buffer allocated once (its capacity is the memory bound),
/// the key rule it applies ([`keeps`]), and what it could not keep.
#[derive(Debug, Clone, Default)]
pub struct Stamps {
    stamps: Vec<Stamp>,
    every: u32,
    /// Stamps not kept because the buffer was full.
    pub full: u64,
    /// Connections whose key could not be read (the socket had no address any more, or the
    /// read failed).
    pub no_key: u64,
    /// Per buffer merged in ([`Stamps::append`], in order): the CPU the allocating thread was
    /// pinned to when it allocated it ([`crate::numa::pinned_cpu`]; `None`: not pinned). Each
    /// worker allocates its own on its pinned thread, so the pages are on its CPU's node.
    pub alloc_cpus: Vec<Option<usize>>,
}

impl Stamps {
    /// A buffer of `capacity` stamps (reserved now; pages are committed as they are written)
    /// keeping 1 key in `every` ([`keeps`]). Call it on the worker thread that writes it, after
    /// it pinned itself: the allocation's CPU is kept in [`Stamps::alloc_cpus`].
    pub fn with_capacity(capacity: usize, every: u32) -> Stamps {
        Stamps {
            stamps: Vec::with_capacity(capacity),
            every: every.max(1),
            full: 0,
            no_key: 0,
            alloc_cpus: vec![crate::numa::pinned_cpu()],
        }
    }

    /// The key rule: 1 key in this many.
    pub fn every(&self) -> u32 {
        self.every
    }

    /// Whether the key rule keeps `key`.
    #[inline]
    pub fn keeps(&self, key: u64) -> bool {
        keeps(key, self.every)
    }

    /// Records `key` at `t_ns` when the key rule keeps it and there is room (else counts it in
    /// [`Stamps::full`]); never allocates. True when recorded.
    #[inline]
    pub fn push(&mut self, key: u64, t_ns: u64) -> bool {
        if !self.keeps(key) {
            return false;
        }
        if self.stamps.len() == self.stamps.capacity() {
            self.full += 1;
            return false;
        }
        self.stamps.push(Stamp { key, t_ns });
        true
    }

    /// Records the connection of `addr` at `t_ns` ([`Stamps::push`]); an address without a
    /// port is counted in [`Stamps::no_key`].
    #[inline]
    pub fn push_addr(&mut self, addr: &SocketAddr, t_ns: u64) -> bool {
        match conn_key(addr) {
            Some(key) => self.push(key, t_ns),
            None => {
                self.no_key += 1;
                false
            }
        }
    }

    /// The stamps recorded.
    pub fn stamps(&self) -> &[Stamp] {
        &self.stamps
    }

    /// Stamps recorded.
    pub fn len(&self) -> usize {
        self.stamps.len()
    }

    /// No stamp recorded.
    pub fn is_empty(&self) -> bool {
        self.stamps.is_empty()
    }

    /// Adds another side's worker's stamps and counts to these (after the phase; allocates).
    pub fn append(&mut self, mut other: Stamps) {
        self.stamps.append(&mut other.stamps);
        self.full += other.full;
        self.no_key += other.no_key;
        self.alloc_cpus.append(&mut other.alloc_cpus);
    }

    /// The stamps, taken out.
    pub fn into_stamps(self) -> Vec<Stamp> {
        self.stamps
    }
}

/// The two sides' stamps of one phase, joined ([`join`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Joined {
    /// Each joined connection's wait, ns: the server's accept time − the client's handshake
    /// completion time, 0 where the server's came first ([`Joined::accepted_first`]).
    pub waits_ns: Vec<u64>,
    /// Joined connections whose accept the server saw before the client saw its handshake
    /// complete (the client's event loop noticed later than the server's): their wait is 0.
    pub accepted_first: u64,
    /// Client stamps of keys whose count differs between the sides (a side's buffer was full,
    /// a connection the server never accepted, one accepted outside the stamped span): left out.
    pub unmatched_client: u64,
    /// Server stamps of such keys: left out.
    pub unmatched_server: u64,
    /// Joined connections whose client stamp is before the window asked for (warm-up): left
    /// out.
    pub before_window: u64,
}

/// Joins client stamps (`client`: handshake completion) with server stamps (`server`: accept)
/// by key: within a key, the k-th client stamp in time order is the k-th server stamp's
/// connection (a port is reused only after its connection ended, so one key's connections
/// follow each other). A key with a different count on the two sides joins nothing (which of
/// its connections is missing cannot be told) and is counted in `unmatched_*`. A joined
/// connection whose client stamp is before `from_ns` is left out (counted in `before_window`).
/// Sorts both.
pub fn join(client: &mut [Stamp], server: &mut [Stamp], from_ns: u64) -> Joined {
    client.sort_unstable();
    server.sort_unstable();
    let mut out = Joined {
        waits_ns: Vec::with_capacity(client.len().min(server.len())),
        ..Joined::default()
    };
    let (mut i, mut j) = (0, 0);
    while i < client.len() || j < server.len() {
        let key = match (client.get(i), server.get(j)) {
            (Some(c), Some(s)) => c.key.min(s.key),
            (Some(c), None) => c.key,
            (None, Some(s)) => s.key,
            (None, None) => break,
        };
        let ci = client[i..].iter().take_while(|s| s.key == key).count();
        let sj = server[j..].iter().take_while(|s| s.key == key).count();
        if ci == sj {
            for (c, s) in client[i..i + ci].iter().zip(&server[j..j + sj]) {
                if c.t_ns < from_ns {
                    out.before_window += 1;
                    continue;
                }
                if s.t_ns < c.t_ns {
                    out.accepted_first += 1;
                }
                out.waits_ns.push(s.t_ns.saturating_sub(c.t_ns));
            }
        } else {
            out.unmatched_client += ci as u64;
            out.unmatched_server += sj as u64;
        }
        i += ci;
        j += sj;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_client_address_and_port() {
        let a: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        let c: SocketAddr = "127.0.0.2:40000".parse().unwrap();
        let keys = [a, b, c].map(|x| conn_key(&x).unwrap());
        assert_eq!(keys[0], (0x7f00_0001 << 16) | 40000);
        assert_ne!(keys[0], keys[1]);
        assert_ne!(keys[0], keys[2]);
        // A dual-stack listener's view of the same IPv4 client is the same key.
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:40000".parse().unwrap();
        assert_eq!(conn_key(&mapped), Some(keys[0]));
        let v6: SocketAddr = "[::1]:40000".parse().unwrap();
        let k6 = conn_key(&v6).unwrap();
        assert_eq!(k6 >> 63, 1);
        assert_eq!(k6 & 0xffff, 40000);
        assert_eq!(conn_key(&"127.0.0.1:0".parse().unwrap()), None);
    }

    /// The key rule keeps about 1 in N, and the same keys on both sides.
    #[test]
    fn the_key_rule_keeps_one_in_n_the_same_on_both_sides() {
        let kept = (1024..60_000u64)
            .filter(|&p| keeps((0x7f00_0001 << 16) | p, 8))
            .count();
        let share = kept as f64 / (60_000 - 1024) as f64;
        assert!((share - 0.125).abs() < 0.01, "{share}");
        assert!((0..1000).all(|k| keeps(k, 1) && keeps(k, 0)));
    }

    #[test]
    fn a_full_buffer_counts_and_never_grows() {
        let mut s = Stamps::with_capacity(2, 1);
        assert!(s.push(1, 10));
        assert!(s.push(2, 20));
        assert!(!s.push(3, 30));
        assert_eq!((s.len(), s.full), (2, 1));
        assert_eq!(s.stamps.capacity(), 2);
        assert!(!s.push_addr(&"127.0.0.1:0".parse().unwrap(), 40));
        assert_eq!(s.no_key, 1);
    }

    fn st(key: u64, t_ns: u64) -> Stamp {
        Stamp { key, t_ns }
    }

    /// Each accept is joined with its own client's completion, a reused key's connections in
    /// order; keys whose counts differ join nothing and are counted.
    #[test]
    fn join_pairs_each_accept_with_its_own_client() {
        let mut client = vec![
            st(7, 1_000),
            st(5, 100),
            st(7, 5_000),
            st(9, 50),
            st(11, 10),
        ];
        let mut server = vec![st(5, 400), st(7, 5_700), st(7, 1_200), st(8, 1), st(11, 8)];
        let j = join(&mut client.clone(), &mut server.clone(), 0);
        // 5: 300; 7: 200 then 700; 11: accepted 2 ns before the client saw it (wait 0).
        let mut waits = j.waits_ns.clone();
        waits.sort_unstable();
        assert_eq!(waits, vec![0, 200, 300, 700]);
        assert_eq!(j.accepted_first, 1);
        assert_eq!((j.unmatched_client, j.unmatched_server), (1, 1), "9 and 8");
        // From 1,000 ns: 5 (client at 100) and 11 (at 10) are warm-up.
        let j = join(&mut client, &mut server, 1_000);
        assert_eq!(j.waits_ns, vec![200, 700]);
        assert_eq!((j.before_window, j.accepted_first), (2, 0));
        // A key seen twice by the client and once by the server joins nothing.
        let mut client = vec![st(3, 10), st(3, 20)];
        let mut server = vec![st(3, 25)];
        let j = join(&mut client, &mut server, 0);
        assert!(j.waits_ns.is_empty());
        assert_eq!((j.unmatched_client, j.unmatched_server), (2, 1));
    }
}
