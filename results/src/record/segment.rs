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
    /// The whole run's load configuration, before it was narrowed to this segment (the
    /// `config` of the record holds the segment's share: its rate, concurrency and sources):
    /// what `merge` compares to refuse segments of different runs. Absent in records written
    /// before it was kept; `merge` then compares the shares' settings and says it could not
    /// check the planned total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_config: Option<serde_json::Value>,
}

/// Which network namespace a record's kernel counters come from: namespaces are told apart by
/// the inode of `/proc/thread-self/ns/net` (unique among the live namespaces of one boot of one
/// host: nsfs, see namespaces(7)), hosts by their boot id (`/proc/sys/kernel/random/boot_id`,
/// random per boot, not namespaced) or, without it, their host name.
///
/// Generators in one namespace (two processes on one host, pods with `hostNetwork: true` on one
/// node) each hold the whole namespace's counter deltas; `merge` counts each namespace once.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NetnsIdentity {
    /// Inode of the namespace file (`net:[4026531840]` → 4026531840).
    pub inode: u64,
    /// The boot id of the host's kernel; `None` when unreadable.
    pub boot_id: Option<String>,
    /// The host name (UTS namespace's), as [`crate::record::HostInfo::hostname`].
    pub hostname: Option<String>,
}

impl NetnsIdentity {
    /// What tells two namespaces apart: the boot id (else the host name, else `""`) and the inode.
    pub fn key(&self) -> (String, u64) {
        let host = self
            .boot_id
            .clone()
            .or_else(|| self.hostname.clone())
            .unwrap_or_default();
        (host, self.inode)
    }
}
