//! Shipped presets, and apply/revert for real inside network namespaces.

use std::path::{Path, PathBuf};

use tuning::plan::{self, CheckOptions, Status};
use tuning::sysctl::{ProcSys, SysctlIo};

const NETNS: CheckOptions = CheckOptions {
    netns_only: true,
    allow_decrease: false,
    strict: false,
};
const NETNS_LOWER_OK: CheckOptions = CheckOptions {
    netns_only: true,
    allow_decrease: true,
    strict: false,
};
const NETNS_LOWER_OK_STRICT: CheckOptions = CheckOptions {
    netns_only: true,
    allow_decrease: true,
    strict: true,
};
use tuning::plan::Snapshot;
use tuning::sysctl::Preset;
use tuning::sysctl::{Key, SysctlError};

fn presets_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../presets")
}

#[test]
fn every_shipped_preset_parses_with_reasons_and_sources() {
    let mut names = Vec::new();
    for e in std::fs::read_dir(presets_dir()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let preset = Preset::load(&p).unwrap();
            assert!(!preset.sysctls.is_empty(), "{}", p.display());
            for s in &preset.sysctls {
                assert!(
                    !s.reason.is_empty() && !s.source.is_empty(),
                    "{}: {}",
                    p.display(),
                    s.key
                );
            }
            names.push(preset.name);
        }
    }
    names.sort();
    assert_eq!(
        names,
        ["c1m-server", "loadgen-client", "low-latency", "throughput"]
    );
}

/// Wraps the real /proc/sys and fails the write of one key.
struct FailOn {
    inner: ProcSys,
    key: &'static str,
}

impl SysctlIo for FailOn {
    fn read(&self, key: &Key) -> Result<String, SysctlError> {
        self.inner.read(key)
    }
    fn write(&mut self, key: &Key, value: &str) -> Result<(), SysctlError> {
        if key.as_str() == self.key {
            return Err(SysctlError::Io {
                op: "write",
                key: key.clone(),
                path: key.path(Path::new("/")),
                source: std::io::Error::from_raw_os_error(libc_einval()),
                hint: "injected",
            });
        }
        self.inner.write(key, value)
    }
    fn writable(&self, key: &Key) -> bool {
        self.inner.writable(key)
    }
    fn children(&self, dir: &[&str]) -> Vec<String> {
        self.inner.children(dir)
    }
}

fn libc_einval() -> i32 {
    22
}

const NETNS_FILE: &str = "net.core.somaxconn = 1234\nnet.ipv4.tcp_fin_timeout = 17\n\
                          net.ipv4.ip_local_port_range = 20000 30000\nnet.ipv4.tcp_tw_reuse = 0\n";

