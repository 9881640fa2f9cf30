//! The kernel profile: the access check on fixture procfs trees, the aggregation and the named
//! contention points from synthetic callchains, and one real profile of a loopback connect loop.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tuning::profile::{
    aggregate, check_access, render_text, ContentionKind, Frame, Profile, ProfileConfig,
    ProfileError, Profiler, SideCpus, Space, Stack,
};

use super::util::put;

/// CapEff of root: every capability up to CAP_CHECKPOINT_RESTORE (40).
const ROOT_CAPS: &str = "000001ffffffffff";
/// CAP_PERFMON (38) alone.
const PERFMON_ONLY: &str = "0000004000000000";

/// A procfs fixture: the two sysctls, `self/status` with `cap_eff`, and a kallsyms whose first
/// address is `first_addr` (no kallsyms file when `None`).
fn proc_tree(
    dir: &Path,
    paranoid: Option<&str>,
    kptr: &str,
    cap_eff: &str,
    first_addr: Option<&str>,
) -> PathBuf {
    if let Some(p) = paranoid {
        put(dir, "sys/kernel/perf_event_paranoid", &format!("{p}\n"));
    }
    put(dir, "sys/kernel/kptr_restrict", &format!("{kptr}\n"));
    put(
        dir,
        "self/status",
        &format!("Name:\tconnstorm\nCapInh:\t0000000000000000\nCapEff:\t{cap_eff}\n"),
    );
    if let Some(a) = first_addr {
        put(dir, "kallsyms", &format!("{a} T _stext\n{a} T _text\n"));
    }
    dir.to_path_buf()
}

const REAL: Option<&str> = Some("ffffffff81000000");
const ZERO: Option<&str> = Some("0000000000000000");

