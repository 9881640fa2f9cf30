//! Issue 34, host files round 3: files people bring (the corpus under
//! `tests/fixtures/sysctld/corpus/`, from the public repositories docs/tuning.md names under "Facts relied on"), each row of the
//! issue's table as a kind of fault. Plans are checked on fixture /proc/sys trees built here and
//! in fresh network namespaces; everything that writes does so inside a namespace made for the
//! test (`testkit::NetNs`).

use std::path::Path;

use testkit::NetNs;
use tuning::plan::{self, CheckOptions, Prediction, Row, Status};
use tuning::sysctl::{Key, Preset, ProcSys, SourceFile, SysctlError, SysctlIo};

fn corpus(name: &str) -> SourceFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sysctld/corpus")
        .join(name);
    SourceFile {
        name: name.to_string(),
        text: std::fs::read_to_string(path).unwrap(),
    }
}

fn file(name: &str, text: &str) -> SourceFile {
    SourceFile {
        name: name.to_string(),
        text: text.to_string(),
    }
}

/// A fixture root: `keys` as (dotted key, value, mode) under `<root>/proc/sys`.
fn tree(keys: &[(&str, &str, u32)]) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    for (k, v, mode) in keys {
        let p = Key::parse(k).unwrap().path(d.path());
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("{v}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode)).unwrap();
    }
    d
}

fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn rows_on(files: &[SourceFile], root: &Path, opts: CheckOptions) -> Vec<Row> {
    let p = Preset::from_sysctl_d(files, root).unwrap();
    plan::check(
        &p,
        &ProcSys {
            root: root.to_path_buf(),
        },
        opts,
    )
}

fn row<'a>(rows: &'a [Row], key: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.entry.key.as_str() == key)
        .unwrap_or_else(|| panic!("no row {key} in {rows:#?}"))
}

const CHILD: CheckOptions = CheckOptions {
    netns_only: true,
    allow_decrease: false,
    strict: false,
};
const CHILD_STRICT: CheckOptions = CheckOptions {
    netns_only: true,
    allow_decrease: false,
    strict: true,
};
const CHILD_LOWER_OK: CheckOptions = CheckOptions {
    netns_only: true,
    allow_decrease: true,
    strict: false,
};

const CC: &str = "net.ipv4.tcp_congestion_control";

/// A child namespace refuses what the host allows: the Puppet nginx-api file sets
/// `tcp_congestion_control = cubic` where the allowed list is `reno bbr`. The plan says so
/// before writing (EPERM: net/ipv4/tcp_cong.c) with how to allow it, skips it, and refuses it
/// with --strict; the initial namespace may pick it; an algorithm the kernel lacks is ENOENT.
#[test]
fn a_child_namespace_refuses_what_the_host_allows_congestion_control_outside_the_allowed_list() {
    let d = tree(&[
        (CC, "bbr", 0o644),
        ("net.ipv4.tcp_allowed_congestion_control", "reno bbr", 0o644),
        (
            "net.ipv4.tcp_available_congestion_control",
            "reno bbr cubic",
            0o444,
        ),
    ]);
    let nginx = corpus("nginx-api.conf");
    let r = rows_on(std::slice::from_ref(&nginx), d.path(), CHILD);
    let cc = row(&r, CC);
    assert_eq!(cc.status, Status::Denied, "{}", cc.note);
    assert!(!cc.fatal);
    assert!(
        cc.note.starts_with("`cubic` is not in this namespace's net.ipv4.tcp_allowed_congestion_control (reno bbr): only the initial network namespace may pick a restricted algorithm, so the write fails EPERM (net/ipv4/tcp_cong.c"),
        "{}",
        cc.note
    );
    assert!(
        cc.note
            .contains("`sysctl -w net.ipv4.tcp_allowed_congestion_control=\"reno bbr cubic\"`"),
        "{}",
        cc.note
    );
    let pred = Prediction::of(&r);
    assert!(
        !pred.writes.iter().any(|(k, _)| k.as_str() == CC),
        "{pred:?}"
    );
    assert!(pred.skips.iter().any(|(k, _)| k.as_str() == CC), "{pred:?}");
    let strict = rows_on(std::slice::from_ref(&nginx), d.path(), CHILD_STRICT);
    assert!(row(&strict, CC).fatal);
    // The initial namespace may set any available algorithm.
    let host = rows_on(
        std::slice::from_ref(&nginx),
        d.path(),
        CheckOptions::default(),
    );
    assert_eq!(row(&host, CC).status, Status::Change);
    // One the kernel does not have: ENOENT, in every namespace.
    let htcp = rows_on(
        &[file("h.conf", "net.ipv4.tcp_congestion_control = htcp\n")],
        d.path(),
        CheckOptions::default(),
    );
    let h = row(&htcp, CC);
    assert_eq!(h.status, Status::Unavailable, "{}", h.note);
    assert!(h.note.contains("modprobe tcp_htcp"), "{}", h.note);
}

