//! Issue 11: sysctl files as people write them. Each numbered item has fixture files under
//! `tests/fixtures/sysctld/`; plans are checked on the fixture /proc/sys tree
//! (`fixtures/sysctld/host`), and the items that write are applied and reverted inside a fresh
//! network namespace.

use std::path::{Path, PathBuf};

use testkit::NetNs;
use tuning::plan::{self, CheckOptions, Prediction, Row, Status};
use tuning::sysctl::Key;
use tuning::sysctl::Preset;
use tuning::sysctl::ProcSys;
use tuning::sysctl::{Fate, Pattern, SourceFile};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysctld")
}

fn host() -> PathBuf {
    dir().join("host")
}

/// The fixture file `name`, named `name` in `file:line` (so expectations stay short).
fn file(name: &str) -> SourceFile {
    SourceFile {
        name: name.to_string(),
        text: std::fs::read_to_string(dir().join(name)).unwrap(),
    }
}

fn preset(name: &str, root: &Path) -> Preset {
    Preset::from_sysctl_d(&[file(name)], root).unwrap()
}

fn rows(p: &Preset, root: &Path, opts: CheckOptions) -> Vec<Row> {
    plan::check(
        p,
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

fn fate(p: &Preset, line: usize) -> &Fate {
    &p.lines.iter().find(|l| l.origin.line == line).unwrap().fate
}

#[test]
fn item1_globs_expand_over_the_fixture_tree_with_dotted_interface_names() {
    let keys = Pattern::parse("net.ipv4.conf.*.rp_filter")
        .unwrap()
        .expand(&host());
    let names: Vec<&str> = keys.iter().map(Key::as_str).collect();
    assert_eq!(
        names,
        [
            "net.ipv4.conf.all.rp_filter",
            "net.ipv4.conf.default.rp_filter",
            "net.ipv4.conf.enp3s0/200.rp_filter",
            "net.ipv4.conf.eth0.rp_filter",
            "net.ipv4.conf.lo.rp_filter",
            "net.ipv4.conf.lxc0.rp_filter",
            "net.ipv4.conf.lxcbr0.rp_filter",
        ]
    );
    let slash = Pattern::parse("net/ipv4/conf/lxc*/rp_filter")
        .unwrap()
        .expand(&host());
    assert_eq!(slash.len(), 2);
}

#[test]
fn item1_sysctl_d_syntax_resolves_as_systemd_sysctl_does() {
    let p = preset("01-syntax.conf", &host());
    let got: Vec<(String, String, String, bool)> = p
        .sysctls
        .iter()
        .map(|e| {
            (
                e.key.to_string(),
                e.value.clone(),
                e.origin.clone(),
                e.optional,
            )
        })
        .collect();
    let want = [
        (
            "net.ipv4.conf.all.rp_filter",
            "2",
            "01-syntax.conf:3",
            false,
        ),
        (
            "net.ipv4.conf.default.rp_filter",
            "2",
            "01-syntax.conf:3",
            false,
        ),
        (
            "net.ipv4.conf.lxc0.rp_filter",
            "0",
            "01-syntax.conf:4",
            true,
        ),
        (
            "net.ipv4.conf.lxcbr0.rp_filter",
            "0",
            "01-syntax.conf:4",
            true,
        ),
        ("net.ipv4.conf.lo.rp_filter", "0", "01-syntax.conf:6", false),
        ("net.ipv4.tcp_syncookies", "1", "01-syntax.conf:7", false),
        (
            "net.ipv4.conf.enp3s0/200.forwarding",
            "1",
            "01-syntax.conf:8",
            false,
        ),
        (
            "net.ipv4.conf.enp3s0/200.rp_filter",
            "1",
            "01-syntax.conf:9",
            false,
        ),
        ("net.core.somaxconn", "16384", "01-syntax.conf:11", false),
        ("net.ipv4.tcp_sack", "1", "01-syntax.conf:12", false),
    ];
    let want: Vec<(String, String, String, bool)> = want
        .iter()
        .map(|(k, v, o, opt)| (k.to_string(), v.to_string(), o.to_string(), *opt))
        .collect();
    assert_eq!(got, want);
    // eth0 is excluded from the glob by line 5; lo and enp3s0.200 are set explicitly.
    let Fate::Effective { keys, left } = fate(&p, 3) else {
        panic!("{:?}", fate(&p, 3))
    };
    assert_eq!(keys.len(), 2);
    assert!(left
        .iter()
        .any(|l| l.starts_with("net.ipv4.conf.eth0.rp_filter (excluded at 01-syntax.conf:5")));
    assert!(left
        .iter()
        .any(|l| l.contains("set explicitly at 01-syntax.conf:6")));
    assert!(
        matches!(fate(&p, 5), Fate::Excludes { keys } if keys.len() == 1 && keys[0].as_str() == "net.ipv4.conf.eth0.rp_filter")
    );
    assert!(
        matches!(fate(&p, 10), Fate::Overridden { by, .. } if by == "01-syntax.conf:11"),
        "{:?}",
        fate(&p, 10)
    );
    assert!(
        matches!(fate(&p, 13), Fate::Overridden { why, .. } if why.contains("same key and value"))
    );
    assert!(matches!(fate(&p, 14), Fate::NoEffect { why } if why.contains("no key")));
    assert_eq!(
        p.sysctls
            .iter()
            .find(|e| e.key.as_str() == "net.ipv4.conf.lxc0.rp_filter")
            .unwrap()
            .overrides,
        ["01-syntax.conf:3 (2)"]
    );
}

#[test]
fn item1_several_files_etc_beats_run_beats_usr_then_sorted_by_name() {
    let found = tuning::sysctl::system_files(&host());
    let names: Vec<String> = found
        .iter()
        .map(|f| f.path.strip_prefix(host()).unwrap().display().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "etc/sysctl.d/50-default.conf",
            "etc/sysctl.d/60-masked.conf",
            "usr/lib/sysctl.d/90-cni.conf"
        ]
    );
    assert_eq!(found[0].shadowed.len(), 2, "the /run and /usr copies");
    assert!(found[1].masked && !found[0].masked);
    let files: Vec<PathBuf> = found
        .iter()
        .filter(|f| !f.masked)
        .map(|f| f.path.clone())
        .collect();
    let p = Preset::load_all(&files, &host()).unwrap();
    let some = p
        .sysctls
        .iter()
        .find(|e| e.key.as_str() == "net.core.somaxconn")
        .unwrap();
    assert_eq!(some.value, "32768");
    assert!(
        some.origin.ends_with("usr/lib/sysctl.d/90-cni.conf:2"),
        "{}",
        some.origin
    );
    assert!(
        some.overrides[0].contains("etc/sysctl.d/50-default.conf:5 (16384)"),
        "{:?}",
        some.overrides
    );
    assert!(
        !p.sysctls
            .iter()
            .any(|e| e.key.as_str() == "net.ipv4.tcp_syncookies"),
        "the masked vendor file is not read"
    );
    assert!(
        !p.sysctls
            .iter()
            .any(|e| e.key.as_str() == "net.ipv4.conf.all.rp_filter"),
        "excluded from the glob"
    );
}

#[test]
fn item2_a_status_key_with_dash_is_skipped_and_without_it_apply_is_refused() {
    let p = preset("02-status-key.conf", &host());
    let r = rows(&p, &host(), CheckOptions::default());
    let count = row(&r, "net.netfilter.nf_conntrack_count");
    // The fixture holds 2944: the same value is simply ok.
    assert_eq!(count.status, Status::Ok);
    let edited = Preset::from_sysctl_d(
        &[SourceFile {
            name: "x.conf".into(),
            text: "-net.netfilter.nf_conntrack_count = 3000\nnet.ipv4.tcp_fin_timeout = 17\n"
                .into(),
        }],
        &host(),
    )
    .unwrap();
    let r = rows(&edited, &host(), CheckOptions::default());
    let count = row(&r, "net.netfilter.nf_conntrack_count");
    assert_eq!(count.status, Status::Skipped);
    assert!(count.note.contains("status key"), "{}", count.note);
    assert!(count.note.contains("`-` prefix"), "{}", count.note);
    let strict = Preset::from_sysctl_d(
        &[SourceFile {
            name: "y.conf".into(),
            text: "net.netfilter.nf_conntrack_count = 3000\n".into(),
        }],
        &host(),
    )
    .unwrap();
    // Without `-`: skipped with one line saying why (the write would fail EACCES, which
    // systemd-sysctl ignores); with --strict apply refuses, for the same reason.
    let r = rows(&strict, &host(), CheckOptions::default());
    let pred = Prediction::of(&r);
    assert!(pred.refusals.is_empty(), "{pred:?}");
    assert!(pred.skips[0].1.contains("status key"), "{pred:?}");
    let r = rows(
        &strict,
        &host(),
        CheckOptions {
            strict: true,
            ..CheckOptions::default()
        },
    );
    let pred = Prediction::of(&r);
    assert_eq!(pred.refusals.len(), 1, "{pred:?}");
    assert!(pred.refusals[0].1.contains("status key"), "{pred:?}");
}

#[test]
fn item2_apply_skips_a_status_key_line_with_dash_inside_a_netns() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    let text = std::fs::read_to_string(dir().join("02-status-key.conf"))
        .unwrap()
        .replace("2944", "123456");
    NetNs::run(move |ns| {
        let before = ns.sysctl("net.ipv4.tcp_fin_timeout");
        let p = Preset::from_sysctl_d(
            &[SourceFile {
                name: "02.conf".into(),
                text,
            }],
            Path::new("/"),
        )
        .unwrap();
        let mut io = ProcSys { root: "/".into() };
        let r = plan::check(
            &p,
            &io,
            CheckOptions {
                netns_only: true,
                allow_decrease: false,
                strict: false,
            },
        );
        let count = row(&r, "net.netfilter.nf_conntrack_count");
        // Loaded nf_conntrack: a 0444 status key; not loaded: no such key. Both are skipped.
        assert!(
            matches!(count.status, Status::Skipped | Status::MissingOptional),
            "{count:?}"
        );
        assert!(count.note.contains("`-` prefix"), "{}", count.note);
        let pred = Prediction::of(&r);
        assert!(pred.refusals.is_empty(), "{pred:?}");
        assert_eq!(pred.writes.len(), 1);
        let rep = plan::apply(&r, &mut io, Path::new("/"), &state_dir, "t").unwrap();
        assert_eq!(rep.changed.len(), 1);
        assert_eq!(ns.sysctl("net.ipv4.tcp_fin_timeout"), "17");
        let snap = tuning::plan::Snapshot::read(rep.snapshot.as_ref().unwrap()).unwrap();
        plan::revert(&snap, &mut io, Path::new("/"), false).unwrap();
        assert_eq!(ns.sysctl("net.ipv4.tcp_fin_timeout"), before);
    });
}

