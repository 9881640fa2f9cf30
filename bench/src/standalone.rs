//! `connstorm load` and `connstorm server` on their own (not inside `bench`): what they derive
//! from a finished run besides the library's report, as values for the binary to print or
//! write.
//!
//! - [`load`]: the kernel's view of a load run against a local target (acceptance reconciled,
//!   the accept queue after a settle, the diagnosis), the start-time warnings of a multi-host
//!   run, the ephemeral-port budget warning, the `--format json` report and the `--out` record.
//! - [`server`]: the `server --out` record.
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
