//! A multi-host run on one machine: four `connstorm load` processes, each in its own network
//! namespace joined to a server namespace by a veth pair (the closest thing to four load hosts
//! and a server host), started with `--segment i/4 --start-at T` (T = now + 2 s, one instant
//! for all), their records merged by `connstorm merge` and checked against the server's accepts
//! and the server namespace's `Tcp.PassiveOpens`.
//!
//! Needs root and iproute2 (as `.ci/run` provides). Namespaces and child processes are removed
//! (children by PID) when the test ends, also on failure. Bounded: about 10 s.

use crate::shared::exe;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use results::record::{Latency, Role, RunRecord};

const N: usize = 4;
/// The fleet's planned rate, connections per second (each generator takes 500/s).
const RATE: f64 = 2_000.0;
const DURATION_S: u64 = 3;
const PORT: u16 = 9000;

fn ip(args: &[&str]) {
    let out = Command::new(testkit::require_tool("ip", "iproute2"))
        .args(args)
        .output()
        .expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The namespaces and processes of one simulated run; dropping it kills the processes it
/// started (by PID) and deletes the namespaces.
struct Fleet {
    server_ns: String,
    load_ns: Vec<String>,
    children: Vec<Option<testkit::Piped>>,
}

impl Fleet {
    fn create(tag: &str) -> Fleet {
        let mut fleet = Fleet {
            server_ns: format!("csmh-{tag}-srv"),
            load_ns: Vec::new(),
            children: Vec::new(),
        };
        ip(&["netns", "add", &fleet.server_ns]);
        ip(&["-n", &fleet.server_ns, "link", "set", "lo", "up"]);
        for i in 0..N {
            let ns = format!("csmh-{tag}-l{i}");
            ip(&["netns", "add", &ns]);
            fleet.load_ns.push(ns.clone());
            let (vs, vl) = (format!("cm{tag}s{i}"), format!("cm{tag}l{i}"));
            ip(&[
                "link",
                "add",
                &vs,
                "netns",
                &fleet.server_ns,
                "type",
                "veth",
                "peer",
                "name",
                &vl,
                "netns",
                &ns,
            ]);
            ip(&[
                "-n",
                &fleet.server_ns,
                "addr",
                "add",
                &format!("10.201.{i}.1/30"),
                "dev",
                &vs,
            ]);
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("10.201.{i}.2/30"),
                "dev",
                &vl,
            ]);
            for (n, d) in [(&fleet.server_ns, &vs), (&ns, &vl)] {
                ip(&["-n", n, "link", "set", d, "up"]);
            }
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
        }
        fleet
    }

    /// Only the server namespace (loopback up): for generators sharing it with the server.
    fn single(tag: &str) -> Fleet {
        let fleet = Fleet {
            server_ns: format!("csmh-{tag}-one"),
            load_ns: Vec::new(),
            children: Vec::new(),
        };
        ip(&["netns", "add", &fleet.server_ns]);
        ip(&["-n", &fleet.server_ns, "link", "set", "lo", "up"]);
        fleet
    }

    /// Kernel counter `name` of namespace `ns`, read on a thread inside it.
    fn counter(ns: &str, name: &'static str) -> i64 {
        let path = format!("/run/netns/{ns}");
        std::thread::spawn(move || {
            let f = std::fs::File::open(&path).expect("open the namespace");
            nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
            tuning::counters::Snapshot::read_current()
                .expect("read the namespace's counters")
                .counters[name]
        })
        .join()
        .expect("namespace thread")
    }

    fn spawn(&mut self, ns: &str, args: &[String]) -> usize {
        let child = testkit::Piped::spawn(
            Command::new("ip")
                .args(["netns", "exec", ns, exe()])
                .args(args),
        );
        self.children.push(Some(child));
        self.children.len() - 1
    }

    /// The PID of child `k` (still running).
    fn pid(&self, k: usize) -> nix::unistd::Pid {
        let c = self.children[k].as_ref().expect("child already waited for");
        nix::unistd::Pid::from_raw(c.id() as i32)
    }

    /// Runs `f` on a thread inside the server namespace.
    fn in_server<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/run/netns/{}", self.server_ns);
        std::thread::spawn(move || {
            let ns = std::fs::File::open(&path).expect("open the server namespace");
            nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
            f()
        })
        .join()
        .expect("server-namespace thread")
    }

    fn passive_opens(&self) -> i64 {
        self.in_server(|| {
            tuning::counters::Snapshot::read_current()
                .expect("read the server namespace's counters")
                .counters["Tcp.PassiveOpens"]
        })
    }

    fn listening(&self) -> bool {
        self.in_server(|| {
            let tcp = std::fs::read_to_string("/proc/thread-self/net/tcp").unwrap_or_default();
            // local_address 00000000:2328 (port 9000), st 0A (LISTEN).
            tcp.lines().any(|l| {
                l.contains(&format!(":{PORT:04X} ")) && l.split_whitespace().nth(3) == Some("0A")
            })
        })
    }

    /// Waits for child `k` at most `limit`; returns its stdout, stderr and exit code.
    fn wait(&mut self, k: usize, limit: Duration) -> (String, String, Option<i32>) {
        let child = self.children[k].take().expect("child already waited for");
        let (code, out, err) = child.wait(limit);
        (out, err, code)
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        // Children still running are killed and reaped (testkit::Piped's drop).
        self.children.clear();
        for ns in self.load_ns.iter().chain([&self.server_ns]) {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

fn records_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "json"));
    v
}

