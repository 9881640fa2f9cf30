//! The report of `connstorm load --format json`: the load report's fields at the top level, with
//! the rate, the port budget, the warnings and, against a local target, the kernel's view.

use std::collections::BTreeMap;

use loadgen::LoadReport;
use results::analysis::Acceptance;
use results::render::AcceptQueueEnd;
use results::render::KernelView;

/// The report as `--format json` prints it.
#[derive(serde::Serialize)]
pub struct JsonReport<'a> {
    /// The wire in words ([`LoadReport::wire`]): protocol and close discipline, e.g. `wire:
    /// HTTP/1.1, server closes after the response (like wrk -H 'Connection: close')`.
    pub wire: String,
    /// `--tls`: the crypto floor of a full handshake and the client's CPU per handshake, as the
    /// record keeps them (`tls.floor` has the floor alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crypto_floor: Option<results::record::CryptoFloor>,
    /// Connections per minute achieved in the measured window; `null` when nothing was measured
    /// (no success in it), never a made-up 0.
    pub cpm: Option<f64>,
    /// The ephemeral-port budget of the run's (source, target) triples, when readable.
    pub port_budget: Option<&'a loadgen::ports::PortBudget>,
    /// The same WARNING lines as the text report (e.g. the generator fell behind its schedule).
    pub warnings: &'a [String],
    /// Every target is a loopback address, so the kernel counters below are the server's too.
    pub targets_local: bool,
    /// Δ of every kernel TCP counter of this namespace over the run (only when `targets_local`).
    pub kernel_counters: Option<&'a BTreeMap<String, i64>>,
    /// Client handshakes vs the server's passive opens (only when `targets_local`; `null` means
    /// server-side acceptance is unknown from here).
    pub acceptance: Option<&'a Acceptance>,
    /// One line per cause found in the counters and the namespace's settings (only when
    /// `targets_local`), in the words `bench` uses.
    pub diagnosis: Option<&'a Vec<String>>,
    /// The listener's accept queue at the end (`ss` Recv-Q, only when `targets_local` and
    /// readable): when the load ended, after the settle, the settle's length, and this run's
    /// connections left there (the failure class `NEVER_ACCEPTED_QUEUED`).
    pub accept_queue: Option<&'a AcceptQueueEnd>,
    /// The load report itself, its fields at the top level.
    #[serde(flatten)]
    pub report: &'a LoadReport,
}

impl<'a> JsonReport<'a> {
    /// The JSON report of `report`, with the kernel's view when the targets are local.
    pub fn new(
        report: &'a LoadReport,
        budget: Option<&'a loadgen::ports::PortBudget>,
        warnings: &'a [String],
        local: bool,
        kernel: Option<&'a KernelView>,
    ) -> Self {
        JsonReport {
            wire: common::wire::value(&report.wire()).to_string(),
            crypto_floor: crate::convert::crypto_floor(report),
            cpm: (report.successes > 0).then(|| report.cpm()),
            port_budget: budget,
            warnings,
            targets_local: local,
            kernel_counters: kernel.map(|k| &k.delta),
            acceptance: kernel.map(|k| &k.acceptance),
            diagnosis: kernel.map(|k| &k.causes),
            accept_queue: kernel.and_then(|k| k.accept_queue.as_ref()),
            report,
        }
    }
}