#[test]
fn apply_and_revert_for_real_inside_a_netns() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    NetNs::run(move |ns| {
        let keys = [
            "net.core.somaxconn",
            "net.ipv4.tcp_fin_timeout",
            "net.ipv4.ip_local_port_range",
            "net.ipv4.tcp_tw_reuse",
        ];
        let before: Vec<String> = keys
            .iter()
            .map(|k| tuning::sysctl::normalize(&ns.sysctl(k)))
            .collect();
        let preset = Preset::parse_sysctl_conf(NETNS_FILE, "test.conf").unwrap();
        let mut io = ProcSys { root: "/".into() };
        // somaxconn 1234 is below the namespace default: lowering it needs --allow-decrease.
        let cur: i64 = before[0].parse().unwrap();
        assert!(cur > 1234, "namespace default somaxconn {cur}");
        let refused = plan::check(&preset, &io, NETNS);
        assert_eq!(refused[0].status, Status::Lower);
        assert!(matches!(
            plan::apply(&refused, &mut io, Path::new("/"), &state_dir, "test"),
            Err(plan::ApplyError::Blocked { .. })
        ));
        assert_eq!(
            ns.sysctl("net.core.somaxconn"),
            before[0],
            "a refused apply changes nothing"
        );
        let rows = plan::check(&preset, &io, NETNS_LOWER_OK);
        assert!(rows.iter().all(|r| r.status.needs_write()), "{rows:?}");
        assert!(
            rows[0].note.contains("--allow-decrease"),
            "{}",
            rows[0].note
        );
        assert_eq!(rows[1].status, Status::Change);
        let rep = plan::apply(&rows, &mut io, Path::new("/"), &state_dir, "test").unwrap();
        assert_eq!(rep.changed.len(), 4);
        assert_eq!(ns.sysctl("net.core.somaxconn"), "1234");
        assert_eq!(
            tuning::sysctl::normalize(&ns.sysctl("net.ipv4.ip_local_port_range")),
            "20000 30000"
        );
        assert!(plan::check(&preset, &io, NETNS)
            .iter()
            .all(|r| r.status == Status::Ok));
        let snap = Snapshot::read(&rep.snapshot.unwrap()).unwrap();
        let r1 = plan::revert(&snap, &mut io, Path::new("/"), false).unwrap();
        assert_eq!(r1.restored.len(), 4);
        let after: Vec<String> = keys
            .iter()
            .map(|k| tuning::sysctl::normalize(&ns.sysctl(k)))
            .collect();
        assert_eq!(after, before);
        let r2 = plan::revert(&snap, &mut io, Path::new("/"), false).unwrap();
        assert!(
            r2.restored.is_empty(),
            "second revert must be a no-op: {r2:?}"
        );
        assert_eq!(r2.unchanged.len(), 4);
        // Another boot is refused without --force.
        let mut stale = snap.clone();
        stale.boot_id = "00000000-0000-0000-0000-000000000000".into();
        assert!(matches!(
            plan::revert(&stale, &mut io, Path::new("/"), false),
            Err(plan::RevertError::OtherBoot { .. })
        ));
        assert!(plan::revert(&stale, &mut io, Path::new("/"), true).is_ok());
    });
}

#[test]
fn a_write_failing_midway_restores_every_value() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    NetNs::run(move |ns| {
        let keys = [
            "net.core.somaxconn",
            "net.ipv4.tcp_fin_timeout",
            "net.ipv4.ip_local_port_range",
            "net.ipv4.tcp_tw_reuse",
        ];
        let before: Vec<String> = keys
            .iter()
            .map(|k| tuning::sysctl::normalize(&ns.sysctl(k)))
            .collect();
        let preset = Preset::parse_sysctl_conf(NETNS_FILE, "test.conf").unwrap();
        let mut io = FailOn {
            inner: ProcSys { root: "/".into() },
            key: "net.ipv4.ip_local_port_range",
        };
        let rows = plan::check(&preset, &io, NETNS_LOWER_OK);
        let err = plan::apply(&rows, &mut io, Path::new("/"), &state_dir, "test").unwrap_err();
        let plan::ApplyError::WriteFailed {
            key,
            restored,
            restore_failures,
            snapshot,
            ..
        } = &err
        else {
            panic!("unexpected {err}")
        };
        assert_eq!(key.as_str(), "net.ipv4.ip_local_port_range");
        // The two keys written before the failing one (the failing write changed nothing:
        // counting it as restored was the "restored 1 key(s) already changed" of issue 34).
        assert_eq!(restored.len(), 2);
        assert!(restore_failures.is_empty());
        assert!(
            snapshot.is_none(),
            "a fully rolled-back apply leaves no snapshot behind"
        );
        assert_eq!(
            std::fs::read_dir(&state_dir).unwrap().count(),
            0,
            "so `tune revert` still finds an earlier apply's snapshot"
        );
        assert!(
            err.to_string()
                .contains("restored the 2 key(s) this apply had changed"),
            "{err}"
        );
        let after: Vec<String> = keys
            .iter()
            .map(|k| tuning::sysctl::normalize(&ns.sysctl(k)))
            .collect();
        assert_eq!(after, before);
    });
}