#[test]
fn item3_tw_reuse_without_timestamps_is_a_contradiction_and_the_budget_reads_it() {
    let p = preset("03-tw-reuse-no-timestamps.conf", &host());
    let io = ProcSys { root: host() };
    let r = plan::check(&p, &io, CheckOptions::default());
    let c = plan::contradictions(&r, &io);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].key.as_str(), "net.ipv4.tcp_tw_reuse");
    assert!(
        c[0].message.contains("03-tw-reuse-no-timestamps.conf:3"),
        "{}",
        c[0].message
    );
    assert!(c[0].message.contains("tcp_twsk_unique"), "{}", c[0].message);
    // The port budget reads the same settings from a tree holding them.
    let d = tempfile::tempdir().unwrap();
    for (k, v) in [
        ("net/ipv4/ip_local_port_range", "32768 60999"),
        ("net/ipv4/tcp_tw_reuse", "1"),
        ("net/ipv4/tcp_timestamps", "0"),
    ] {
        let f = d.path().join("proc/sys").join(k);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, v).unwrap();
    }
    let s = tuning::advice::PortSettings::read(&ProcSys {
        root: d.path().to_path_buf(),
    })
    .unwrap();
    let e = tuning::advice::port_budget(&s, 1, true, true);
    assert!(
        matches!(e.reuse, tuning::advice::PortReuse::No { .. }),
        "{e:?}"
    );
    assert!(e.explain.contains("tcp_timestamps = 0"), "{}", e.explain);
    let per = e.per_sec.unwrap();
    assert!((470.0..471.0).contains(&per), "{per}");
}

