//! The run record schema: one versioned JSON document per run, written atomically, and what
//! a record is as data — its types and their serde form, the schema version and the upgrade of
//! older ones, the stored histogram and timestamp encodings, the failure classes, and the checks
//! that refuse a record contradicting itself. This folder imports nothing of the analysis or the
//! rendering: they read records, a record knows nothing of them.
//!
//! Shape (fields and units in `docs/record-schema.md`):
//! ```text
//! RunRecord { schema_version, label, config, run: RunInfo, host: HostInfo,
//!             phases: [PhaseRecord { pattern, rates, counts, failures, histograms,
//!                                    timeline, server, load_workers, cpu, counters,
//!                                    cross_check }],
//!             baseline, warnings, role, segment, build: BuildInfo, counters_netns,
//!             scale, profile_overhead }
//! ```
//! `role` says which side wrote it ([`Role`]: bench, load, server, merged); `segment` which share
//! of a multi-host run a load record covers ([`SegmentInfo`]).
//! The binary fills the plain pub fields (from `ServerReport`, `LoadReport`, host facts) and
//! calls [`RunRecord::write_atomic`]; readers call [`RunRecord::read`], which checks the schema
//! version and that every histogram decodes, and names the file in every error.
//!
//! Files: `file` (reading, writing, versioning and the checks of a whole record), `phase`
//! ([`PhaseRecord`] and its parts), `run` ([`RunInfo`], [`HostInfo`]), `baseline` (the kernel
//! floor and its paired slices as stored), `segment` ([`Role`], [`SegmentInfo`],
//! [`NetnsIdentity`]), `build` ([`BuildInfo`]), `counter` (kernel counter names and meanings),
//! `failure` (the failure classes only a record has), `profile` ([`KernelProfile`]: a phase's
//! kernel profile; [`ProfileOverhead`]: its paired cost), `scale` ([`ScaleRecord`]: the plan and
//! step figures of `connstorm scale`), `histogram` (the stored HdrHistogram
//! encoding), `timestamp` (RFC 3339 UTC), `error` ([`RecordError`]) and `example` (a
//! deterministic record for tests and docs).

mod baseline;
mod build;
mod counter;
mod crypto_floor;
mod error;
mod example;
mod failure;
mod file;
mod histogram;
mod phase;
mod profile;
mod run;
mod scale;
mod segment;
mod timestamp;

use serde::{Deserialize, Serialize};

pub use baseline::{Arm, Baseline, MedianInterval, Paired, Slice};
pub use build::BuildInfo;
pub use counter::{
    counter_meaning, describe_counter, is_drop_counter, is_retransmit_counter, KEY_COUNTERS,
};
pub use crypto_floor::CryptoFloor;
pub use error::RecordError;
pub use example::EXAMPLE_START_UNIX_MS;
pub use failure::{
    after_handshake_failures, never_accepted_total, NEVER_ACCEPTED, NEVER_ACCEPTED_QUEUED,
};
pub use file::{
    upgrade_v1, MAX_LABEL_BYTES, MAX_RECORD_BYTES, OLDEST_READABLE_SCHEMA_VERSION, SCHEMA_VERSION,
};
pub use histogram::{decode_histogram, encode_histogram, new_latency_histogram, HistogramError};
pub use phase::{
    AcceptQueue, AcceptSpread, Arrival, CpuUsage, CrossCheck, Histograms, HttpCounts, Latency,
    LittleCheck, LoadWorker, NetSoftirqs, Pattern, PhaseRecord, ServerSide, SideCpu, TimelineRow,
    TlsCounts, WorkerAccepts, LITTLE_LATE_CLIENT, LITTLE_MIN_DEPTH, LITTLE_TOLERANCE,
};
pub use profile::{
    ContentionPoint, FunctionShare, KernelProfile, NamedShare, OverheadPair, ProfileOverhead,
    SideProfile,
};
pub use run::{HostInfo, NumaNode, RunInfo, TlsSetup};
pub use scale::{ScaleKnee, ScaleRecord, ScaleStep};
pub use segment::{NetnsIdentity, Role, SegmentInfo};
pub use timestamp::{parse_rfc3339_utc, rfc3339_utc};

