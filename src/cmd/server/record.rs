//! `server --out DIR`: the server's run as a record in the bench schema (role `server`),
//! [`::bench::standalone::server_record`] with this binary's build.

use std::collections::BTreeMap;
use std::time::SystemTime;

use results::record::RunRecord;
use server::ServerReport;

/// Builds the server record ([`::bench::standalone::server_record`]); `started`: when the
/// listeners listened; `counters`: Δ of the namespace's counters over the run.
pub fn server_record(
    report: &ServerReport,
    started: SystemTime,
    counters: BTreeMap<String, i64>,
) -> RunRecord {
    let mut r =
        ::bench::standalone::server_record(report, started, counters, &crate::bench::record::BUILD);
    r.build = crate::version::build_info();
    r
}