/// Opens connections from one source until connect() fails or `n` succeed; the client closes
/// first, so each port goes to TIME_WAIT. Returns (successes, first error).
fn connect_close_first(n: usize) -> (usize, Option<std::io::Error>) {
    use std::io::Read;
    // A fixed port outside the tiny ephemeral range, the same for every batch: reuse is about
    // the same 4-tuple, and a listener on port 0 would take a port from the range.
    let l = std::net::TcpListener::bind("127.0.0.1:5555").unwrap();
    let addr = l.local_addr().unwrap();
    let mut ok = 0;
    for _ in 0..n {
        match std::net::TcpStream::connect(addr) {
            Ok(c) => {
                let (mut s, _) = l.accept().unwrap();
                drop(c); // client FIN first: TIME_WAIT on the client side.
                let mut buf = [0u8; 1];
                let _ = s.read(&mut buf); // wait for that FIN, then close
                ok += 1;
            }
            Err(e) => return (ok, Some(e)),
        }
    }
    (ok, None)
}

#[test]
fn item3_reuse_needs_timestamps_for_real_as_the_budget_says() {
    let outcome = |timestamps: &'static str| {
        NetNs::run(move |ns| {
            ns.set_sysctl("net.ipv4.ip_local_port_range", "40000 40003");
            ns.set_sysctl("net.ipv4.tcp_tw_reuse", "1");
            ns.set_sysctl("net.ipv4.tcp_timestamps", timestamps);
            let s = tuning::advice::PortSettings::read(&ProcSys { root: "/".into() }).unwrap();
            let est = tuning::advice::port_budget(&s, 1, true, true);
            let (first, _) = connect_close_first(4);
            // Older than tcp_tw_reuse_delay (1000 ms default), with a newer timestamp tick.
            std::thread::sleep(std::time::Duration::from_millis(1500));
            let (second, err) = connect_close_first(2);
            (est, first, second, err.and_then(|e| e.raw_os_error()))
        })
    };
    let (est, first, second, err) = outcome("0");
    assert!(
        matches!(est.reuse, tuning::advice::PortReuse::No { .. }),
        "{est:?}"
    );
    assert_eq!(first, 4);
    assert_eq!(second, 0, "no reuse without timestamps");
    assert_eq!(err, Some(libc_eaddrnotavail()));
    let (est, first, second, err) = outcome("1");
    assert!(
        matches!(est.reuse, tuning::advice::PortReuse::Yes { .. }),
        "{est:?}"
    );
    assert_eq!(first, 4);
    assert_eq!(
        (second, err),
        (2, None),
        "TIME_WAIT ports reused with timestamps"
    );
}

fn libc_eaddrnotavail() -> i32 {
    99
}

#[test]
fn item4_aliases_later_line_wins_and_legacy_keys_point_to_replacements() {
    let p = preset("04-aliases.conf", &host());
    let keys: Vec<&str> = p.sysctls.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["net.ipv4.conf.all.forwarding"]);
    assert!(
        matches!(fate(&p, 2), Fate::Overridden { by, why } if by == "04-aliases.conf:3" && why.contains("one kernel value")),
        "{:?}",
        fate(&p, 2)
    );
    let l = preset("04-legacy.conf", &host());
    let r = rows(&l, &host(), CheckOptions::default());
    let ct = row(&r, "net.ipv4.netfilter.ip_conntrack_max");
    assert_eq!(ct.status, Status::MissingOptional);
    assert!(
        ct.note.contains("use net.netfilter.nf_conntrack_max"),
        "{}",
        ct.note
    );
    let rec = row(&r, "net.ipv4.tcp_tw_recycle");
    assert!(rec.note.contains("removed in 4.12"), "{}", rec.note);
    assert_eq!(Prediction::of(&r).writes.len(), 1);
}

#[test]
fn item4_alias_apply_in_a_netns_ends_with_the_later_value() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    let text = std::fs::read_to_string(dir().join("04-aliases.conf")).unwrap();
    NetNs::run(move |ns| {
        ns.set_sysctl("net.ipv4.conf.all.forwarding", "1");
        assert_eq!(
            ns.sysctl("net.ipv4.ip_forward"),
            "1",
            "one value, two names"
        );
        let p = Preset::from_sysctl_d(
            &[SourceFile {
                name: "04.conf".into(),
                text,
            }],
            Path::new("/"),
        )
        .unwrap();
        let mut io = ProcSys { root: "/".into() };
        let r = plan::check(
            &p,
            &io,
            CheckOptions {
                netns_only: true,
                allow_decrease: false,
                strict: false,
            },
        );
        let rep = plan::apply(&r, &mut io, Path::new("/"), &state_dir, "t").unwrap();
        assert_eq!(rep.changed.len(), 1);
        assert_eq!(ns.sysctl("net.ipv4.conf.all.forwarding"), "0");
        assert_eq!(ns.sysctl("net.ipv4.ip_forward"), "0", "the later line won");
        let snap = tuning::plan::Snapshot::read(rep.snapshot.as_ref().unwrap()).unwrap();
        plan::revert(&snap, &mut io, Path::new("/"), false).unwrap();
        assert_eq!(ns.sysctl("net.ipv4.ip_forward"), "1");
    });
}

