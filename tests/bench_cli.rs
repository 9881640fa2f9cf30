//! End-to-end tests of `connstorm bench`, `sweep` and `ab` through the binary.
//!
//! Counts are checked against the kernel's inside private network namespaces (`--netns`), where
//! only the benchmark's own traffic exists, so they must agree exactly.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use results::RunRecord;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_connstorm")
}

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("run connstorm")
}

fn records(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn io_uring_available() -> Result<(), String> {
    // The server library's own probe decides; its answer is what `--engine io-uring` would get.
    match std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled") {
        Ok(v) if v.trim() == "2" => Err("kernel.io_uring_disabled=2".into()),
        _ => Ok(()),
    }
}

fn bench_netns_exact(engine: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "bench",
        "--netns",
        "--duration",
        "2s",
        "--engine",
        engine,
        "--format",
        "json",
        "--out",
        dir.path().to_str().unwrap(),
        "--label",
        engine,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {stderr}");
    let printed: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("--format json prints the record");
    let files = records(dir.path());
    assert_eq!(files.len(), 1, "one record written");
    let rec = RunRecord::read(&files[0]).unwrap();
    assert_eq!(printed["run"]["engine"], rec.run.engine.as_str());
    let want_engine = if engine == "io-uring" {
        "io_uring"
    } else {
        "epoll"
    };
    assert_eq!(rec.run.engine, want_engine);
    assert!(rec.run.netns);
    assert!(!rec.run.interrupted);
    assert_eq!(rec.phases.len(), 2, "peak and latency phases");
    for p in &rec.phases {
        let c = p.cross_check.as_ref().expect("cross-check present");
        assert!(c.agree, "{}: {}", p.name, c.note);
        let server = c.server_accepted.unwrap();
        assert!(server > 0, "{}: no connection", p.name);
        assert_eq!(server, c.load_successes, "{}", p.name);
        assert_eq!(c.kernel_passive_opens, Some(server as i64), "{}", p.name);
        assert_eq!(
            c.kernel_active_opens,
            Some(server as i64 + p.failed() as i64),
            "{}",
            p.name
        );
        assert_eq!(
            p.counters.get("Tcp.PassiveOpens").copied(),
            Some(server as i64)
        );
        // The measured part is a subset of everything the kernel counted.
        assert!(p.successes <= server);
        let h = p
            .histograms
            .decode(results::record::Latency::Handshake)
            .unwrap()
            .unwrap();
        assert_eq!(
            h.len(),
            p.successes,
            "{}: one handshake sample per success",
            p.name
        );
    }
    let lat = rec.phase("latency").unwrap();
    let offered = lat.offered_per_sec.unwrap();
    let peak = rec.phase("peak").unwrap().achieved_per_sec;
    assert!(
        (offered - 0.8 * peak).abs() < 1.0,
        "latency phase offers 80% of the peak: {offered} vs {peak}"
    );
}

#[test]
fn bench_in_namespaces_agrees_with_the_kernel_epoll() {
    bench_netns_exact("epoll");
}

#[test]
fn bench_in_namespaces_agrees_with_the_kernel_io_uring() {
    if let Err(why) = io_uring_available() {
        eprintln!("skipping the io_uring variant: {why}");
        return;
    }
    bench_netns_exact("io-uring");
}

#[test]
fn record_round_trips_with_the_printed_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "bench",
        "--netns",
        "--duration",
        "1s",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let rec = RunRecord::read(&records(dir.path())[0]).unwrap();
    let peak = rec.phase("peak").unwrap();
    let cpm = format!("PEAK: {} CPM", group(peak.cpm));
    assert!(
        text.contains(&cpm),
        "summary shows the recorded peak {cpm:?}:\n{text}"
    );
    assert!(
        text.contains(&format!("record: {}", records(dir.path())[0].display())),
        "{text}"
    );
    // Written, read back, written again: the same document.
    let again = rec.write_atomic(&dir.path().join("again")).unwrap();
    assert_eq!(RunRecord::read(&again).unwrap(), rec);
}

