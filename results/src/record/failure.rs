//! The failure classes only a record has: handshakes the client completed that the server never
//! accepted (the other classes are errno names, `HTTP …` and `TLS …`, as the load generator
//! counted them), and the sums over a failure table that the record's own checks use.

use std::collections::BTreeMap;

/// The failure class of handshakes the client completed (connect() returned 0) but the server
/// never accepted: reset after the handshake (tcp_abort_on_overflow=1), or the final ACK dropped
/// at a full accept queue and the client gone before a retransmit got in.
pub const NEVER_ACCEPTED: &str = "never accepted";

/// The failure class of handshakes the server's kernel completed and queued that were still in
/// the listener's accept queue when the run ended, after the server was given time to take them
/// (`load` against a local target reads the queue): never accept()ed by the server application.
pub const NEVER_ACCEPTED_QUEUED: &str = "never accepted: in the listener's accept queue at the end";

/// Handshakes the client completed that the server never accepted, over both classes
/// ([`NEVER_ACCEPTED`] and [`NEVER_ACCEPTED_QUEUED`]) of a failure table: each has its sample in
/// the handshake histogram, as each success has.
pub fn never_accepted_total(failures: &BTreeMap<String, u64>) -> u64 {
    [NEVER_ACCEPTED, NEVER_ACCEPTED_QUEUED]
        .iter()
        .filter_map(|c| failures.get(*c))
        .sum()
}

/// Failed attempts whose TCP handshake had completed: the HTTP exchange or the TLS handshake
/// after it failed (the load's classes named `HTTP …` and `TLS …`; each such attempt has its
/// TCP handshake in the handshake histogram, as the server's kernel has it in PassiveOpens).
pub fn after_handshake_failures(failures: &BTreeMap<String, u64>) -> u64 {
    failures
        .iter()
        .filter(|(k, _)| k.starts_with("HTTP ") || k.starts_with("TLS "))
        .map(|(_, v)| v)
        .sum()
}