#[test]
fn item5_lowering_needs_allow_decrease_and_harmful_values_warn_with_sources() {
    let p = preset("05-lower-harmful.conf", &host());
    let r = rows(&p, &host(), CheckOptions::default());
    let s = row(&r, "net.core.somaxconn");
    assert_eq!(s.status, Status::Lower);
    assert!(s.note.contains("--allow-decrease"), "{}", s.note);
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("< 4096") && w.contains("ip-sysctl.rst")),
        "{:?}",
        s.warnings
    );
    let pred = Prediction::of(&r);
    assert_eq!(
        pred.refusals
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>(),
        ["net.core.somaxconn", "net.ipv4.tcp_max_tw_buckets"]
    );
    let sack = row(&r, "net.ipv4.tcp_sack");
    assert_eq!(sack.status, Status::Change);
    assert!(sack
        .warnings
        .iter()
        .any(|w| w.contains("SACK") || w.contains("selective")));
    let r = rows(
        &p,
        &host(),
        CheckOptions {
            netns_only: false,
            allow_decrease: true,
            strict: false,
        },
    );
    assert_eq!(row(&r, "net.core.somaxconn").status, Status::Change);
    assert!(row(&r, "net.ipv4.tcp_max_tw_buckets")
        .warnings
        .iter()
        .any(|w| w.contains("TCPTimeWaitOverflow")));
    assert!(Prediction::of(&r).refusals.is_empty());
}

#[test]
fn item6_the_plan_predicts_what_apply_refuses_inside_a_netns() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    let text = std::fs::read_to_string(dir().join("06-predict.conf")).unwrap();
    NetNs::run(move |ns| {
        let fin = ns.sysctl("net.ipv4.tcp_fin_timeout");
        let p = Preset::from_sysctl_d(
            &[SourceFile {
                name: "06.conf".into(),
                text,
            }],
            Path::new("/"),
        )
        .unwrap();
        let mut io = ProcSys { root: "/".into() };
        let r = plan::check(
            &p,
            &io,
            CheckOptions {
                netns_only: true,
                allow_decrease: false,
                strict: false,
            },
        );
        assert_eq!(row(&r, "net.ipv4.tcp_tw_reuse").status, Status::Rejected);
        let range = row(&r, "net.ipv4.ip_local_port_range");
        assert_eq!(range.status, Status::Rejected);
        assert!(
            range.note.contains("ip_unprivileged_port_start"),
            "{}",
            range.note
        );
        assert_eq!(
            row(&r, "net.core.netdev_max_backlog").status,
            Status::Refused
        );
        let vs = row(&r, "net.ipv4.vs.conntrack");
        if Path::new("/proc/sys/net/ipv4/vs").exists() {
            assert_eq!(vs.status, Status::Change, "ip_vs is loaded here");
        } else {
            assert_eq!(vs.status, Status::Missing);
            assert!(vs.note.contains("modprobe ip_vs"), "{}", vs.note);
        }
        let pred = Prediction::of(&r);
        assert!(pred.refusals.len() >= 2, "{pred:?}");
        let err = plan::apply(&r, &mut io, Path::new("/"), &state_dir, "t").unwrap_err();
        assert!(
            matches!(err, plan::ApplyError::Blocked { ref keys } if keys.len() == pred.refusals.len())
        );
        assert_eq!(
            ns.sysctl("net.ipv4.tcp_fin_timeout"),
            fin,
            "nothing changed"
        );
        // The predicted rejections are the kernel's: a direct write gets EINVAL.
        for (k, v) in [
            ("net/ipv4/tcp_tw_reuse", "3"),
            ("net/ipv4/ip_local_port_range", "1000 65535"),
        ] {
            let e = std::fs::write(format!("/proc/sys/{k}"), v).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(22), "{k}");
        }
    });
}

#[test]
fn item8_a_script_becomes_a_sysctl_d_file_and_the_rest_is_explained() {
    let text = std::fs::read_to_string(dir().join("08-tune.sh")).unwrap();
    let lines = tuning::sysctl::import_script(&text);
    let body = tuning::sysctl::imported_sysctl_d(&lines, "08-tune.sh");
    let p = Preset::from_sysctl_d(
        &[SourceFile {
            name: "out.conf".into(),
            text: body.clone(),
        }],
        &host(),
    )
    .unwrap();
    let got: Vec<String> = p
        .sysctls
        .iter()
        .map(|e| format!("{} = {}", e.key, e.value))
        .collect();
    assert_eq!(
        got,
        [
            "net.ipv4.tcp_tw_reuse = 1",
            "net.ipv4.ip_local_port_range = 1024 65535",
            "net.core.somaxconn = 65535",
            "net.ipv4.tcp_max_syn_backlog = 65535",
            "net.ipv4.tcp_fin_timeout = 15",
            "net.ipv4.conf.eth0/100.rp_filter = 2",
        ]
    );
    let bad: Vec<(usize, String)> = lines
        .iter()
        .flat_map(|l| {
            l.outcomes.iter().filter_map(move |o| match o {
                tuning::sysctl::ImportOutcome::NotUnderstood { advice } => {
                    Some((l.line, advice.clone()))
                }
                _ => None,
            })
        })
        .collect();
    let at: Vec<usize> = bad.iter().map(|(l, _)| *l).collect();
    assert_eq!(at, [9, 10, 11, 12, 13]);
    for (needle, line) in [
        ("limits.d", 9),
        ("modules-load.d", 10),
        ("udev", 11),
        ("systemd.link", 12),
        ("--file /etc/sysctl.d/99-net.conf", 13),
    ] {
        assert!(
            bad.iter().any(|(l, a)| *l == line && a.contains(needle)),
            "{line}: {needle} in {bad:?}"
        );
    }
    assert!(
        body.contains("08-tune.sh:9 not imported: ulimit -n 1048576"),
        "{body}"
    );
}