fn group(n: f64) -> String {
    let s = format!("{:.0}", n);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn interrupted_run_still_writes_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(bin())
        .args([
            "bench",
            "--netns",
            "--duration",
            "20s",
            "--out",
            dir.path().to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "stops promptly after Ctrl-C"
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = records(dir.path());
    assert_eq!(files.len(), 1);
    let rec = RunRecord::read(&files[0]).unwrap();
    assert!(rec.run.interrupted, "record marked interrupted");
    assert!(!rec.phases.is_empty(), "what ran is recorded");
    assert!(rec.phases[0].attempts > 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("interrupted"));
}

#[test]
fn target_mode_loads_an_external_server() {
    // A plain accept loop stands in for a gateway; it counts what it accepted.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    l.set_nonblocking(true).unwrap();
    let acceptor = std::thread::spawn(move || {
        let mut n = 0u64;
        while !s2.load(std::sync::atomic::Ordering::Relaxed) {
            match l.accept() {
                Ok(_) => n += 1,
                Err(_) => std::thread::sleep(Duration::from_micros(200)),
            }
        }
        while l.accept().is_ok() {
            n += 1;
        }
        n
    });
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "bench",
        "--target",
        &addr.to_string(),
        "--duration",
        "1s",
        "--concurrency",
        "4",
        "--load-cpus",
        "0",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let accepted = acceptor.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec = RunRecord::read(&records(dir.path())[0]).unwrap();
    assert_eq!(rec.run.target.as_deref(), Some(addr.to_string().as_str()));
    assert_eq!(rec.run.engine, "external");
    let total: u64 = rec
        .phases
        .iter()
        .map(|p| p.cross_check.as_ref().unwrap().load_successes)
        .sum();
    assert!(total > 0);
    assert_eq!(
        total, accepted,
        "every handshake we counted reached the external server"
    );
    assert!(rec.phases.iter().all(|p| p.server.is_none()));
}

#[test]
fn bad_options_exit_2_with_one_clear_line() {
    let cases: &[(&[&str], &str)] = &[
        (&["bench", "--duration", "abc"], "duration"),
        (&["bench", "--duration", "0s"], "zero"),
        (&["bench", "--rate", "0/s"], "above zero"),
        (&["bench", "--server-cpus", "9999"], "CPU 9999"),
        (&["bench", "--load-cpus", ""], "CPU"),
        (&["bench", "--engine", "dpdk"], "engine"),
        (&["bench", "--mode", "shout"], "mode"),
        (&["bench", "--target", "nohost"], "HOST:PORT"),
        (&["bench", "--target", "127.0.0.1:1", "--netns"], "exclude"),
        (&["bench", "--rtt", "1ms"], "--netns"),
        (&["sweep", "--slo", "fast"], "SLO"),
        (&["sweep", "--from", "90%", "--to", "10%"], "--from"),
        (&["ab", "--trials", "1"], "nothing distinguishes"),
        (&["ab", "--toggle", "sysctl:../etc/passwd=1,2"], "toggle"),
        (
            &[
                "ab",
                "--netns",
                "--toggle",
                "sysctl:net.ipv4.tcp_timestamps=1,0",
            ],
            "per network namespace",
        ),
        (&["bench", "--target", "127.0.0.1:0"], "port 0"),
        (&["bench", "--server-cpus", "0,0"], "more than once"),
    ];
    for (args, needle) in cases {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: expected {needle:?} in {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
}

/// `ab` with a sysctl toggle, inside a private namespace so the host is not touched: the toggle
/// is restored after the run, and also when a setup command fails midway.
#[test]
fn ab_restores_toggles_after_success_and_failure() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let script = format!(
        "set -e; ip link set lo up; echo 1 > /proc/sys/net/ipv4/tcp_timestamps; \
         {bin} ab --trials 1 --toggle sysctl:net.ipv4.tcp_timestamps=0,2 --duration 1s --format json --out {out_dir}/ok >{out_dir}/ok.out 2>{out_dir}/ok.err; \
         echo ok-after=$(cat /proc/sys/net/ipv4/tcp_timestamps); \
         if {bin} ab --trials 2 --toggle sysctl:net.ipv4.tcp_timestamps=0,2 --b-setup false --duration 1s --out {out_dir}/fail >{out_dir}/fail.out 2>{out_dir}/fail.err; then echo fail-rc=0; else echo fail-rc=$?; fi; \
         echo fail-after=$(cat /proc/sys/net/ipv4/tcp_timestamps)",
        bin = bin()
    );
    let out = Command::new("unshare")
        .args(["-n", "sh", "-c", &script])
        .output()
        .expect("unshare (util-linux)");
    let text = String::from_utf8_lossy(&out.stdout);
    let err_ok = std::fs::read_to_string(dir.path().join("ok.err")).unwrap_or_default();
    assert!(
        out.status.success(),
        "{text} {} {err_ok}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("ok-after=1"),
        "restored after a normal run: {text} {err_ok}"
    );
    assert!(
        text.contains("fail-rc=1"),
        "a failing setup fails the run: {text}"
    );
    assert!(
        text.contains("fail-after=1"),
        "restored after a failure: {text}"
    );
    let fail_err = std::fs::read_to_string(dir.path().join("fail.err")).unwrap();
    assert!(fail_err.contains("B setup"), "{fail_err}");
    let fail_out = std::fs::read_to_string(dir.path().join("fail.out")).unwrap();
    assert_eq!(fail_out, "", "no comparison table before the error");
    // `--format json` prints the comparison as JSON, sides named by the toggle's values.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ok.out")).unwrap())
            .unwrap_or_else(|e| panic!("ab --format json printed no JSON ({e}): {err_ok}"));
    assert_eq!(json["a"]["name"], "net.ipv4.tcp_timestamps=0");
    assert_eq!(json["b"]["name"], "net.ipv4.tcp_timestamps=2");
    assert_eq!(
        json["metrics"][0]["verdict"], "too_few_trials",
        "1 trial a side"
    );
    assert_eq!(
        records(&dir.path().join("ok")).len(),
        2,
        "one record per trial"
    );
}

#[test]
fn sweep_finds_a_knee_in_its_own_record() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "sweep",
        "--netns",
        "--steps",
        "2",
        "--from",
        "5%",
        "--to",
        "10%",
        "--step-duration",
        "1s",
        "--probe-duration",
        "1s",
        "--slo",
        "p50<1s",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec = RunRecord::read(&records(dir.path())[0]).unwrap();
    let names: Vec<&str> = rec.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["peak", "step-1", "step-2"]);
    assert!(text.contains("knee:"), "{text}");
    assert!(text.contains("CPM"), "{text}");
    for p in &rec.phases {
        assert!(
            p.cross_check.as_ref().unwrap().agree,
            "{}: {:?}",
            p.name,
            p.cross_check
        );
    }
    // Each phase's measured part has its real start: after the previous phase's, and wall
    // clock = run start + monotonic offset; every timeline second carries its histogram.
    let started = rec.run.started_unix_ms.unwrap();
    let mut last_end_ms = 0.0;
    for p in &rec.phases {
        let off = p.start_offset_ms.unwrap();
        assert!(
            off >= last_end_ms,
            "{}: starts at {off} ms, previous ended at {last_end_ms}",
            p.name
        );
        assert!(
            p.start_unix_ms.unwrap().abs_diff(started + off as u64) <= 1,
            "{}",
            p.name
        );
        last_end_ms = off + p.measured_secs * 1e3;
        assert!(
            !p.timeline.is_empty() && p.timeline.iter().all(|r| r.handshake.is_some()),
            "{}",
            p.name
        );
    }
    assert!(text.contains("dropped") && text.contains("late"), "{text}");
}
