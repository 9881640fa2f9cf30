//! TLS on the load side (`--tls`), without sockets: a TLS handshake on every connection after
//! the TCP handshake, with rustls and its `aws-lc-rs` crypto provider, then (with `--http`) the
//! request over it.
//!
//! # Parts
//! - The options and the client configuration they make ([`TlsOptions`], a plain option type of
//!   [`crate::config`]; why `aws-lc-rs` and which key exchange groups are there).
//! - One client per connection over byte buffers (`client::TlsClient`, sans-I/O): the engine
//!   receives into it and sends from it; it says what the bytes amounted to (`TlsEvent`).
//! - A worker's TLS side (`sessions::Sessions`): its own client configuration, so its
//!   resumption cache (`--tls-resume`) is its own and no lock is shared between workers (the
//!   cache's own mutex is taken only by its worker, `store`), one client per slot, counters.
//! - The results ([`TlsReport`]).
//! - The crypto floor of a full handshake, measured in-process ([`floor`]).
//!
//! # Per connection
//! Each slot holds a [`rustls::ClientConnection`] while its connection lives; beyond what rustls
//! allocates for a connection nothing is allocated per connection (the slot's buffers are kept).
//!
//! # What is measured
//! The TLS handshake latency (TCP handshake seen complete → TLS handshake done, i.e. the client
//! has the server's Finished), full vs resumed handshakes (rustls `handshake_kind()`), and
//! failures by alert (`TLS alert CertificateUnknown sent` when this client refused the
//! certificate) or cause ([`crate::failures::ProtoFailures`]). Without `--http` an attempt
//! succeeds when its TLS handshake is done; the client then sends close_notify and reads until
//! the server closes (so TLS 1.3 session tickets, sent after the handshake, are read for
//! resumption).

mod client;
pub mod floor;
mod report;
mod sessions;
mod store;

pub use crate::config::{
    cipher_suites, group_name, kx_groups, offers_session, suite_name, Resume, TlsOptions,
    TlsVersion, Verify, SYSTEM_CA_BUNDLE,
};
pub use crate::failures::alert_name;
pub(crate) use client::{TlsClient, TlsEvent, INPUT_BYTES};
pub use report::TlsReport;
pub(crate) use sessions::{failure_of, Sessions};