#[test]
fn item1_other_glob_forms_expand_as_glob7_and_a_glob_exclusion_excludes_nothing() {
    let p = preset("01b-glob-forms.conf", &host());
    let got: Vec<String> = p
        .sysctls
        .iter()
        .map(|e| format!("{} = {} ({})", e.key, e.value, e.origin))
        .collect();
    assert_eq!(
        got,
        [
            "net.ipv4.conf.lxc0.forwarding = 1 (01b-glob-forms.conf:2)",
            "net.ipv4.conf.enp3s0/200.forwarding = 0 (01b-glob-forms.conf:3)",
            "net.ipv4.conf.enp3s0/200.rp_filter = 0 (01b-glob-forms.conf:3)",
            "net.ipv4.conf.all.rp_filter = 1 (01b-glob-forms.conf:4)",
            "net.ipv4.conf.default.rp_filter = 1 (01b-glob-forms.conf:4)",
            "net.ipv4.conf.lxc0.rp_filter = 2 (01b-glob-forms.conf:7)",
            "net.ipv4.conf.lxcbr0.rp_filter = 2 (01b-glob-forms.conf:7)",
        ]
    );
    // `-pattern*` alone: systemd-sysctl looks exclusions up by exact key, so nothing is kept
    // away from line 7's glob, and the line says why.
    let Fate::NoEffect { why } = fate(&p, 6) else {
        panic!("{:?}", fate(&p, 6))
    };
    assert!(
        why.contains("excludes nothing") && why.contains("-KEY"),
        "{why}"
    );
}

#[test]
fn text_forms_crlf_tabs_and_space_runs_resolve_as_systemd_reads_them() {
    let p = preset("09-text-forms.conf", &host());
    let got: Vec<(String, String, bool)> = p
        .sysctls
        .iter()
        .map(|e| (e.key.to_string(), e.value.clone(), e.optional))
        .collect();
    let want = [
        ("net.ipv4.tcp_fin_timeout", "25", false),
        ("net.core.somaxconn", "8192", false),
        ("net.ipv4.ip_local_port_range", "40000 60999", false),
        ("net.ipv4.tcp_no_such_key", "1", true),
    ];
    let want: Vec<(String, String, bool)> = want
        .iter()
        .map(|(k, v, o)| (k.to_string(), v.to_string(), *o))
        .collect();
    assert_eq!(got, want);
    assert!(matches!(fate(&p, 6), Fate::Comment), "{:?}", fate(&p, 6));
    let r = rows(&p, &host(), CheckOptions::default());
    let missing = row(&r, "net.ipv4.tcp_no_such_key");
    assert_eq!(missing.status, Status::MissingOptional);
    assert!(missing.note.contains("`-` prefix"), "{}", missing.note);
    assert_eq!(
        Prediction::of(&r).writes,
        [
            (
                Key::parse("net.ipv4.tcp_fin_timeout").unwrap(),
                "25".to_string()
            ),
            (
                Key::parse("net.core.somaxconn").unwrap(),
                "8192".to_string()
            ),
            (
                Key::parse("net.ipv4.ip_local_port_range").unwrap(),
                "40000 60999".to_string()
            ),
        ]
    );
}

/// A directory, a FIFO (which would block a plain read), a huge file, /dev/null and a file
/// that is not UTF-8, passed as files: refused naming the file (and line), or read as empty.
#[test]
fn files_people_pass_directories_fifos_huge_and_binary_are_refused_by_name() {
    let d = tempfile::tempdir().unwrap();
    let err = |p: &Path| {
        Preset::load_all(&[p.to_path_buf()], &host())
            .unwrap_err()
            .to_string()
    };
    let e = err(d.path());
    assert!(
        e.contains("is a directory") && e.contains(&d.path().display().to_string()),
        "{e}"
    );
    let fifo = d.path().join("f.conf");
    let mk = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(mk.success());
    let e = err(&fifo);
    assert!(e.contains("is a FIFO"), "{e}");
    let big = d.path().join("big.conf");
    std::fs::write(
        &big,
        "#".repeat(tuning::sysctl::MAX_FILE_BYTES as usize + 1),
    )
    .unwrap();
    let e = err(&big);
    assert!(
        e.contains("1,048,577 bytes, more than the 1,048,576"),
        "{e}"
    );
    let empty = Preset::load_all(&[PathBuf::from("/dev/null")], &host()).unwrap();
    assert!(empty.sysctls.is_empty() && empty.lines.is_empty());
}

/// Every fixture under `refused/` names the line its first comment announces.
#[test]
fn refused_fixtures_name_their_file_and_line() {
    let mut n = 0;
    for e in std::fs::read_dir(dir().join("refused")).unwrap() {
        let path = e.unwrap().path();
        let head = std::fs::read(&path).unwrap();
        let head = String::from_utf8_lossy(&head);
        let spec = head
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# refused: line "))
            .unwrap_or_else(|| panic!("{}: no `# refused: line N: text` header", path.display()));
        let (line, needle) = spec.split_once(": ").unwrap();
        let e = Preset::load_all(std::slice::from_ref(&path), &host())
            .unwrap_err()
            .to_string();
        let at = format!("{}:{line}: ", path.display());
        assert!(e.starts_with(&at), "{at} in {e}");
        assert!(e.contains(needle), "{needle} in {e}");
        n += 1;
    }
    assert!(n >= 6, "{n}");
}