/// One run: what was asked, what ran, on which host, and what was measured per phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Format version, [`SCHEMA_VERSION`] when written by this build.
    pub schema_version: u32,
    /// User's label for the run (`--label`), may be empty; also part of the file name.
    pub label: String,
    /// The full configuration the command ran with (as the binary serialized it).
    pub config: serde_json::Value,
    /// What ran.
    pub run: RunInfo,
    /// The host.
    pub host: HostInfo,
    /// The load runs, in the order they ran.
    pub phases: Vec<PhaseRecord>,
    /// Kernel floor measured in the same run (`bench --baseline`).
    pub baseline: Option<Baseline>,
    /// Things a reader must know to trust the numbers (drops, fallbacks, count mismatches).
    pub warnings: Vec<String>,
    /// Which side wrote the record; absent (= [`Role::Bench`]) in bench records and in records
    /// from before multi-host runs.
    #[serde(default, skip_serializing_if = "Role::is_bench")]
    pub role: Role,
    /// The share of a multi-host run this load record covers; `None` for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<SegmentInfo>,
    /// The connstorm build that wrote the record (absent in older records: all fields empty).
    #[serde(default)]
    pub build: BuildInfo,
    /// The network namespace whose kernel counter deltas the phases' `counters` hold (load and
    /// server records); `None` in bench records (two namespaces with `--netns`) and in records
    /// written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters_netns: Option<NetnsIdentity>,
    /// `connstorm scale`: the plan and each step's figures ([`ScaleRecord`]); absent in every
    /// other record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<ScaleRecord>,
    /// `--profile-overhead`: the paired on/off check of what the kernel profile cost the peak
    /// ([`ProfileOverhead`]); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_overhead: Option<ProfileOverhead>,
    /// `load --tls`, `bench --tls --baseline`: the crypto floor of a full TLS handshake measured
    /// with the run ([`CryptoFloor`]); absent otherwise and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crypto_floor: Option<CryptoFloor>,
}

impl Default for RunRecord {
    fn default() -> Self {
        RunRecord {
            schema_version: SCHEMA_VERSION,
            label: String::new(),
            config: serde_json::Value::Null,
            run: RunInfo::default(),
            host: HostInfo::default(),
            phases: Vec::new(),
            baseline: None,
            warnings: Vec::new(),
            role: Role::Bench,
            segment: None,
            build: BuildInfo::default(),
            counters_netns: None,
            scale: None,
            profile_overhead: None,
            crypto_floor: None,
        }
    }
}

impl RunRecord {
    /// An empty record of the current schema version with a label and config; fill the rest.
    pub fn new(label: impl Into<String>, config: serde_json::Value) -> RunRecord {
        RunRecord {
            label: label.into(),
            config,
            ..RunRecord::default()
        }
    }

    /// The wire the run's connections were on, in words ([`common::wire::describe`]): the
    /// protocol (from its phases' HTTP and TLS counts) and the client's close mode as recorded
    /// (`run.close_mode`, kept since the first schema, so an older `--http` record reads as the
    /// RST after the response it ran), with the in-process server's mode where it decides the
    /// close (`--close server` against `--mode rst` is the server's RST,
    /// [`common::wire::describe_with_server`]). `None` for a server record and a record without
    /// a close mode: the server does not know how its clients close.
    pub fn wire(&self) -> Option<String> {
        if self.role == Role::Server || self.run.close_mode.is_empty() {
            return None;
        }
        let http = self.phases.iter().any(|p| p.http.is_some());
        let tls = self.phases.iter().any(|p| p.tls.is_some());
        Some(common::wire::describe_with_server(
            &self.run.close_mode,
            http,
            tls,
            &self.run.server_mode,
        ))
    }

    /// The phase with this name.
    pub fn phase(&self, name: &str) -> Option<&PhaseRecord> {
        self.phases.iter().find(|p| p.name == name)
    }

    /// The record as pretty-printed JSON (what [`RunRecord::write_atomic`] writes).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a record is plain data and always serializes")
    }

    /// The file name for this record with a given random part:
    /// `<started_at as 2026-11-29T22-15-03Z>-<label>-<random>.json`.
    ///
    /// The label is cut to 64 characters and anything but `A-Z a-z 0-9 . _ -` becomes `-`; an
    /// empty label becomes `run`. A `started_at` that is not RFC 3339 is replaced by now.
    pub fn file_name(&self, random: &str) -> String {
        let stamp = timestamp::file_stamp(&self.run.started_at).unwrap_or_else(|| {
            let now = timestamp::rfc3339_utc(std::time::SystemTime::now());
            timestamp::file_stamp(&now).expect("rfc3339_utc output has the file-stamp shape")
        });
        let label: String = self
            .label
            .chars()
            .take(64)
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let label = if label.is_empty() {
            "run".to_string()
        } else {
            label
        };
        format!("{stamp}-{label}-{random}.json")
    }
}
