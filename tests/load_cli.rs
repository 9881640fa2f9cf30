//! `connstorm load` end to end: the built binary in a child process (so rlimits and signal
//! handlers never touch the test process), against small servers in this test.

use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn connstorm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_connstorm"))
        .arg("load")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run connstorm")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// An accept-and-close loop on 127.0.0.1:0 of the calling thread's namespace, until dropped.
struct Sink {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
    hold: bool,
}

impl Sink {
    fn start(hold: bool) -> Sink {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut held = Vec::new();
            while !s.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((c, _)) if hold => held.push(c),
                    Ok(_) => {}
                    Err(_) => std::thread::sleep(Duration::from_micros(300)),
                }
            }
        });
        Sink {
            addr,
            stop,
            handle: Some(handle),
            hold,
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.hold;
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn closed_port() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

fn cpu() -> String {
    testkit::allowed_cpus()[0].to_string()
}

#[test]
fn bad_input_exits_2_with_a_message_that_says_what_is_wrong() {
    let target = closed_port();
    let cases: &[(&[&str], &str)] = &[
        (&["--rate", "0/s"], "above zero"),
        (&["--rate", "-5/s"], "rate"),
        (&["--duration", "10"], "no unit"),
        (&["--duration", "soon"], "invalid duration"),
        (&["--connect-timeout", "0s"], "zero"),
        (
            &["--rate", "1k/s", "--concurrency", "4"],
            "cannot be used with",
        ),
        (&["--cpus", ""], "empty CPU list"),
        (&["--cpus", "8000"], "cannot pin"),
        (&["--concurrency", "0"], "0"),
        (&["--source", "127.0.0.9-127.0.0.2"], "ends before"),
        (&["--source", "::1"], "family"),
    ];
    for (args, want) in cases {
        let mut all = vec!["--target", target.as_str(), "--warmup", "0s"];
        if !args.contains(&"--duration") {
            all.extend_from_slice(&["--duration", "1s"]);
        }
        all.extend_from_slice(args);
        let o = connstorm(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(want),
            "{args:?}: want {want:?} in {}",
            stderr(&o)
        );
    }
    for bad_target in ["127.0.0.1", "nowhere.invalid:80", "127.0.0.1:99999"] {
        let o = connstorm(&["--target", bad_target, "--duration", "1s"]);
        assert_eq!(o.status.code(), Some(2), "{bad_target}: {}", stderr(&o));
        assert!(stderr(&o).contains("target"), "{}", stderr(&o));
    }
}

#[test]
fn nothing_listening_runs_its_duration_counts_refusals_and_exits_3() {
    let target = closed_port();
    let t = Instant::now();
    let o = connstorm(&[
        "--target",
        &target,
        "--rate",
        "300/s",
        "--duration",
        "600ms",
        "--warmup",
        "0s",
        "--cpus",
        &cpu(),
        "--format",
        "json",
    ]);
    let elapsed = t.elapsed();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(elapsed >= Duration::from_millis(600), "{elapsed:?}");
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    let attempts = j["attempts"].as_u64().unwrap();
    assert!(attempts >= 170, "{j}");
    assert_eq!(
        j["failures"]["ECONNREFUSED"].as_u64(),
        Some(attempts),
        "{j}"
    );
    assert_eq!(j["successes"].as_u64(), Some(0));
}

#[test]
fn json_report_has_rates_percentile_tables_and_the_close_mode() {
    let sink = Sink::start(false);
    let o = connstorm(&[
        "--target",
        &sink.addr.to_string(),
        "--rate",
        "500/s",
        "--duration",
        "1s",
        "--warmup",
        "200ms",
        "--cpus",
        &cpu(),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    assert_eq!(j["close"], "rst");
    assert_eq!(j["offered_per_sec"].as_f64(), Some(500.0));
    let ok = j["successes"].as_u64().unwrap();
    assert!((495..=505).contains(&ok), "{j}");
    assert!(
        (j["cpm"].as_f64().unwrap() - ok as f64 * 60.0).abs() < 1.0,
        "{j}"
    );
    assert_eq!(j["handshake"]["count"].as_u64(), Some(ok));
    assert_eq!(j["handshake"]["percentiles"].as_array().unwrap().len(), 6);
    assert_eq!(j["total"]["attempts"], j["total"]["successes"]);
    assert!(
        j["total"]["attempts"].as_u64().unwrap() > ok,
        "warm-up is in total"
    );
    assert!(!j["timeline"].as_array().unwrap().is_empty());
    assert!(
        stderr(&o).contains("t=   0s"),
        "per-second lines on stderr: {}",
        stderr(&o)
    );
}

#[test]
fn text_report_names_port_exhaustion_and_warns_before_the_run() {
    let o = testkit::NetNs::run(|ns| {
        ns.set_sysctl("net.ipv4.ip_local_port_range", "40000 40009");
        ns.set_sysctl("net.ipv4.tcp_tw_reuse", "0");
        let sink = Sink::start(true);
        // The child process inherits this thread's network namespace.
        connstorm(&[
            "--target",
            &sink.addr.to_string(),
            "--rate",
            "300/s",
            "--duration",
            "700ms",
            "--warmup",
            "0s",
            "--cpus",
            &cpu(),
            "--close",
            "fin",
        ])
    });
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("exceeds the ephemeral-port budget"),
        "{}",
        stderr(&o)
    );
    assert!(out.contains("EADDRNOTAVAIL"), "{out}");
    assert!(out.contains("port exhaustion"), "{out}");
    assert!(out.contains("--close fin"), "{out}");
}

#[test]
fn sigint_ends_the_run_early_and_still_prints_the_report() {
    let sink = Sink::start(false);
    let child = Command::new(env!("CARGO_BIN_EXE_connstorm"))
        .args([
            "load",
            "--target",
            &sink.addr.to_string(),
            "--rate",
            "200/s",
            "--duration",
            "60s",
        ])
        .args(["--warmup", "0s", "--cpus", &cpu()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "stopped promptly");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.contains("INTERRUPTED"), "{out}");
    assert!(out.contains("handshake"), "{out}");
}

/// A generator that cannot keep its schedule (one worker offered 1M/s against a closed port) keeps
/// printing its per-second lines, says plainly that it fell behind, and exits 3 when nothing
/// succeeded.
#[test]
fn overloaded_generator_keeps_reporting_warns_and_exits_3_without_successes() {
    let o = testkit::NetNs::run(|_| {
        let target = closed_port();
        connstorm(&[
            "--target",
            &target,
            "--rate",
            "1M/s",
            "--duration",
            "2s",
            "--warmup",
            "0s",
            "--connect-timeout",
            "100ms",
            "--cpus",
            &cpu(),
        ])
    });
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{out}\n{}", stderr(&o));
    assert!(
        stderr(&o).contains("t=   0s") && stderr(&o).contains("t=   1s"),
        "{}",
        stderr(&o)
    );
    assert!(
        out.contains("WARNING: the generator fell behind its schedule"),
        "{out}"
    );
    assert!(out.contains("lower --rate, add --cpus"), "{out}");
}