/// The same in a real child namespace: the plan predicts the kernel's EPERM for an algorithm
/// available but not allowed, apply skips it, and a direct write gets EPERM.
#[test]
fn a_child_namespace_refuses_what_the_host_allows_and_the_kernel_agrees() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    NetNs::run(move |ns| {
        let allowed = ns.sysctl("net.ipv4.tcp_allowed_congestion_control");
        let available = ns.sysctl("net.ipv4.tcp_available_congestion_control");
        let Some(algo) = available
            .split(' ')
            .find(|a| !allowed.split(' ').any(|b| b == *a))
            .map(str::to_string)
        else {
            eprintln!(
                "skipping the kernel half: every available algorithm ({available}) is allowed ({allowed}) here, so no child namespace refuses one; the fixture test covers the plan"
            );
            return;
        };
        let before = ns.sysctl(CC);
        let files = [file(
            "cc.conf",
            &format!("{CC} = {algo}\nnet.ipv4.tcp_fin_timeout = 17\n"),
        )];
        let p = Preset::from_sysctl_d(&files, Path::new("/")).unwrap();
        let mut io = ProcSys { root: "/".into() };
        let r = plan::check(&p, &io, CHILD);
        let cc = row(&r, CC);
        assert_eq!(cc.status, Status::Denied, "{}", cc.note);
        assert!(cc.note.contains(&format!("({allowed})")), "{}", cc.note);
        let rep = plan::apply(&r, &mut io, Path::new("/"), &state_dir, "t").unwrap();
        assert_eq!(rep.changed.len(), 1, "{rep:?}");
        assert_eq!(ns.sysctl(CC), before);
        let e = std::fs::write(format!("/proc/sys/{}", CC.replace('.', "/")), &algo).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(1), "the kernel answers EPERM: {e}");
        let snap = tuning::plan::Snapshot::read(rep.snapshot.as_ref().unwrap()).unwrap();
        plan::revert(&snap, &mut io, Path::new("/"), false).unwrap();
    });
}

/// The kind, wider than congestion control: a `net.*` file read-only in a child namespace but
/// writable in the initial one (`tcp_allowed_congestion_control`, commit 97684f0970f6) is named
/// so, with where to set it, not called a status key or a global key.
#[test]
fn a_child_namespace_refuses_what_the_host_allows_read_only_in_a_child() {
    NetNs::run(|_| {
        let r = rows_on(
            &[file(
                "a.conf",
                "net.ipv4.tcp_allowed_congestion_control = reno\n",
            )],
            Path::new("/"),
            CHILD,
        );
        let a = row(&r, "net.ipv4.tcp_allowed_congestion_control");
        if a.status == Status::Ok {
            eprintln!("skipping: the allowed list is already `reno` here");
            return;
        }
        assert_eq!(a.status, Status::ReadOnly, "{}", a.note);
        assert!(
            a.note.starts_with("read-only in this child network namespace, writable in the initial one: set it in the initial network namespace (net/ipv4/sysctl_net_ipv4.c"),
            "{}",
            a.note
        );
    });
}

/// Per-namespace keys called global: `net.bridge.bridge-nf-call-iptables` (Kubernetes'
/// k8s.conf) is per namespace on this kernel. The scope comes from what the kernel does (a new
/// namespace has its own copy), so `--netns` applies it there and the host keeps its value.
#[test]
fn per_namespace_keys_called_global_bridge_nf_call_iptables_is_applied_in_the_namespace() {
    let key = "net.bridge.bridge-nf-call-iptables";
    let path = "/proc/sys/net/bridge/bridge-nf-call-iptables";
    if !Path::new(path).exists() {
        eprintln!("skipping: module br_netfilter is not loaded here ({path} is absent); this test loads no module");
        return;
    }
    let host_before = std::fs::read_to_string(path).unwrap();
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    let (status, after, default, fresh) = NetNs::run(move |ns| {
        let p = Preset::from_sysctl_d(&[corpus("k8s.conf")], Path::new("/")).unwrap();
        let mut io = ProcSys { root: "/".into() };
        // The probe says per namespace before anything is written here (were the key global,
        // a write in this namespace would change the host).
        let r = plan::check(&p, &io, CHILD);
        assert_eq!(row(&r, key).scope, tuning::sysctl::Scope::Netns);
        let default = ns.sysctl(key);
        ns.set_sysctl(key, "0");
        let r = plan::check(&p, &io, CHILD);
        let status = row(&r, key).status.clone();
        plan::apply(&r, &mut io, Path::new("/"), &state_dir, "t").unwrap();
        let after = ns.sysctl(key);
        // Back to 0 here: a new namespace still gets the kernel's default of its own.
        ns.set_sysctl(key, "0");
        let fresh = NetNs::run(move |ns| ns.sysctl(key));
        (status, after, default, fresh)
    });
    assert_eq!(status, Status::Change, "refused as global before issue 34");
    assert_eq!(after, "1");
    assert_eq!(fresh, default, "per namespace: a new one has its own value");
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        host_before,
        "the host kept its value while this namespace wrote 1 and 0"
    );
}