/// The sysctl.d fixtures (not the scripts, not the refused ones), named as in `file:line`.
/// The fixture files, and the corpus of files people bring (`corpus/`, issue 34).
fn sysctl_d_fixtures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [dir(), dir().join("corpus")]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Every fixture file through check and plan: no line is silently dropped. Each line is
/// blank or a comment, sets keys that have a row in the plan (and the plan's text says what
/// became of them), or is named with a reason (overridden by which line, sets nothing and
/// why, excludes which keys). Scripts: each line is a sysctl write (which the generated
/// sysctl.d file carries, with its `file:line`), or skipped / not understood with a reason.
#[test]
fn corpus_every_fixture_line_is_accounted_for() {
    let files = sysctl_d_fixtures();
    assert!(files.len() >= 11, "{files:?}");
    let io = ProcSys { root: host() };
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".sh") {
            let lines = tuning::sysctl::import_script(&text);
            assert_eq!(lines.len(), text.lines().count(), "{name}");
            let body = tuning::sysctl::imported_sysctl_d(&lines, &name);
            for l in &lines {
                assert!(!l.outcomes.is_empty(), "{name}:{}", l.line);
                for o in &l.outcomes {
                    match o {
                        tuning::sysctl::ImportOutcome::Sysctl { key, .. } => assert!(
                            body.contains(&format!("# {name}:{}\n", l.line))
                                && body.contains(key.as_str()),
                            "{name}:{} {key} not in {body}",
                            l.line
                        ),
                        tuning::sysctl::ImportOutcome::Skipped { why } => {
                            assert!(!why.is_empty(), "{name}:{}", l.line)
                        }
                        tuning::sysctl::ImportOutcome::NotUnderstood { advice } => {
                            assert!(!advice.is_empty(), "{name}:{}", l.line);
                            assert!(
                                body.contains(&format!("# {name}:{} not imported: ", l.line)),
                                "{name}:{}",
                                l.line
                            );
                        }
                    }
                }
            }
            // What import writes is a sysctl.d file the planner reads whole.
            let out = Preset::from_sysctl_d(
                &[SourceFile {
                    name: "imported.conf".into(),
                    text: body.clone(),
                }],
                &host(),
            )
            .unwrap_or_else(|e| panic!("{name}: {e}\n{body}"));
            assert_eq!(out.lines.len(), body.lines().count(), "{name}");
            continue;
        }
        let p = Preset::from_sysctl_d(
            &[SourceFile {
                name: name.clone(),
                text: text.clone(),
            }],
            &host(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            p.lines.len(),
            text.lines().count(),
            "{name}: one note per line"
        );
        let c = plan::Checked::of(&p, &io, CheckOptions::default());
        let r = &c.rows;
        assert_eq!(r.len(), p.sysctls.len(), "{name}");
        let cmd = format!("connstorm tune apply --file {name} --yes");
        let check_text = tuning::render::check(&p, &c, &cmd);
        let plan_text = tuning::render::plan(&p, &c, false, &cmd);
        for (l, raw) in p.lines.iter().zip(text.lines()) {
            let t = raw.trim();
            let blank_or_comment = t.is_empty() || t.starts_with('#') || t.starts_with(';');
            assert_eq!(
                matches!(l.fate, Fate::Blank | Fate::Comment),
                blank_or_comment,
                "{}: {:?} -> {:?}",
                l.origin,
                t,
                l.fate
            );
            match &l.fate {
                Fate::Blank | Fate::Comment => continue,
                Fate::Effective { keys, .. } => {
                    assert!(!keys.is_empty(), "{}", l.origin);
                    for k in keys {
                        let row = row(r, k.as_str());
                        assert_eq!(row.entry.origin, l.origin.to_string(), "{name}");
                    }
                }
                Fate::Overridden { by, why } => {
                    assert!(!by.is_empty() && !why.is_empty(), "{}", l.origin)
                }
                Fate::NoEffect { why } => assert!(!why.is_empty(), "{}", l.origin),
                Fate::Excludes { .. } => {}
            }
            // Both texts name the line and say what became of it.
            let shown = format!("  {}  {}  -> ", l.origin, l.text);
            for (what, out) in [("check", &check_text), ("plan", &plan_text)] {
                let line = out
                    .lines()
                    .find(|x| x.starts_with(&shown))
                    .unwrap_or_else(|| panic!("{what} does not show {shown:?}:\n{out}"));
                assert!(line.len() > shown.len(), "{what}: {line}");
            }
        }
        let pred = &c.prediction;
        let accounted = pred.writes.len()
            + pred.skips.len()
            + pred.refusals.len()
            + r.iter().filter(|x| x.status == Status::Ok).count();
        assert_eq!(
            accounted,
            r.len(),
            "{name}: every row is written, skipped, refused or ok"
        );
        // Every skip and refusal has its reason in the plan's last line.
        for (k, why) in pred.skips.iter().chain(&pred.refusals) {
            assert!(!why.is_empty(), "{name}: {k}");
            assert!(plan_text.contains(&format!("{k}: {why}")), "{name}: {k}");
        }
    }
}

