//! `connstorm load` and `connstorm server` on their own (not inside `bench`): what they derive
//! from a finished run besides the library's report, as values for the binary to print or
//! write.
//!
//! - [`load`]: the kernel's view of a load run against a local target (acceptance reconciled,
//!   the accept queue after a settle, the diagnosis), the start-time warnings of a multi-host
//!   run, the ephemeral-port budget warning, the `--format json` report and the `--out` record.
//! - [`server`]: the watch loop of a running server and the `server --out` record.
//! - [`counters`], [`delta_since`]: this network namespace's TCP counters for both.
//!
//! Both records are in the bench schema (roles `load` and `server`), for `report`, `compare`,
//! `plot` and `merge`.

pub mod load;
pub mod server;

use std::time::{SystemTime, UNIX_EPOCH};

/// ms since the epoch (0 before 1970).
fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// This process's network namespace's TCP counters now (`/proc/net/snmp`, `/proc/net/netstat`);
/// `None` when unreadable, after passing `warn` one line saying so and what is then unknown.
pub fn counters(warn: &mut dyn FnMut(&str)) -> Option<tuning::counters::Snapshot> {
    let dir = std::path::Path::new(tuning::counters::DEFAULT_NET_DIR);
    match tuning::counters::Snapshot::read(dir) {
        Ok(s) => Some(s),
        Err(e) => {
            warn(&format!(
                "cannot read the kernel's TCP counters ({e}); the kernel's side of this run is unknown"
            ));
            None
        }
    }
}

/// The counters' change since `before`, by name, for a record's `counters`: empty when there
/// is no `before` or the counters cannot be read now.
pub fn delta_since(
    before: Option<&tuning::counters::Snapshot>,
) -> std::collections::BTreeMap<String, i64> {
    before
        .and_then(|b| Some(counters(&mut |_| {})?.delta(b).to_map()))
        .unwrap_or_default()
}