#[test]
fn access_is_refused_with_the_setting_to_change() {
    let d = tempfile::tempdir().unwrap();
    let at = |name: &str| d.path().join(name);

    // Debian's default (2) without capabilities: CPU-wide events are forbidden.
    let e = check_access(&proc_tree(&at("a"), Some("2"), "0", "0", REAL)).unwrap_err();
    assert!(matches!(e, ProfileError::Paranoid { paranoid: 2 }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("sysctl kernel.perf_event_paranoid=0") && msg.contains("CAP_PERFMON"),
        "{msg}"
    );
    // 1 still forbids a CPU-wide event (perf_allow_cpu needs <= 0), and Ubuntu's 4 too.
    for p in ["1", "4"] {
        let e = check_access(&proc_tree(&at(&format!("p{p}")), Some(p), "0", "0", REAL));
        assert!(
            matches!(e, Err(ProfileError::Paranoid { .. })),
            "{p}: {e:?}"
        );
    }

    // CAP_PERFMON opens the event, but kallsyms stays hidden at paranoid 2 without CAP_SYSLOG.
    let e = check_access(&proc_tree(&at("b"), Some("2"), "0", PERFMON_ONLY, REAL)).unwrap_err();
    assert!(
        matches!(
            e,
            ProfileError::KallsymsHidden {
                kptr_restrict: 0,
                paranoid: 2,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("sysctl kernel.kptr_restrict=0"),
        "{e}"
    );

    // kptr_restrict 2 hides addresses from everyone, root included.
    let e = check_access(&proc_tree(&at("c"), Some("-1"), "2", ROOT_CAPS, REAL)).unwrap_err();
    assert!(
        matches!(
            e,
            ProfileError::KallsymsHidden {
                kptr_restrict: 2,
                ..
            }
        ),
        "{e:?}"
    );

    // Settings that allow it but a kallsyms that still reads 0 (an LSM): refused on the file.
    let e = check_access(&proc_tree(&at("d"), Some("0"), "0", "0", ZERO)).unwrap_err();
    assert!(matches!(e, ProfileError::KallsymsHidden { .. }), "{e:?}");

    // No perf events at all, and no kallsyms: each says so.
    let e = check_access(&proc_tree(&at("e"), None, "0", ROOT_CAPS, REAL)).unwrap_err();
    assert!(matches!(e, ProfileError::NoPerfEvents { .. }), "{e:?}");
    assert!(e.to_string().contains("CONFIG_PERF_EVENTS"), "{e}");
    let e = check_access(&proc_tree(&at("f"), Some("0"), "0", "0", None)).unwrap_err();
    assert!(e.to_string().contains("CONFIG_KALLSYMS"), "{e}");

    // Garbage in a sysctl file is an error naming the file, not a panic.
    let e = check_access(&proc_tree(&at("g"), Some("two"), "0", "0", REAL)).unwrap_err();
    assert!(e.to_string().contains("perf_event_paranoid"), "{e}");
}

#[test]
fn access_is_granted_to_root_or_to_a_permissive_host() {
    let d = tempfile::tempdir().unwrap();
    // This VM: Debian's paranoid 2, kptr_restrict 0, run as root.
    let a = check_access(&proc_tree(
        &d.path().join("a"),
        Some("2"),
        "0",
        ROOT_CAPS,
        REAL,
    ))
    .unwrap();
    assert!(a.perfmon_capable && a.syslog_capable);
    assert_eq!((a.paranoid, a.kptr_restrict), (2, Some(0)));
    // Any user once the host allows CPU-wide events and shows kallsyms.
    let a = check_access(&proc_tree(&d.path().join("b"), Some("0"), "0", "0", REAL)).unwrap();
    assert!(!a.perfmon_capable);
    // kptr_restrict 1 with CAP_SYSLOG and CAP_PERFMON.
    let caps = format!("{:016x}", (1u64 << 38) | (1u64 << 34));
    check_access(&proc_tree(&d.path().join("c"), Some("2"), "1", &caps, REAL)).unwrap();
}

fn k(names: &[&str]) -> Vec<Frame> {
    names.iter().map(|n| Frame::kernel(n)).collect()
}

fn stack(pid: u32, frames: Vec<Frame>, count: u64) -> Stack {
    Stack { pid, frames, count }
}

/// 200 samples: 100 idle, and 100 busy of which 50 in the ephemeral-port search (30 of them
/// spinning on a lock it takes), 10 of softirq on the idle task, 40 elsewhere.
fn connect_side() -> Vec<Stack> {
    let connect = ["tcp_v4_connect", "__sys_connect", "do_syscall_64"];
    let mut lock = k(&[
        "native_queued_spin_lock_slowpath",
        "_raw_spin_lock_bh",
        "__inet_hash_connect",
    ]);
    lock.extend(k(&connect));
    lock.push(Frame::user("std::net::tcp::TcpStream::connect"));
    let mut check = k(&["__inet_check_established.isra.0", "__inet_hash_connect"]);
    check.extend(k(&connect));
    vec![
        stack(7, lock, 30),
        stack(7, check, 20),
        stack(
            7,
            k(&["tcp_v4_rcv", "ip_local_deliver", "net_rx_action"]),
            25,
        ),
        // Recursion: `a` twice in one chain counts once inclusive.
        stack(7, k(&["memcpy_orig", "memcpy_orig", "tcp_sendmsg"]), 5),
        stack(9, vec![Frame::user("other [other process]")], 10),
        stack(
            0,
            k(&["pv_native_safe_halt", "default_idle", "do_idle"]),
            100,
        ),
        stack(0, k(&["net_rx_action", "handle_softirqs", "do_idle"]), 10),
    ]
}

fn share(p: &tuning::profile::SideProfile, name: &str) -> (f64, f64) {
    let f = p
        .functions
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("{name} not among {:?}", p.functions));
    (f.self_share, f.inclusive_share)
}

#[test]
fn callchains_aggregate_into_self_and_inclusive_shares_of_busy_time() {
    let side = SideCpus {
        side: "load".into(),
        cpus: vec![1],
    };
    let p = aggregate(&side, &connect_side());
    assert_eq!(
        (p.samples, p.idle_samples, p.busy_samples()),
        (200, 100, 100)
    );
    assert_eq!(share(&p, "native_queued_spin_lock_slowpath"), (0.30, 0.30));
    assert_eq!(share(&p, "__inet_hash_connect"), (0.0, 0.50));
    assert_eq!(share(&p, "tcp_v4_connect"), (0.0, 0.50));
    assert_eq!(share(&p, "net_rx_action"), (0.10, 0.35));
    assert_eq!(share(&p, "memcpy_orig"), (0.05, 0.05));
    assert_eq!(share(&p, "other [other process]"), (0.10, 0.10));
    let user = p
        .functions
        .iter()
        .find(|f| f.name == "std::net::tcp::TcpStream::connect")
        .unwrap();
    assert_eq!((user.space, user.inclusive_share), (Space::User, 0.30));
    // Most self samples first; every self share of busy samples sums to exactly 1 here (all
    // functions kept), and idle leaves are not among them.
    assert_eq!(p.functions[0].name, "native_queued_spin_lock_slowpath");
    let self_sum: f64 = p.functions.iter().map(|f| f.self_share).sum();
    assert!((self_sum - 1.0).abs() < 1e-9, "{self_sum}");
    assert!(p.functions.iter().all(|f| f.name != "pv_native_safe_halt"));
    assert!(p
        .functions
        .iter()
        .all(|f| f.inclusive_share <= 1.0 && f.self_share <= f.inclusive_share));
}

#[test]
fn contention_points_are_named_with_shares_and_lock_callers() {
    let side = SideCpus {
        side: "load".into(),
        cpus: vec![1],
    };
    let p = aggregate(&side, &connect_side());
    let kinds: Vec<ContentionKind> = p.contention.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [ContentionKind::PortSearch, ContentionKind::SpinlockWait],
        "largest inclusive share first; no conntrack, TIME_WAIT, ... when none sampled"
    );
    let port = &p.contention[0];
    assert_eq!(port.what, "ephemeral-port search");
    assert_eq!((port.samples_self, port.samples_inclusive), (20, 50));
    assert_eq!((port.self_share, port.inclusive_share), (0.20, 0.50));
    assert_eq!(port.functions[0].name, "__inet_hash_connect");
    assert_eq!(port.functions[0].share, 0.50);
    assert_eq!(port.functions[1].name, "__inet_check_established.isra.0");
    let lock = &p.contention[1];
    assert_eq!((lock.self_share, lock.inclusive_share), (0.30, 0.30));
    assert_eq!(lock.functions.len(), 1);
    assert_eq!(
        (lock.functions[0].name.as_str(), lock.functions[0].samples),
        ("__inet_hash_connect", 30),
        "the lock's caller is the first frame above the lock functions"
    );

    let text = render_text(&Profile {
        event: "cpu-clock".into(),
        frequency_hz: 997,
        duration_ns: 1_000_000_000,
        collector_cpu: Some(0),
        collector_cpu_ns: 2_000_000,
        symbolize_ns: 0,
        sides: vec![tuning::profile::SideProfile {
            lost_samples: 3,
            ..p.clone()
        }],
        notes: vec![],
    });
    assert!(
        text.contains("load (CPUs 1): 200 samples, 100 busy, 50.0% idle"),
        "{text}"
    );
    assert!(
        text.contains(" 30.0%   30.0%  [k] native_queued_spin_lock_slowpath"),
        "{text}"
    );
    assert!(
        text.contains(
            "contention: ephemeral-port search 50.0% of busy time (self 20.0%), in \
             __inet_hash_connect 50.0%"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "spin-lock waits 30.0% of busy time (self 30.0%), taken in __inet_hash_connect 30.0%"
        ),
        "{text}"
    );
    assert!(text.contains("lost samples: 3"), "{text}");
    let top = text
        .lines()
        .filter(|l| l.contains("[k]") || l.contains("[u]"))
        .count();
    assert!(top <= tuning::profile::TOP_PRINTED, "{text}");
}

#[test]
fn a_profile_survives_the_run_record_round_trip() {
    let side = SideCpus {
        side: "server".into(),
        cpus: vec![2, 3],
    };
    let p = Profile {
        event: "cpu-clock".into(),
        frequency_hz: 997,
        duration_ns: 5,
        collector_cpu: None,
        collector_cpu_ns: 1,
        symbolize_ns: 2,
        sides: vec![aggregate(&side, &connect_side())],
        notes: vec!["x".into()],
    };
    let json = serde_json::to_string(&p).unwrap();
    assert!(json.contains("\"kind\":\"port_search\""), "{json}");
    assert!(json.contains("\"space\":\"kernel\""), "{json}");
    let back: Profile = serde_json::from_str(&json).unwrap();
    assert_eq!(back, p);
}

#[test]
fn a_bad_config_is_refused_before_anything_opens() {
    let mut c = ProfileConfig::new(vec![SideCpus {
        side: "load".into(),
        cpus: vec![],
    }]);
    let e = Profiler::start(&c).unwrap_err();
    assert!(e.to_string().contains("no CPU to profile"), "{e}");
    c.sides[0].cpus = vec![0];
    c.frequency_hz = 0;
    let e = Profiler::start(&c).unwrap_err();
    assert!(e.to_string().contains("outside 1..=50000 Hz"), "{e}");
    c.frequency_hz = 997;
    c.proc_root = "/nonexistent-proc".into();
    let e = Profiler::start(&c).unwrap_err();
    assert!(matches!(e, ProfileError::NoPerfEvents { .. }), "{e:?}");
}

/// Connects and accepts on loopback on the calling thread, pinned to `cpu`, for `limit` or
/// `max` connections; the client closes with RST (SO_LINGER 0) so no TIME_WAIT fills the
/// ephemeral range. Returns the connections made.
fn connect_loop(cpu: usize, limit: Duration, max: u64) -> u64 {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).unwrap();
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let started = Instant::now();
    let mut n = 0;
    while n < max && started.elapsed() < limit {
        let c = std::net::TcpStream::connect(addr).unwrap();
        let (s, _) = listener.accept().unwrap();
        socket2::SockRef::from(&c)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        drop(c);
        drop(s);
        n += 1;
    }
    n
}

