//! Which side wrote a record ([`Role`]) and which share of a multi-host run it covers
//! ([`SegmentInfo`]).

use serde::{Deserialize, Serialize};

/// The side of a run a record describes. Absent in records written before multi-host runs, which
/// all came from `bench` (hence the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Server and load in one run (`bench`, `sweep`, `ab`): both sides' sections are filled.
    #[default]
    Bench,
    /// One load generator (`load --out`): the load side, its own namespace's counters; no server.
    Load,
    /// One accept server (`server --out`): accepts per worker and the server namespace's counters.
    Server,
    /// Several load (and server) records joined by `connstorm merge`.
    Merged,
}

impl Role {
    /// True for [`Role::Bench`] (the serializer leaves the default out, so bench records stay as
    /// they were).
    pub fn is_bench(&self) -> bool {
        *self == Role::Bench
    }

    /// The lower-case name: `bench`, `load`, `server`, `merged`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Bench => "bench",
            Role::Load => "load",
            Role::Server => "server",
            Role::Merged => "merged",
        }
    }
}

/// The share of a multi-host run one load record covers (`load --segment i/N --start-at T`).
///
/// Segments are 0-based like Kubernetes' `JOB_COMPLETION_INDEX`: a run of `count` generators has
/// segments `0..count`, each once.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SegmentInfo {
    /// This generator's segment, `0..count`.
    pub index: u32,
    /// How many generators share the run.
    pub count: u32,
    /// When the schedule was planned to start (`--start-at`), ms since the Unix epoch; `None`
    /// without `--start-at` (the generator started when it was ready).
    pub planned_start_unix_ms: Option<u64>,
    /// When the schedule (warm-up included) really started, ms since the Unix epoch: the
    /// monotonic start instant converted with the wall clock read at the same moment.
    pub real_start_unix_ms: u64,
    /// The host clock's synchronisation as read at the start: `"synchronized"`,
    /// `"unsynchronized"` or `"unknown"` (neither `timedatectl` nor `chronyc` answered).
    pub clock_sync: String,
    /// The clock's offset from its time source, ms (chrony's "System time"; positive = fast);
    /// `None` when not readable.
    pub clock_offset_ms: Option<f64>,
    /// Where the sync state came from: `"chronyc tracking"`, `"timedatectl show"` or `""`.
    pub clock_source: String,
}