#[test]
fn four_segments_in_four_namespaces_merge_to_the_servers_exact_count() {
    let _guard = testkit::exclusive();
    let cpus = testkit::allowed_cpus();
    let tag = (std::process::id() % 100_000).to_string();
    let mut fleet = Fleet::create(&tag);
    let dir = tempfile::tempdir().unwrap();

    let server_cpu = cpus[0].to_string();
    let srv = fleet.spawn(
        &fleet.server_ns.clone(),
        &[
            "server",
            "--listen",
            format!("0.0.0.0:{PORT}").as_str(),
            "--cpus",
            server_cpu.as_str(),
            "--engine",
            "epoll",
            "--format",
            "json",
            "--duration",
            "60s",
            "--out",
            dir.path().join("server").to_str().unwrap(),
        ]
        .map(String::from),
    );
    let t0 = Instant::now();
    while !fleet.listening() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the server did not listen in 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let passive_before = fleet.passive_opens();
    let active_before: Vec<i64> = fleet
        .load_ns
        .iter()
        .map(|ns| Fleet::counter(ns, "Tcp.ActiveOpens"))
        .collect();

    // One instant for all four (what `--start-at +2s` means when every generator gets it at
    // once): a relative `+2s` would start each 2 s after its own spawn, milliseconds apart.
    let start_at =
        humantime::format_rfc3339_millis(std::time::SystemTime::now() + Duration::from_secs(2))
            .to_string();
    let mut loads = Vec::new();
    for i in 0..N {
        let out = dir.path().join(format!("seg{i}"));
        let cpu = cpus[(i + 1) % cpus.len()].to_string();
        let args: Vec<String> = [
            "load",
            "--target",
            format!("10.201.{i}.1:{PORT}").as_str(),
            "--rate",
            format!("{RATE}/s").as_str(),
            "--segment",
            format!("{i}/{N}").as_str(),
            "--start-at",
            start_at.as_str(),
            "--warmup",
            "0s",
            "--duration",
            format!("{DURATION_S}s").as_str(),
            "--connect-timeout",
            "1s",
            "--cpus",
            cpu.as_str(),
            "--format",
            "text",
            "--out",
            out.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec();
        let ns = fleet.load_ns[i].clone();
        loads.push((fleet.spawn(&ns, &args), out));
    }
    let mut files = Vec::new();
    for (k, out) in &loads {
        let (_, err, code) = fleet.wait(*k, Duration::from_secs(30));
        assert_eq!(code, Some(0), "load exited {code:?}: {err}");
        let recs = records_in(out);
        assert_eq!(recs.len(), 1, "one record in {}: {err}", out.display());
        files.push(recs[0].clone());
    }
    nix::sys::signal::kill(fleet.pid(srv), nix::sys::signal::Signal::SIGINT).unwrap();
    let (srv_out, srv_err, code) = fleet.wait(srv, Duration::from_secs(15));
    assert_eq!(code, Some(0), "server: {srv_err}");
    let passive = fleet.passive_opens() - passive_before;
    let active: i64 = fleet
        .load_ns
        .iter()
        .zip(&active_before)
        .map(|(ns, b)| Fleet::counter(ns, "Tcp.ActiveOpens") - b)
        .sum();
    let report: serde_json::Value = serde_json::from_str(&srv_out).expect("server JSON report");
    let accepted: u64 = report["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["accepted"].as_u64().unwrap())
        .sum();

    let server_records = records_in(&dir.path().join("server"));
    assert_eq!(server_records.len(), 1, "server record: {srv_err}");
    let merged_path = dir.path().join("merged.json");
    let out = Command::new(exe())
        .arg("merge")
        .args(&files)
        .args(&server_records)
        .args(["-o", merged_path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "merge: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged = RunRecord::read(&merged_path).unwrap();
    assert_eq!(merged.role, Role::Merged);
    let p = &merged.phases[0];

    // Exact: the generators' successes are the server's accepts and the server namespace's
    // passive opens (nothing else connects into it).
    assert_eq!(p.successes, accepted, "merged successes vs server accepts");
    assert_eq!(
        accepted as i64, passive,
        "server accepts vs Tcp.PassiveOpens"
    );
    assert!(p.successes > 0);
    // The merge's own cross-check, from the server record, says the same.
    let c = p.cross_check.as_ref().unwrap();
    assert_eq!(c.server_accepted, Some(accepted));
    assert_eq!(c.kernel_passive_opens, Some(passive));
    assert_eq!(c.load_successes, accepted);
    assert!(c.agree, "{}", c.note);
    // Four namespaces, four generators: each namespace's Tcp.ActiveOpens counted once and
    // summed, equal to what the test read in the four namespaces.
    assert_eq!(p.counters["Tcp.ActiveOpens"], active, "{}", c.note);
    assert_eq!(c.kernel_active_opens, Some(active));
    assert!(c.note.contains("namespace 4 (1 generator)"), "{}", c.note);

    // The merged histogram is the four histograms' sum, bucket by bucket.
    let mut sum = None::<hdrhistogram::Histogram<u64>>;
    let mut segments = Vec::new();
    for f in &files {
        let r = RunRecord::read(f).unwrap();
        segments.push(r.segment.as_ref().unwrap().index);
        let h = r.phases[0]
            .histograms
            .decode(Latency::Handshake)
            .unwrap()
            .unwrap();
        match &mut sum {
            None => sum = Some(h),
            Some(s) => s.add(&h).unwrap(),
        }
    }
    segments.sort_unstable();
    assert_eq!(segments, vec![0, 1, 2, 3]);
    let sum = sum.unwrap();
    let got = p.histograms.decode(Latency::Handshake).unwrap().unwrap();
    assert_eq!(got.len(), sum.len());
    let buckets = |h: &hdrhistogram::Histogram<u64>| -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    };
    assert_eq!(buckets(&got), buckets(&sum));
    assert_eq!(got.len(), p.successes);

    // `report` reads the generators', the server's and the merged records.
    for f in files.iter().chain(&server_records).chain([&merged_path]) {
        let out = Command::new(exe()).arg("report").arg(f).output().unwrap();
        assert!(
            out.status.success(),
            "report {}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The server's record reads as the accept server's report, with its exact accepts.
    let out = Command::new(exe())
        .arg("report")
        .arg(&server_records[0])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("nothing measured"), "{text}");
    let accepted_text = common::numfmt::count(accepted);
    assert!(
        text.contains(&format!("accepted {accepted_text} in ")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "cross-check: server accepted {accepted_text}, kernel PassiveOpens {accepted_text}: agree"
        )),
        "{text}"
    );

    // The fleet's rate: within 1% of the planned total.
    let achieved = p.achieved_per_sec.unwrap();
    let err = (achieved - RATE).abs() / RATE;
    assert!(
        err < 0.01,
        "merged rate {achieved:.1}/s is {:.2}% off the planned {RATE}/s ({} successes in {:.3} s)",
        err * 100.0,
        p.successes,
        p.measured_secs
    );
}

/// Two generators sharing one network namespace (with the server, on loopback): each record's
/// counters are the whole namespace's, so the merge must count them once, not twice.
#[test]
fn two_generators_in_one_namespace_count_its_counters_once() {
    let _guard = testkit::exclusive();
    let cpus = testkit::allowed_cpus();
    let tag = (std::process::id() % 100_000).to_string();
    let mut fleet = Fleet::single(&tag);
    let ns = fleet.server_ns.clone();
    let dir = tempfile::tempdir().unwrap();
    let srv = fleet.spawn(
        &ns,
        &[
            "server",
            "--listen",
            format!("127.0.0.1:{PORT}").as_str(),
            "--cpus",
            cpus[0].to_string().as_str(),
            "--engine",
            "epoll",
            "--format",
            "json",
            "--duration",
            "60s",
            "--out",
            dir.path().join("server").to_str().unwrap(),
        ]
        .map(String::from),
    );
    let t0 = Instant::now();
    while !fleet.listening() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no listener in 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let active_before = Fleet::counter(&ns, "Tcp.ActiveOpens");
    let passive_before = fleet.passive_opens();
    let start_at =
        humantime::format_rfc3339_millis(std::time::SystemTime::now() + Duration::from_secs(2))
            .to_string();
    let mut loads = Vec::new();
    for i in 0..2 {
        let out = dir.path().join(format!("seg{i}"));
        let args: Vec<String> = [
            "load",
            "--target",
            format!("127.0.0.1:{PORT}").as_str(),
            "--rate",
            "1000/s",
            "--segment",
            format!("{i}/2").as_str(),
            "--start-at",
            start_at.as_str(),
            "--warmup",
            "0s",
            "--duration",
            "2s",
            "--connect-timeout",
            "1s",
            "--cpus",
            cpus[(i + 1) % cpus.len()].to_string().as_str(),
            "--out",
            out.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec();
        loads.push((fleet.spawn(&ns, &args), out));
    }
    let mut files = Vec::new();
    for (k, out) in &loads {
        let (_, err, code) = fleet.wait(*k, Duration::from_secs(30));
        assert_eq!(code, Some(0), "load exited {code:?}: {err}");
        let recs = records_in(out);
        assert_eq!(recs.len(), 1, "one record in {}: {err}", out.display());
        files.push(recs[0].clone());
    }
    nix::sys::signal::kill(fleet.pid(srv), nix::sys::signal::Signal::SIGINT).unwrap();
    let (srv_out, srv_err, code) = fleet.wait(srv, Duration::from_secs(15));
    assert_eq!(code, Some(0), "server: {srv_err}");
    let active = Fleet::counter(&ns, "Tcp.ActiveOpens") - active_before;
    let passive = fleet.passive_opens() - passive_before;
    let report: serde_json::Value = serde_json::from_str(&srv_out).expect("server JSON report");
    let accepted: u64 = report["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["accepted"].as_u64().unwrap())
        .sum();

    let recs: Vec<RunRecord> = files.iter().map(|f| RunRecord::read(f).unwrap()).collect();
    let id = recs[0]
        .counters_netns
        .clone()
        .expect("the record names its namespace");
    assert_eq!(recs[1].counters_netns.as_ref(), Some(&id), "one namespace");
    // Each record holds the whole namespace's ActiveOpens (both generators' connections): the
    // one that finished last saw all of them.
    let own: Vec<i64> = recs
        .iter()
        .map(|r| r.phases[0].counters["Tcp.ActiveOpens"])
        .collect();
    assert_eq!(own.iter().copied().max(), Some(active), "{own:?}");
    let successes: Vec<u64> = recs
        .iter()
        .map(|r| r.phases[0].cross_check.as_ref().unwrap().load_successes)
        .collect();
    assert!(
        own.iter().zip(&successes).all(|(&a, &s)| a > s as i64),
        "{own:?} vs {successes:?}"
    );

    let server_records = records_in(&dir.path().join("server"));
    let merged_path = dir.path().join("merged.json");
    let out = Command::new(exe())
        .arg("merge")
        .args(&files)
        .args(&server_records)
        .args(["-o", merged_path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "merge: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged = RunRecord::read(&merged_path).unwrap();
    let p = &merged.phases[0];
    let c = p.cross_check.as_ref().unwrap();
    // Counted once: the namespace's own figure, not the two records' sum.
    assert_eq!(p.counters["Tcp.ActiveOpens"], active);
    assert_eq!(c.kernel_active_opens, Some(active));
    assert_eq!(c.load_successes, successes.iter().sum::<u64>());
    assert_eq!(c.load_successes, accepted);
    assert_eq!(accepted as i64, passive);
    assert_eq!(c.kernel_passive_opens, Some(passive));
    assert!(
        c.note.contains("namespace 1 (2 generators)") && c.agree,
        "{}",
        c.note
    );
}