/// The real thing, as root on this host: a one-second connect loop on one CPU in a private
/// network namespace, profiled on that CPU. Fails with the reason when perf_event_open is
/// refused; skips (printing why) only on a kernel without perf events.
#[test]
fn a_loopback_connect_loop_is_profiled_with_kernel_symbols() {
    let _x = testkit::exclusive();
    if !Path::new("/proc/sys/kernel/perf_event_paranoid").exists() {
        eprintln!(
            "SKIP a_loopback_connect_loop_is_profiled_with_kernel_symbols: this kernel has no \
             perf events (/proc/sys/kernel/perf_event_paranoid missing, CONFIG_PERF_EVENTS off)"
        );
        return;
    }
    let cpus = testkit::allowed_cpus();
    let bench_cpu = *cpus.last().unwrap();
    let config = ProfileConfig::new(vec![SideCpus {
        side: "load".into(),
        cpus: vec![bench_cpu],
    }]);
    let profiler = Profiler::start(&config).unwrap_or_else(|e| {
        panic!("the profile was refused (this test runs as root and must be able to profile): {e}")
    });
    let connects =
        testkit::NetNs::run(move |_| connect_loop(bench_cpu, Duration::from_secs(1), 500_000));
    let p = profiler.stop().unwrap();
    println!("{connects} connects\n{}", render_text(&p));
    let s = &p.sides[0];
    assert!(connects > 100, "the loop made only {connects} connections");
    assert!(
        s.busy_samples() >= 100,
        "expected ~{} samples in 1 s on CPU {bench_cpu}, got {} busy of {} ({} lost)",
        p.frequency_hz,
        s.busy_samples(),
        s.samples,
        s.lost_samples
    );
    assert!(
        s.functions.iter().any(|f| f.space == Space::Kernel
            && (f.name.starts_with("tcp_") || f.name.starts_with("inet_"))
            && f.inclusive_share > 0.0),
        "no tcp_/inet_ kernel function among {:?}",
        s.functions
    );
    assert!(
        s.unresolved_kernel_frames * 10 < s.kernel_frames,
        "{} of {} kernel frames unresolved",
        s.unresolved_kernel_frames,
        s.kernel_frames
    );
    let self_sum: f64 = s.functions.iter().map(|f| f.self_share).sum();
    assert!(self_sum <= 1.0 + 1e-9, "self shares sum to {self_sum}");
    assert!(s.functions.iter().all(|f| f.inclusive_share <= 1.0));
    assert!(p.collector_cpu.is_some_and(|c| c != bench_cpu) || cpus.len() == 1);
}

/// The access check reads outside input (sysctl files, `CapEff`, the kallsyms line): random bytes
/// in any of them give an error or an answer, never a panic.
#[test]
fn the_access_check_survives_random_proc_files() {
    let d = tempfile::tempdir().unwrap();
    let root = proc_tree(d.path(), Some("0"), "0", ROOT_CAPS, REAL);
    let files = [
        "sys/kernel/perf_event_paranoid",
        "sys/kernel/kptr_restrict",
        "self/status",
        "kallsyms",
    ];
    let alphabet = b"0123456789abcdefx -\n\tCapEff:T_\xff\x00";
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for round in 0..400 {
        let len = (round % 41) + 1;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                alphabet[(x % alphabet.len() as u64) as usize]
            })
            .collect();
        let file = files[round % files.len()];
        let keep = std::fs::read(root.join(file)).unwrap();
        std::fs::write(root.join(file), &bytes).unwrap();
        let _ = check_access(&root);
        std::fs::write(root.join(file), keep).unwrap();
    }
    check_access(&root).unwrap();
}
