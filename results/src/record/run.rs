//! What ran and where: [`RunInfo`], [`HostInfo`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What ran: the choices the tool made or was given, as they really were at run time.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunInfo {
    /// The subcommand that wrote the record: `"bench"`, `"sweep"`, `"ab"`, `"load"`.
    pub command: String,
    /// Accept engine that ran on the server: `"io_uring"` or `"epoll"` (empty with `--target`:
    /// the server is not ours).
    pub engine: String,
    /// Why `auto` fell back to epoll (e.g. `"io_uring disabled by kernel.io_uring_disabled=2"`).
    pub engine_fallback_reason: Option<String>,
    /// The io_uring server's ring setup, the features that ran, `+`-joined: setup flags
    /// (`single_issuer+defer_taskrun`, `coop_taskrun` or `none`), `cqe_skip_success` (closes
    /// post no CQE, 5.17), `direct_accept` (accepts into the ring's file table, 5.19); `None` with
    /// epoll, with `--target`, and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_detail: Option<String>,
    /// Connection steering in force: `"none"`, `"incoming_cpu"` or `"reuseport_cbpf"`.
    pub steering: String,
    /// CPUs running server workers, in listener order (empty with `--target`).
    pub server_cpus: Vec<usize>,
    /// CPUs running load workers.
    pub load_cpus: Vec<usize>,
    /// How the client ends a connection: `"rst"`, `"fin"` or `"server"` (server closes first).
    pub close_mode: String,
    /// What the server does after accept: `"close"`, `"rst"`, `"greet:<bytes>"` or `"hold"`.
    pub server_mode: String,
    /// Server and load ran in two network namespaces joined by a veth pair (`--netns`).
    pub netns: bool,
    /// Added round-trip time through netem, ns (`--rtt`); `None` when none was added.
    pub rtt_ns: Option<u64>,
    /// External server benchmarked (`--target HOST:PORT`); `None` for our own server.
    pub target: Option<String>,
    /// connstorm's version, e.g. `"0.1.0"`.
    pub connstorm_version: String,
    /// Git commit connstorm was built from (`"unknown"` outside a git checkout).
    pub git_commit: String,
    /// The run was stopped early (Ctrl-C): the figures cover only what ran.
    pub interrupted: bool,
    /// When the run started, RFC 3339 UTC (`2026-11-29T22:15:03Z`); see
    /// [`rfc3339_utc`](super::rfc3339_utc).
    pub started_at: String,
    /// When the run started, ms since the Unix epoch (schema 2; `None` in older records): the
    /// origin of every phase's [`crate::record::PhaseRecord::start_offset_ms`].
    #[serde(default)]
    pub started_unix_ms: Option<u64>,
    /// Wall-clock length of the whole run in seconds, including warm-up and set-up.
    pub wall_secs: f64,
    /// Connect engine of the load side that ran: `"io_uring"` or `"epoll"` (`None` in older
    /// records and in server records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_engine: Option<String>,
    /// How it ran and how `--load-engine auto` chose it, one line, e.g. `io_uring
    /// (socket=direct,setsockopt=uring_cmd,connect+link_timeout,reuse=disconnect,close=skip_success,defer_taskrun)`
    /// or `epoll — auto: --tls needs the epoll engine (…)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_engine_detail: Option<String>,
    /// How server and load workers share the CPUs: `"whole-machine"` (`bench --whole-machine`:
    /// one server worker and one load worker on every CPU the process may use), `"split"`
    /// (disjoint sets), `"overlap"` (sets that share CPUs, given by hand); `None` in older
    /// records and without our own server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
    /// With `--tls`: what the client offered (`None` without TLS and in older records, which
    /// `compare` then treats as not recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSetup>,
}

/// What a `--tls` run's client offered and how it checked the server: setup, compared by
/// `compare`/`ab` (a different group, suite list or resumption share is a different
/// experiment).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TlsSetup {
    /// Protocol versions offered: `auto` (1.3 and 1.2), `1.2`, `1.3`.
    pub version: String,
    /// The server name (SNI, and the name checked against the certificate).
    pub server_name: String,
    /// ALPN protocols offered, in order (empty: none).
    #[serde(default)]
    pub alpn: Vec<String>,
    /// Key exchange groups offered, in order (IANA's names; the default list spelled out).
    pub groups: Vec<String>,
    /// Cipher suites offered, in order (rustls' names; the default list spelled out).
    pub ciphers: Vec<String>,
    /// Session resumption: `off`, `tickets`, `ids`.
    pub resume: String,
    /// With resumption, the share of connections that offer a kept session, percent (100:
    /// every connection after a worker's first); `None` without resumption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_share_pct: Option<u8>,
    /// The server's certificate was checked (`false`: `--insecure`).
    pub verified: bool,
}

impl TlsSetup {
    /// One line of what was offered: `TLS offered: version auto, SNI localhost, ALPN none,
    /// groups X25519,secp256r1; ciphers …; resumption tickets 30%; certificate checked`.
    pub fn line(&self) -> String {
        format!(
            "TLS offered: version {}, SNI {}, ALPN {}; groups {}; ciphers {}; resumption {}; certificate {}",
            self.version,
            self.server_name,
            if self.alpn.is_empty() {
                "none".to_string()
            } else {
                self.alpn.join(",")
            },
            self.groups.join(","),
            self.ciphers.join(","),
            self.resumption(),
            if self.verified {
                "checked"
            } else {
                "NOT checked (--insecure)"
            }
        )
    }

    /// The resumption setting as one value: `off`, `tickets 100%`, `ids 30%`.
    pub fn resumption(&self) -> String {
        match self.resume_share_pct {
            Some(p) if self.resume != "off" => format!("{} {p}%", self.resume),
            _ => self.resume.clone(),
        }
    }
}

impl RunInfo {
    /// Sets [`Self::load_engine`] and [`Self::load_engine_detail`] from a load report's engine
    /// (`engine`, its one-line `detail`), keeping the first one set (every phase of a run uses
    /// the same engine).
    pub fn note_load_engine(&mut self, engine: &str, detail: String) {
        if self.load_engine.is_none() {
            self.load_engine = Some(engine.to_string());
            self.load_engine_detail = Some(detail);
        }
    }
}

/// The host the run measured (the server's host for `bench`; the load host for `--target`).
///
/// Every field is what could be read; unreadable facts are `None` or empty.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostInfo {
    /// Host name.
    pub hostname: Option<String>,
    /// Kernel release (`uname -r`, /proc/sys/kernel/osrelease).
    pub kernel_release: Option<String>,
    /// Kernel command line (/proc/cmdline), trimmed.
    pub cmdline: Option<String>,
    /// CPU model name (/proc/cpuinfo `model name`).
    pub cpu_model: Option<String>,
    /// Online CPUs (/sys/devices/system/cpu/online).
    pub online_cpus: Vec<usize>,
    /// Isolated CPUs (/sys/devices/system/cpu/isolated, isolcpus=).
    pub isolated_cpus: Vec<usize>,
    /// NUMA nodes with their CPUs (/sys/devices/system/node/node*/cpulist).
    pub numa_nodes: Vec<NumaNode>,
    /// The sysctls that matter for accept rate, name → value as read (e.g.
    /// `"net.core.somaxconn" → "4096"`).
    pub sysctls: BTreeMap<String, String>,
}

/// One NUMA node and its CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NumaNode {
    /// Node number.
    pub id: usize,
    /// CPUs of the node.
    pub cpus: Vec<usize>,
}