/// Injects a write failure with an errno on chosen keys (the kernel's answers to a write).
struct Failing {
    inner: ProcSys,
    fail: Vec<(&'static str, i32)>,
}

impl SysctlIo for Failing {
    fn read(&self, key: &Key) -> Result<String, SysctlError> {
        self.inner.read(key)
    }
    fn write(&mut self, key: &Key, value: &str) -> Result<(), SysctlError> {
        if let Some((_, errno)) = self.fail.iter().find(|(k, _)| *k == key.as_str()) {
            return Err(SysctlError::Write {
                key: key.clone(),
                value: value.into(),
                path: key.path(Path::new("/")),
                error: std::io::Error::from_raw_os_error(*errno),
                hint: "",
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

const SEMANTICS: &str = "net.ipv4.tcp_fin_timeout = 17\nnet.ipv4.tcp_keepalive_time = 601\n\
                         net.ipv4.tcp_syn_retries = 5\nnet.ipv4.tcp_synack_retries = 4\n\
                         net.ipv4.tcp_orphan_retries = 3\n";

/// Apply semantics as systemd-sysctl (src/sysctl/sysctl.c `sysctl_write_or_warn`): a write that
/// fails ENOENT is a warning, EPERM/EACCES/EROFS a note, and the rest applies; the snapshot and
/// revert cover exactly the keys written. With --strict the first such failure fails the apply
/// and what was written is restored; any other errno (EIO) fails in every mode; a failure of
/// the only write says "nothing was changed".
#[test]
fn apply_semantics_match_systemd_sysctl_for_each_errno() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    NetNs::run(move |ns| {
        let keys = [
            "net.ipv4.tcp_fin_timeout",
            "net.ipv4.tcp_keepalive_time",
            "net.ipv4.tcp_syn_retries",
            "net.ipv4.tcp_synack_retries",
            "net.ipv4.tcp_orphan_retries",
        ];
        let before: Vec<String> = keys.iter().map(|k| ns.sysctl(k)).collect();
        let p = Preset::from_sysctl_d(&[file("s.conf", SEMANTICS)], Path::new("/")).unwrap();
        let failing = || Failing {
            inner: ProcSys { root: "/".into() },
            fail: vec![
                ("net.ipv4.tcp_keepalive_time", 2),  // ENOENT
                ("net.ipv4.tcp_syn_retries", 1),     // EPERM
                ("net.ipv4.tcp_synack_retries", 13), // EACCES
                ("net.ipv4.tcp_orphan_retries", 30), // EROFS
            ],
        };
        let mut io = failing();
        let r = plan::check(&p, &io, CHILD);
        let rep = plan::apply(&r, &mut io, Path::new("/"), &state_dir, "t").unwrap();
        let changed: Vec<&str> = rep.changed.iter().map(|(k, ..)| k.as_str()).collect();
        assert_eq!(changed, ["net.ipv4.tcp_fin_timeout"]);
        let skipped: Vec<(&str, &str)> = rep
            .skipped
            .iter()
            .map(|(k, w)| (k.as_str(), w.as_str()))
            .collect();
        assert_eq!(skipped.len(), 4, "{skipped:?}");
        assert!(
            skipped[0]
                .1
                .starts_with("warning: the key is gone (ENOENT), skipped"),
            "{skipped:?}"
        );
        for (_, why) in &skipped[1..] {
            assert!(
                why.starts_with("the kernel refused the write (EPERM, EACCES or EROFS), skipped"),
                "{why}"
            );
        }
        assert_eq!(ns.sysctl("net.ipv4.tcp_fin_timeout"), "17");
        // The snapshot holds exactly what was written, and revert restores exactly that.
        let snap = tuning::plan::Snapshot::read(rep.snapshot.as_ref().unwrap()).unwrap();
        let saved: Vec<String> = snap
            .saved
            .iter()
            .map(|s| match s {
                tuning::plan::Saved::Sysctl { key, .. } => key.to_string(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(saved, ["net.ipv4.tcp_fin_timeout"]);
        let rev = plan::revert(
            &snap,
            &mut ProcSys { root: "/".into() },
            Path::new("/"),
            false,
        )
        .unwrap();
        assert_eq!(rev.restored, ["net.ipv4.tcp_fin_timeout"]);
        let now: Vec<String> = keys.iter().map(|k| ns.sysctl(k)).collect();
        assert_eq!(now, before);

        // --strict: the ENOENT fails the apply; fin_timeout, written first, is restored.
        let snapshots = std::fs::read_dir(&state_dir).unwrap().count();
        let mut io = failing();
        let strict = plan::apply_with(
            &plan::check(&p, &io, CHILD),
            &mut io,
            Path::new("/"),
            &state_dir,
            "t",
            plan::ApplyOptions { strict: true },
        )
        .unwrap_err();
        assert!(
            matches!(&strict, plan::ApplyError::WriteFailed { key, restored, .. }
                if key.as_str() == "net.ipv4.tcp_keepalive_time" && restored.len() == 1),
            "{strict}"
        );
        assert_eq!(ns.sysctl("net.ipv4.tcp_fin_timeout"), before[0]);
        assert_eq!(
            std::fs::read_dir(&state_dir).unwrap().count(),
            snapshots,
            "the failed apply leaves no snapshot"
        );

        // Another errno (EIO) fails in every mode; the only write failing changed nothing.
        let mut io = Failing {
            inner: ProcSys { root: "/".into() },
            fail: vec![("net.ipv4.tcp_fin_timeout", 5)],
        };
        let one = Preset::from_sysctl_d(
            &[file("one.conf", "net.ipv4.tcp_fin_timeout = 17\n")],
            Path::new("/"),
        )
        .unwrap();
        let err = plan::apply(
            &plan::check(&one, &io, CHILD),
            &mut io,
            Path::new("/"),
            &state_dir,
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("nothing was changed") && !err.contains("restored"),
            "explanations that blame the wrong thing: {err}"
        );
    });
}

/// Apply semantics on systemd's own 50-default.conf, on a kernel without `kernel.sysrq`: the
/// missing key is skipped with a warning and the rest is planned; with --strict it refuses.
#[test]
fn apply_semantics_a_missing_key_is_a_warning_and_the_rest_applies() {
    let d = tree(&[
        ("kernel.core_uses_pid", "0", 0o644),
        ("net.ipv4.conf.all.rp_filter", "0", 0o644),
        ("net.ipv4.conf.default.rp_filter", "0", 0o644),
        ("net.ipv4.conf.eth0.rp_filter", "0", 0o644),
        ("net.ipv4.conf.default.accept_source_route", "1", 0o644),
        ("net.ipv4.conf.eth0.accept_source_route", "1", 0o644),
        ("fs.protected_hardlinks", "0", 0o644),
    ]);
    let r = rows_on(
        &[corpus("50-default.conf")],
        d.path(),
        CheckOptions::default(),
    );
    let sysrq = row(&r, "kernel.sysrq");
    assert_eq!(sysrq.status, Status::Missing);
    assert!(!sysrq.fatal);
    assert!(
        sysrq.note.contains(
            "skipped with a warning, the rest applies (as systemd-sysctl does; --strict refuses)"
        ),
        "{}",
        sysrq.note
    );
    let pred = Prediction::of(&r);
    assert!(pred.refusals.is_empty(), "{pred:?}");
    for k in [
        "kernel.core_uses_pid",
        "net.ipv4.conf.default.rp_filter",
        "net.ipv4.conf.eth0.rp_filter",
        "fs.protected_hardlinks",
    ] {
        assert!(
            pred.writes.iter().any(|(w, _)| w.as_str() == k),
            "{k}: {pred:?}"
        );
    }
    // The exclusion keeps the glob off conf.all.
    assert!(!pred
        .writes
        .iter()
        .any(|(w, _)| w.as_str() == "net.ipv4.conf.all.rp_filter"));
    let strict = rows_on(
        &[corpus("50-default.conf")],
        d.path(),
        CheckOptions {
            strict: true,
            ..CheckOptions::default()
        },
    );
    let pred = Prediction::of(&strict);
    assert!(
        pred.refusals
            .iter()
            .any(|(k, _)| k.as_str() == "kernel.sysrq"),
        "{pred:?}"
    );
}

/// Apply semantics of a `-key = value` line (systemd-sysctl: a `-` prefix ignores any failure of
/// that line, also with `--strict`): in a child namespace with --strict, a missing key, a status
/// key, an algorithm the namespace may not pick, a global key and a value the kernel rejects are
/// all skipped, none refuses the plan; the same lines without `-` each refuse it.
#[test]
fn apply_semantics_a_dash_line_is_skipped_whatever_fails_even_with_strict() {
    let d = tree(&[
        ("fs.file-nr", "3008 0 9223372036854775807", 0o444),
        (CC, "bbr", 0o644),
        ("net.ipv4.tcp_allowed_congestion_control", "reno bbr", 0o644),
        (
            "net.ipv4.tcp_available_congestion_control",
            "reno bbr cubic",
            0o444,
        ),
        ("net.core.rmem_max", "212992", 0o644),
        ("net.ipv4.tcp_tw_reuse", "2", 0o644),
        ("net.ipv4.tcp_fin_timeout", "60", 0o644),
    ]);
    let lines = [
        ("kernel.sysrq", "16"),
        ("fs.file-nr", "1"),
        (CC, "cubic"),
        ("net.core.rmem_max", "4194304"),
        ("net.ipv4.tcp_tw_reuse", "3"),
    ];
    let text = |dash: &str| {
        let mut t: String = lines
            .iter()
            .map(|(k, v)| format!("{dash}{k} = {v}\n"))
            .collect();
        t.push_str("net.ipv4.tcp_fin_timeout = 17\n");
        t
    };
    let r = rows_on(&[file("dash.conf", &text("-"))], d.path(), CHILD_STRICT);
    for (k, _) in lines {
        let x = row(&r, k);
        // A missing key on a `-` line is "missing (optional)", the other failures "skipped (-)".
        let want = if k == "kernel.sysrq" {
            Status::MissingOptional
        } else {
            Status::Skipped
        };
        assert_eq!(x.status, want, "{k}: {}", x.note);
        assert!(!x.fatal, "{k}: {}", x.note);
        assert!(x.note.contains("`-` prefix ignores"), "{k}: {}", x.note);
    }
    let pred = Prediction::of(&r);
    assert!(pred.refusals.is_empty(), "{pred:?}");
    let writes: Vec<&str> = pred.writes.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(writes, ["net.ipv4.tcp_fin_timeout"], "{pred:?}");
    // Without the prefix, --strict refuses the plan for each of them.
    let r = rows_on(&[file("plain.conf", &text(""))], d.path(), CHILD_STRICT);
    for (k, _) in lines {
        assert!(row(&r, k).fatal, "{k}: {}", row(&r, k).note);
    }
    assert_eq!(Prediction::of(&r).refusals.len(), lines.len());
}

/// A `-` line whose write fails when applied (not predicted: the kernel answers ENOENT or EIO)
/// is skipped with --strict too, and the rest is written; the snapshot holds what was written.
#[test]
fn apply_semantics_a_dash_line_that_fails_when_written_is_skipped_with_strict() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    NetNs::run(move |ns| {
        let before = ns.sysctl("net.ipv4.tcp_fin_timeout");
        let p = Preset::from_sysctl_d(
            &[file(
                "d.conf",
                "-net.ipv4.tcp_keepalive_time = 601\n-net.ipv4.tcp_syn_retries = 5\nnet.ipv4.tcp_fin_timeout = 17\n",
            )],
            Path::new("/"),
        )
        .unwrap();
        let mut io = Failing {
            inner: ProcSys { root: "/".into() },
            fail: vec![
                ("net.ipv4.tcp_keepalive_time", 2), // ENOENT
                ("net.ipv4.tcp_syn_retries", 5),    // EIO
            ],
        };
        let rows = plan::check(&p, &io, CHILD_STRICT);
        let rep = plan::apply_with(
            &rows,
            &mut io,
            Path::new("/"),
            &state_dir,
            "t",
            plan::ApplyOptions { strict: true },
        )
        .unwrap();
        let changed: Vec<&str> = rep.changed.iter().map(|(k, ..)| k.as_str()).collect();
        assert_eq!(changed, ["net.ipv4.tcp_fin_timeout"]);
        let skipped: Vec<&str> = rep.skipped.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            skipped,
            ["net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_syn_retries"],
            "{:?}",
            rep.skipped
        );
        assert!(
            rep.skipped
                .iter()
                .all(|(_, why)| why.starts_with("write failed and was ignored (`-` line)")),
            "{:?}",
            rep.skipped
        );
        assert_eq!(ns.sysctl("net.ipv4.tcp_fin_timeout"), "17");
        let snap = tuning::plan::Snapshot::read(rep.snapshot.as_ref().unwrap()).unwrap();
        assert_eq!(snap.saved.len(), 1, "{:?}", snap.saved);
        plan::revert(
            &snap,
            &mut ProcSys { root: "/".into() },
            Path::new("/"),
            false,
        )
        .unwrap();
        assert_eq!(ns.sysctl("net.ipv4.tcp_fin_timeout"), before);
    });
}

/// A read-only status key (`fs.file-nr`, copied from `sysctl -a`) gets one reason, the same in
/// the initial namespace, in a child one and with --strict: it cannot be set; drop the line
/// or prefix it with `-`.
#[test]
fn a_read_only_status_key_has_one_reason_in_every_mode() {
    let d = tree(&[
        ("fs.file-nr", "3008 0 9223372036854775807", 0o444),
        ("net.ipv4.tcp_fin_timeout", "60", 0o644),
    ]);
    let want = "status key: it reports state and cannot be set (Documentation/admin-guide/sysctl/fs.rst (read-only)): drop the line or prefix it with `-`";
    for opts in [CheckOptions::default(), CHILD, CHILD_STRICT] {
        let r = rows_on(&[corpus("file-nr.conf")], d.path(), opts);
        let n = row(&r, "fs.file-nr");
        assert_eq!(n.status, Status::ReadOnly, "{opts:?}");
        assert!(n.note.starts_with(want), "{opts:?}: {}", n.note);
        assert_eq!(n.fatal, opts.strict, "{opts:?}");
    }
    // The kind: another read-only file the rules table does not list.
    let d = tree(&[("kernel.some_counter", "7", 0o444)]);
    let r = rows_on(
        &[file("k.conf", "kernel.some_counter = 8\n")],
        d.path(),
        CHILD,
    );
    let k = row(&r, "kernel.some_counter");
    assert_eq!(k.status, Status::ReadOnly);
    assert!(
        k.note.contains("drop the line or prefix it with `-`"),
        "{}",
        k.note
    );
}

/// A fixture host whose services listen on 9000 and 18080 (`/proc/net/tcp`), with 23.4 GiB of
/// memory and the keys the corpus files set.
fn workload_host() -> tempfile::TempDir {
    let d = tree(&[
        ("net.ipv4.ip_local_port_range", "32768 60999", 0o644),
        ("net.ipv4.ip_local_reserved_ports", "", 0o644),
        ("net.ipv4.tcp_dsack", "1", 0o644),
        ("net.ipv4.tcp_sack", "1", 0o644),
        ("net.core.rmem_default", "212992", 0o644),
        ("fs.file-max", "9223372036854775807", 0o644),
        ("fs.nr_open", "1048576", 0o644),
        ("net.ipv4.tcp_keepalive_time", "7200", 0o644),
        ("net.ipv4.tcp_keepalive_probes", "9", 0o644),
        ("net.ipv4.tcp_keepalive_intvl", "75", 0o644),
        (
            "net.netfilter.nf_conntrack_tcp_timeout_time_wait",
            "120",
            0o644,
        ),
        (
            "net.netfilter.nf_conntrack_tcp_timeout_close_wait",
            "60",
            0o644,
        ),
        (
            "net.netfilter.nf_conntrack_tcp_timeout_established",
            "432000",
            0o644,
        ),
        ("net.netfilter.nf_conntrack_generic_timeout", "600", 0o644),
        ("net.netfilter.nf_conntrack_max", "262144", 0o644),
    ]);
    put(
        d.path(),
        "proc/net/tcp",
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 00000000:2328 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1\n   1: 0100007F:46A0 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1\n   2: 0100007F:9C40 0100007F:2328 01 00000000:00000000 00:00000000 00000000     0        0 1003 1\n",
    );
    put(
        d.path(),
        "proc/meminfo",
        "MemTotal:       24542052 kB\nMemFree: 1 kB\n",
    );
    d
}

fn warnings(r: &[Row], key: &str) -> String {
    row(r, key).warnings.join("\n")
}

/// Values that hurt this workload, each warned about with its reason and source: a port range
/// that covers ports services listen on (read from the listening sockets), tcp_dsack = 0, a
/// per-socket default times the sockets the plan allows above the host's memory (nginx-api),
/// keepalive that declares a peer dead in 13 s and conntrack timeouts far below the
/// protocol's, also under their legacy spellings (scm_sysctl).
#[test]
fn values_that_hurt_this_workload_are_warned_about_with_reason_and_source() {
    let d = workload_host();
    let r = rows_on(
        &[corpus("nginx-api.conf")],
        d.path(),
        CheckOptions::default(),
    );
    let w = warnings(&r, "net.ipv4.ip_local_port_range");
    assert!(
        w.contains("2000-65000 covers port(s) 9000, 18080 that services here listen on")
            && w.contains("net.ipv4.ip_local_reserved_ports = 9000,18080")
            && w.contains("ip-sysctl.rst ip_local_port_range"),
        "{w}"
    );
    let w = warnings(&r, "net.ipv4.tcp_dsack");
    assert!(
        w.contains("RFC 2883") && w.contains("ip-sysctl.rst tcp_dsack"),
        "{w}"
    );
    let w = warnings(&r, "net.core.rmem_default");
    assert!(
        w.starts_with("8,388,608 bytes per socket (the receive buffer every socket but TCP starts with; the kernel's default is 212,992) x 70,000 sockets (fs.file-max in this plan) = 546.9 GiB, 23x this host's 23.4 GiB of memory (MemTotal): 2,995 sockets"),
        "{w}"
    );
    // 600 + 5 x 15 s is long enough: no keepalive warning on nginx-api.
    assert!(!warnings(&r, "net.ipv4.tcp_keepalive_time").contains("silent peer"));

    let r = rows_on(
        &[corpus("scm_sysctl.conf")],
        d.path(),
        CheckOptions::default(),
    );
    let w = warnings(&r, "net.ipv4.tcp_keepalive_intvl");
    assert!(
        w.contains("= 3 + 5 x 2 = 13 s") && w.contains("RFC 1122"),
        "keepalive warned on the first keepalive line: {w}"
    );
    for (legacy, why) in [
        (
            "net.netfilter.ip_conntrack_tcp_timeout_time_wait",
            "TCP_TIMEWAIT_LEN",
        ),
        (
            "net.netfilter.ip_conntrack_tcp_timeout_close_wait",
            "CLOSE_WAIT lasts until the application closes",
        ),
        (
            "net.netfilter.ip_conntrack_tcp_timeout_established",
            "idle established connection",
        ),
        (
            "net.netfilter.ip_conntrack_generic_timeout",
            "default is 600 s",
        ),
    ] {
        let w = warnings(&r, legacy);
        let new = legacy.replace("ip_conntrack_", "nf_conntrack_");
        assert!(
            w.contains(&format!("as {new}: "))
                && w.contains(why)
                && w.contains("nf_conntrack-sysctl.rst"),
            "{legacy}: {w}"
        );
    }
    // The same values under the current names warn without the "as".
    let r = rows_on(
        &[file(
            "ct.conf",
            "net.netfilter.nf_conntrack_tcp_timeout_time_wait = 1\n",
        )],
        d.path(),
        CheckOptions::default(),
    );
    assert!(
        warnings(&r, "net.netfilter.nf_conntrack_tcp_timeout_time_wait")
            .starts_with("net.netfilter.nf_conntrack_tcp_timeout_time_wait < 60 s: ")
    );
    // Reserving the ports settles the range warning.
    let r = rows_on(
        &[
            corpus("nginx-api.conf"),
            file(
                "r.conf",
                "net.ipv4.ip_local_reserved_ports = 9000,18000-18100\n",
            ),
        ],
        d.path(),
        CheckOptions::default(),
    );
    assert!(!warnings(&r, "net.ipv4.ip_local_port_range").contains("covers port"));
}

/// The listeners are the namespace's own, read with sock_diag: services listening on 9000 and
/// 18080 in a fresh namespace are named by the plan of galeb's 15000-65000 range.
#[test]
fn values_that_hurt_this_workload_the_listeners_come_from_the_namespace() {
    NetNs::run(|_| {
        let _a = std::net::TcpListener::bind("127.0.0.1:9000").unwrap();
        let _b = std::net::TcpListener::bind("[::1]:18080")
            .or_else(|_| std::net::TcpListener::bind("127.0.0.1:18080"))
            .unwrap();
        let r = rows_on(
            &[corpus("galeb-router.conf")],
            Path::new("/"),
            CHILD_LOWER_OK,
        );
        let w = warnings(&r, "net.ipv4.ip_local_port_range");
        assert!(
            w.contains("15000-65000 covers port(s) 18080 that services here listen on"),
            "{w}"
        );
        let r = rows_on(&[corpus("nginx-api.conf")], Path::new("/"), CHILD_LOWER_OK);
        let w = warnings(&r, "net.ipv4.ip_local_port_range");
        assert!(w.contains("covers port(s) 9000, 18080"), "{w}");
    });
}

/// Legacy names: all five `net.netfilter.ip_conntrack_*` keys of the cookbook point to their
/// `nf_conntrack_*` names (as `net.ipv4.netfilter.ip_conntrack_*` did), and the 2.6 spelling
/// `net.ipv4.ip_conntrack_max` too.
#[test]
fn legacy_names_of_conntrack_point_to_their_nf_conntrack_names() {
    let d = workload_host();
    let r = rows_on(
        &[
            corpus("scm_sysctl.conf"),
            file("old.conf", "net.ipv4.ip_conntrack_max = 65536\n"),
        ],
        d.path(),
        CheckOptions::default(),
    );
    let legacy: Vec<&Row> = r
        .iter()
        .filter(|x| x.entry.key.as_str().contains(".ip_conntrack_"))
        .collect();
    assert_eq!(legacy.len(), 6);
    for x in legacy {
        let suffix = x.entry.key.as_str().split(".ip_conntrack_").nth(1).unwrap();
        assert_eq!(x.status, Status::Missing, "{}", x.entry.key);
        assert!(
            x.note.starts_with("legacy name: ")
                && x.note
                    .contains(&format!("use net.netfilter.nf_conntrack_{suffix}")),
            "{}: {}",
            x.entry.key,
            x.note
        );
        assert!(!x.note.contains("not on this kernel"), "{}", x.note);
    }
    let max = row(&r, "net.netfilter.ip_conntrack_max");
    assert!(
        max.note
            .contains("(net.netfilter.nf_conntrack_max is 262144 here)"),
        "{}",
        max.note
    );
}

/// Explanations that blame the wrong thing: a per-interface key for an interface this host
/// does not have is "no interface eth0.100 here", not "not on this kernel".
#[test]
fn explanations_that_blame_the_wrong_thing_a_missing_interface_is_named() {
    let d = tree(&[
        ("net.ipv4.conf.all.rp_filter", "0", 0o644),
        ("net.ipv4.conf.eth0.rp_filter", "0", 0o644),
    ]);
    let r = rows_on(
        &[file("v.conf", "net.ipv4.conf.eth0/100.rp_filter = 2\n")],
        d.path(),
        CheckOptions::default(),
    );
    let v = row(&r, "net.ipv4.conf.eth0/100.rp_filter");
    assert_eq!(v.status, Status::Missing);
    assert!(
        v.note
            .starts_with("no interface eth0.100 here (not in /proc/sys/net/ipv4/conf)"),
        "{}",
        v.note
    );
    assert!(!v.note.contains("not on this kernel"), "{}", v.note);
}

/// sock_diag agrees with the kernel's text tables: the TIME_WAIT sockets and listeners a
/// fresh namespace holds, counted both ways.
#[test]
fn sock_diag_agrees_with_proc_net_tcp() {
    NetNs::run(|_| {
        use std::io::Read;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        for _ in 0..5 {
            let c = std::net::TcpStream::connect(addr).unwrap();
            let (mut s, _) = l.accept().unwrap();
            drop(c);
            let mut b = [0u8; 1];
            let _ = s.read(&mut b);
        }
        use tuning::host::TcpState;
        // The last server close's FIN reaches its client through the loopback softirq, which
        // may run after `drop` returns: wait (bounded) until all five clients are in
        // TIME_WAIT, after which nothing in this namespace changes for 60 s.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let diag = loop {
            let d = tuning::host::tcp_sockets(&[TcpState::TimeWait, TcpState::Listen]).unwrap();
            let tw = d.iter().filter(|s| s.state == TcpState::TimeWait).count();
            if tw >= 5 || std::time::Instant::now() > deadline {
                break d;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let text = std::fs::read_to_string("/proc/thread-self/net/tcp").unwrap();
        let proc_: Vec<_> = tuning::host::parse_proc_net_tcp(&text)
            .into_iter()
            .filter(|s| matches!(s.state, TcpState::TimeWait | TcpState::Listen))
            .collect();
        let key = |v: &[tuning::host::TcpSocket]| {
            let mut k: Vec<String> = v.iter().map(|s| s.describe()).collect();
            k.sort();
            k
        };
        assert_eq!(key(&diag), key(&proc_));
        assert_eq!(
            diag.iter()
                .filter(|s| s.state == TcpState::TimeWait)
                .count(),
            5
        );
        let listen = tuning::host::listening_ports().unwrap();
        assert!(listen.contains(&addr.port()));
    });
}