#[test]
fn item8_script_forms_several_commands_a_line_sysctl_conf_appends_and_here_documents() {
    let text = std::fs::read_to_string(dir().join("08b-script-forms.sh")).unwrap();
    let lines = tuning::sysctl::import_script(&text);
    let got: Vec<String> = lines
        .iter()
        .flat_map(|l| {
            l.outcomes.iter().filter_map(move |o| match o {
                tuning::sysctl::ImportOutcome::Sysctl {
                    key,
                    value,
                    ignore_failure,
                } => Some(format!(
                    "{}:{}{key} = {value}",
                    l.line,
                    if *ignore_failure { "-" } else { "" }
                )),
                _ => None,
            })
        })
        .collect();
    assert_eq!(
        got,
        [
            "3:net.core.somaxconn = 8192",
            "3:net.ipv4.tcp_fin_timeout = 10",
            "4:net.ipv4.tcp_tw_reuse = 1",
            "4:net.ipv4.tcp_timestamps = 1",
            "5:net.ipv4.tcp_syncookies = 1",
            "8:net.ipv4.tcp_max_syn_backlog = 4096",
            "9:-net.ipv4.tcp_no_such_key = 1",
            "12:net.ipv4.tcp_sack = 1",
            "13:net.ipv4.tcp_ecn = 2",
        ]
    );
    let bad: Vec<(usize, String)> = lines
        .iter()
        .flat_map(|l| {
            l.outcomes.iter().filter_map(move |o| match o {
                tuning::sysctl::ImportOutcome::NotUnderstood { advice } => {
                    Some((l.line, advice.clone()))
                }
                _ => None,
            })
        })
        .collect();
    let at: Vec<usize> = bad.iter().map(|(l, _)| *l).collect();
    assert_eq!(at, [10, 14, 15, 16, 19], "{bad:?}");
    for (line, needle) in [
        (10, "a glob written to /etc/sysctl.d/99-tune.conf"),
        (14, "redirects descriptor 1"),
        (15, "net.ipv4.conf.*.rp_filter = 0"),
        (16, "/tmp/notes.txt is not under /proc/sys"),
        (19, "--file /etc/sysctl.conf"),
    ] {
        assert!(
            bad.iter().any(|(l, a)| *l == line && a.contains(needle)),
            "{line}: {needle} in {bad:?}"
        );
    }
    // The body of a here-document into a file that is not a sysctl file is not imported.
    assert!(
        !got.iter().any(|g| g.starts_with("17:")),
        "line 17 is inside /tmp/notes.txt's here-document"
    );
}

/// Writing `conf.all.forwarding` (or `ip_forward`) sets `conf.default` and every interface's
/// forwarding and `conf.all.accept_redirects`; `ipv6 conf.all.disable_ipv6` sets default and every
/// interface. The plan lists what changes, a later line on an interface is planned against the
/// value the earlier write leaves, and revert restores per-interface values the revert's own
/// propagation would otherwise overwrite. Every value is read from the kernel in a private
/// namespace with a veth pair (iproute2).
#[test]
fn forwarding_and_disable_ipv6_side_effects_match_the_kernel() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    NetNs::run(move |ns| {
        let ip = std::process::Command::new("ip")
            .args(["link", "add", "v0", "type", "veth", "peer", "name", "v1"])
            .status()
            .expect("`ip` not found: install iproute2");
        assert!(ip.success(), "ip link add veth failed");
        // Per-interface values that differ from what the global writes propagate.
        ns.set_sysctl("net.ipv4.conf.v0.forwarding", "1");
        ns.set_sysctl("net.ipv6.conf.v1.disable_ipv6", "1");
        let keys = [
            "net.ipv4.conf.all.forwarding",
            "net.ipv4.conf.default.forwarding",
            "net.ipv4.conf.lo.forwarding",
            "net.ipv4.conf.v0.forwarding",
            "net.ipv4.conf.v1.forwarding",
            "net.ipv4.conf.all.accept_redirects",
            "net.ipv6.conf.all.disable_ipv6",
            "net.ipv6.conf.default.disable_ipv6",
            "net.ipv6.conf.v0.disable_ipv6",
            "net.ipv6.conf.v1.disable_ipv6",
        ];
        let before: Vec<String> = keys.iter().map(|k| ns.sysctl(k)).collect();
        let text = "net.ipv4.ip_forward = 1\nnet.ipv4.conf.v1.forwarding = 0\n\
                    net.ipv6.conf.all.disable_ipv6 = 1\n";
        let p = Preset::from_sysctl_d(
            &[SourceFile {
                name: "fw.conf".into(),
                text: text.into(),
            }],
            Path::new("/"),
        )
        .unwrap();
        let mut io = ProcSys { root: "/".into() };
        let opts = CheckOptions {
            netns_only: true,
            allow_decrease: false,
            strict: false,
        };
        let r = plan::check(&p, &io, opts);
        let v1 = row(&r, "net.ipv4.conf.v1.forwarding");
        assert_eq!(v1.status, Status::Change, "{}", v1.note);
        assert!(
            v1.note.contains("fw.conf:1") && v1.note.contains("sets it to 1 first"),
            "{}",
            v1.note
        );
        let pred = Prediction::of(&r);
        let mut planned: Vec<(String, String, String)> = pred
            .side_effects
            .iter()
            .map(|w| (w.key.to_string(), w.from.clone(), w.to.clone()))
            .collect();
        planned.sort();
        let t = |k: &str, a: &str, b: &str| (k.to_string(), a.to_string(), b.to_string());
        let mut want = vec![
            t("net.ipv4.conf.all.accept_redirects", "1", "0"),
            t("net.ipv4.conf.default.forwarding", "0", "1"),
            t("net.ipv4.conf.lo.forwarding", "0", "1"),
            t("net.ipv4.conf.v1.forwarding", "0", "1"),
            t("net.ipv6.conf.default.disable_ipv6", "0", "1"),
            t("net.ipv6.conf.lo.disable_ipv6", "0", "1"),
            t("net.ipv6.conf.v0.disable_ipv6", "0", "1"),
        ];
        want.sort();
        assert_eq!(
            planned, want,
            "v0 forwarding and v1 disable_ipv6 are already 1"
        );
        let text = tuning::render::prediction(&pred, "connstorm tune apply --yes");
        assert!(
            text.contains("also sets net.ipv4.conf.lo.forwarding: 0 -> 1")
                && text.contains("devinet.c"),
            "{text}"
        );

        let rep = plan::apply(&r, &mut io, Path::new("/"), &state_dir, "t").unwrap();
        // The kernel did what the plan said, and the later v1 line won over the propagation.
        for (k, _, to) in &want {
            if k != "net.ipv4.conf.v1.forwarding" {
                assert_eq!(&ns.sysctl(k), to, "{k} after apply");
            }
        }
        assert_eq!(ns.sysctl("net.ipv4.conf.v1.forwarding"), "0");
        assert_eq!(ns.sysctl("net.ipv4.conf.all.forwarding"), "1");
        assert!(
            rep.side_effects
                .iter()
                .any(|(k, a, b)| k.as_str() == "net.ipv4.conf.lo.forwarding"
                    && a == "0"
                    && b == "1"),
            "{:?}",
            rep.side_effects
        );

        let snap = tuning::plan::Snapshot::read(rep.snapshot.as_ref().unwrap()).unwrap();
        plan::revert(&snap, &mut io, Path::new("/"), false).unwrap();
        let after: Vec<String> = keys.iter().map(|k| ns.sysctl(k)).collect();
        assert_eq!(
            after, before,
            "revert restores every key, v0.forwarding = 1 and v1.disable_ipv6 = 1 included"
        );
    });
}

