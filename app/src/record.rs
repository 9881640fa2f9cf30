//! Filling the run-record header: what ran, on which host, in which network namespace; and that
//! namespace's TCP counters ([`counters`], [`delta_since`]) for the records of `load` and
//! `server`.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use results::record::{HostInfo, NumaNode, RunInfo, RunRecord};

use crate::harness::Harness;

/// Host facts from `/` in the record's form (unreadable parts stay empty).
pub fn host_info() -> HostInfo {
    let f = tuning::host::HostFacts::read(Path::new("/"));
    HostInfo {
        hostname: f.hostname,
        kernel_release: f.kernel_release,
        cmdline: f.cmdline.map(|c| c.raw),
        cpu_model: f.cpu_model,
        online_cpus: f.online_cpus.unwrap_or_default(),
        isolated_cpus: f.isolated_cpus.unwrap_or_default(),
        numa_nodes: f
            .numa_nodes
            .unwrap_or_default()
            .into_iter()
            .map(|n| NumaNode {
                id: n.id,
                cpus: n.cpus,
            })
            .collect(),
        sysctls: f.sysctls,
    }
}

/// The calling thread's network namespace in the record's form (see
/// [`results::record::NetnsIdentity`]) on the host named `hostname` (as [`host_info`] read it):
/// call it from the thread that read the counters. `None` when `/proc/thread-self/ns/net` is
/// unreadable.
pub fn counters_netns(hostname: Option<String>) -> Option<results::record::NetnsIdentity> {
    let id = tuning::host::netns_identity(Path::new("/proc"))?;
    Some(results::record::NetnsIdentity {
        inode: id.inode,
        boot_id: id.boot_id,
        hostname,
    })
}

/// ms since the epoch (0 before 1970).
pub fn unix_ms(t: SystemTime) -> u64 {
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

/// Which binary made a record: its version and the git commit it was built from (the binary's
/// build script knows the commit; this crate does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Build {
    /// The package version, e.g. `"0.1.0"`.
    pub version: &'static str,
    /// The git commit, e.g. `"beaa9bb0c1d2"`, `"…-dirty"` or `"unknown"`.
    pub git_commit: &'static str,
}

/// A record for `command` with the harness's setup, the host and the `build` filled in.
pub fn new_record(
    command: &str,
    label: &str,
    config: serde_json::Value,
    h: &Harness,
    build: &Build,
) -> RunRecord {
    let s = h.setup();
    let mut r = RunRecord::new(label, config);
    r.run = RunInfo {
        command: command.to_string(),
        engine: h
            .server()
            .map(|s| s.engine().to_string())
            .unwrap_or_else(|| "external".into()),
        engine_detail: h.server().and_then(|s| s.ring_setup().map(str::to_string)),
        engine_fallback_reason: h
            .server()
            .and_then(|s| s.fallback_reason().map(str::to_string)),
        steering: h
            .server()
            .map(|s| s.steering().to_string())
            .unwrap_or_else(|| "none".into()),
        server_cpus: if s.target.is_some() {
            Vec::new()
        } else {
            s.server_cpus.clone()
        },
        load_cpus: s.load_cpus.clone(),
        close_mode: s.close.name().to_string(),
        server_mode: if s.target.is_some() {
            "external".into()
        } else {
            s.mode.to_string()
        },
        netns: s.netns,
        load_engine: None,
        load_engine_detail: None,
        placement: s.target.is_none().then(|| s.placement().to_string()),
        tls: s
            .tls
            .as_ref()
            .map(|t| crate::commands::tls::setup_of(&t.load)),
        rtt_ns: s.rtt.map(|d| d.as_nanos() as u64),
        target: s.target.map(|t| t.to_string()),
        connstorm_version: build.version.to_string(),
        git_commit: build.git_commit.to_string(),
        interrupted: false,
        started_at: results::record::rfc3339_utc(h.started_wall()),
        started_unix_ms: h
            .started_wall()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_millis() as u64),
        wall_secs: 0.0,
    };
    r.host = host_info();
    r
}

/// Refuses an `--out` directory that cannot take a record: it exists but is not a writable
/// directory, or the nearest existing ancestor is not writable. Writable is tried, not asked:
/// `access(2)` says yes to root where a file cannot be made (seen: `--out /proc/x` ran the
/// whole load, then lost its record), so a probe file (or, where `--out` does not exist yet, a
/// probe directory) is made there and removed at once; nothing else is created here.
///
/// # Errors
/// Bad input (exit 2) naming `--out` and what to give instead.
pub fn check_writable_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    common::files::check_output_dir("--out", dir, "run records").map_err(anyhow::Error::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seen: `load --out /proc/x` as root ran the whole load, then could not write its record:
    /// access(2) says root may write in /proc. The probe refuses it before anything runs.
    #[test]
    fn an_out_directory_where_no_file_can_be_made_is_refused_up_front() {
        let e =
            check_writable_dir(std::path::Path::new("/proc/connstorm-no-such-dir")).unwrap_err();
        assert!(
            e.to_string()
                .contains("--out /proc/connstorm-no-such-dir: cannot write in /proc"),
            "{e}"
        );
        let ok = tempfile::tempdir().unwrap();
        check_writable_dir(ok.path()).unwrap();
        check_writable_dir(&ok.path().join("a/b")).unwrap();
        // Nothing is left behind by the probes.
        assert_eq!(std::fs::read_dir(ok.path()).unwrap().count(), 0);
    }
}