#[test]
fn netns_mode_refuses_global_keys_and_missing_keys_block_apply() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    NetNs::run(move |ns| {
        let before = ns.sysctl("net.core.somaxconn");
        let text = "net.core.somaxconn = 999\nnet.core.netdev_max_backlog = 5000\nfs.nr_open = 2000000\n-net.ipv4.tcp_tw_recycle = 1\n";
        let preset = Preset::parse_sysctl_conf(text, "g.conf").unwrap();
        let mut io = ProcSys { root: "/".into() };
        let rows = plan::check(&preset, &io, NETNS_LOWER_OK);
        let status: Vec<&str> = rows.iter().map(|r| r.status.label()).collect();
        assert!(rows[0].status.needs_write());
        assert_eq!(
            status,
            [
                rows[0].status.label(),
                "refused (global)",
                "refused (global)",
                "missing (optional)"
            ]
        );
        let rep = plan::apply(&rows, &mut io, Path::new("/"), &state_dir, "t").unwrap();
        assert_eq!(rep.changed.len(), 1);
        assert_eq!(rep.skipped.len(), 3);
        let snap = Snapshot::read(rep.snapshot.as_ref().unwrap()).unwrap();
        plan::revert(&snap, &mut io, Path::new("/"), false).unwrap();
        assert_eq!(ns.sysctl("net.core.somaxconn"), before);
        // With --strict a non-optional missing key blocks the whole apply before any write
        // (without it the key is skipped with a warning, as systemd-sysctl does).
        let strict = Preset::parse_sysctl_conf(
            "net.core.somaxconn = 999\nnet.ipv4.tcp_tw_recycle = 1\n",
            "s.conf",
        )
        .unwrap();
        let rows = plan::check(&strict, &io, NETNS_LOWER_OK);
        assert!(plan::Prediction::of(&rows).refusals.is_empty());
        let rows = plan::check(&strict, &io, NETNS_LOWER_OK_STRICT);
        let err = plan::apply(&rows, &mut io, Path::new("/"), &state_dir, "t").unwrap_err();
        assert!(matches!(err, plan::ApplyError::Blocked { .. }), "{err}");
        assert!(err.to_string().contains("net.ipv4.tcp_tw_recycle"));
        assert_eq!(ns.sysctl("net.core.somaxconn"), before);
    });
}

use testkit::NetNs;

#[test]
fn a_failing_write_of_a_dash_line_is_ignored_as_systemd_does() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    NetNs::run(move |ns| {
        let range = tuning::sysctl::normalize(&ns.sysctl("net.ipv4.ip_local_port_range"));
        let text = "-net.ipv4.ip_local_port_range = 20000 30000\nnet.ipv4.tcp_fin_timeout = 17\n";
        let preset = Preset::parse_sysctl_conf(text, "dash.conf").unwrap();
        let mut io = FailOn {
            inner: ProcSys { root: "/".into() },
            key: "net.ipv4.ip_local_port_range",
        };
        let rows = plan::check(&preset, &io, NETNS);
        let rep = plan::apply(&rows, &mut io, Path::new("/"), &state_dir, "t").unwrap();
        assert_eq!(rep.changed.len(), 1, "{rep:?}");
        assert_eq!(rep.changed[0].0.as_str(), "net.ipv4.tcp_fin_timeout");
        assert!(
            rep.skipped
                .iter()
                .any(|(k, why)| k.as_str() == "net.ipv4.ip_local_port_range"
                    && why.contains("ignored")),
            "{rep:?}"
        );
        assert_eq!(
            tuning::sysctl::normalize(&ns.sysctl("net.ipv4.ip_local_port_range")),
            range
        );
        assert_eq!(ns.sysctl("net.ipv4.tcp_fin_timeout"), "17");
    });
}