/// A glob that covers `conf.all.forwarding` beside its alias `ip_forward`: the plan follows
/// the alias and the side effects in file order, so what apply leaves is what the plan said
/// (and what systemd-sysctl, writing in the same order, leaves).
#[test]
fn a_forwarding_glob_beside_ip_forward_ends_as_the_plan_says() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    NetNs::run(move |ns| {
        let ip = std::process::Command::new("ip")
            .args([
                "link", "add", "v0.200", "type", "veth", "peer", "name", "v1",
            ])
            .status()
            .expect("`ip` not found: install iproute2");
        assert!(ip.success(), "ip link add veth failed");
        let ifaces = ["default", "lo", "v0/200", "v1"];
        let fw = |k: &str| format!("net.ipv4.conf.{k}.forwarding");
        let plan_of = |text: &str, io: &ProcSys| {
            let p = Preset::from_sysctl_d(
                &[SourceFile {
                    name: "ga.conf".into(),
                    text: text.into(),
                }],
                Path::new("/"),
            )
            .unwrap();
            let opts = CheckOptions {
                netns_only: true,
                allow_decrease: false,
                strict: false,
            };
            plan::check(&p, io, opts)
        };
        let mut io = ProcSys { root: "/".into() };

        // a: ip_forward = 1, then the glob sets every conf (all included) to 0: all end at 0.
        ns.set_sysctl(&fw("v0/200"), "1");
        let r = plan_of(
            "net.ipv4.ip_forward = 1\nnet.ipv4.conf.*.forwarding = 0\n",
            &io,
        );
        let all = row(&r, &fw("all"));
        assert_eq!(all.status, Status::Change, "{}", all.note);
        assert!(all.note.contains("ga.conf:1"), "{}", all.note);
        let rep = plan::apply(&r, &mut io, Path::new("/"), &state_dir, "a").unwrap();
        assert_eq!(ns.sysctl("net.ipv4.ip_forward"), "0");
        for i in ["all", "default", "lo", "v0/200", "v1"] {
            assert_eq!(ns.sysctl(&fw(i)), "0", "{i} after case a");
        }
        let snap = tuning::plan::Snapshot::read(rep.snapshot.as_ref().unwrap()).unwrap();
        plan::revert(&snap, &mut io, Path::new("/"), false).unwrap();
        assert_eq!(ns.sysctl(&fw("v0/200")), "1", "revert restores v0.200");
        assert_eq!(ns.sysctl(&fw("all")), "0");

        // b: the glob first, then ip_forward = 1: the later write propagates 1 everywhere,
        // the plan says so, and the glob's v0.200 = 0 is flagged as overwritten.
        let r = plan_of(
            "net.ipv4.conf.*.forwarding = 0\nnet.ipv4.ip_forward = 1\n",
            &io,
        );
        let v0 = row(&r, &fw("v0/200"));
        assert_eq!(v0.status, Status::Change);
        assert!(
            v0.warnings.iter().any(|w| w.contains("overwritten later")
                && w.contains("ga.conf:2")
                && w.contains("ends with 1")),
            "{:?}",
            v0.warnings
        );
        let pred = Prediction::of(&r);
        assert!(
            pred.side_effects
                .iter()
                .any(|w| w.key.as_str() == fw("v0/200") && w.from == "0" && w.to == "1"),
            "{:?}",
            pred.side_effects
        );
        let rep = plan::apply(&r, &mut io, Path::new("/"), &state_dir, "b").unwrap();
        for i in ["all"].iter().chain(ifaces.iter()) {
            assert_eq!(ns.sysctl(&fw(i)), "1", "{i} after case b");
        }
        assert!(
            rep.side_effects
                .iter()
                .any(|(k, a, b)| k.as_str() == fw("v0/200") && a == "0" && b == "1"),
            "{:?}",
            rep.side_effects
        );
        let snap = tuning::plan::Snapshot::read(rep.snapshot.as_ref().unwrap()).unwrap();
        plan::revert(&snap, &mut io, Path::new("/"), false).unwrap();
        assert_eq!(ns.sysctl(&fw("v0/200")), "1");
        for i in ["all", "default", "lo", "v1"] {
            assert_eq!(ns.sysctl(&fw(i)), "0", "{i} after revert b");
        }
    });
}
