//! `connstorm load --http` end to end, in private network namespaces: against connstorm's own
//! `server --mode http` (both engines), and against a small std::net server in this test that
//! answers chunked, close-delimited, 4xx/5xx, truncated and malformed responses. Counts are
//! checked exactly against each other and against the namespace's `Tcp.PassiveOpens`.

use crate::shared::{command, cpus, u, wait_listening};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use testkit::{json, stderr};

const PORT: u16 = 8080;

fn load_http(extra: &[&str], cpu: &str) -> Output {
    let target = format!("127.0.0.1:{PORT}");
    let mut args = vec![
        "load",
        "--target",
        &target,
        "--rate",
        "300/s",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--cpus",
        cpu,
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    command().args(&args).output().expect("run connstorm load")
}

/// The attempts of a report's `total` that failed in an HTTP class (`HTTP ...`).
fn http_failures(total: &serde_json::Value) -> u64 {
    total["failures"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("HTTP "))
        .map(|(_, v)| u(v))
        .sum()
}

/// `load --http` against `server --mode http` in a fresh namespace: requests written = complete
/// responses = 2xx = the load's attempts = the server's accepts = its served count = the
/// namespace's new passive opens, and the bytes are those of the request and response exactly.
fn own_server_round(engine: &str, body: u32) {
    for load_engine in LOAD_ENGINES {
        own_server_load_round(engine, load_engine, body);
    }
}

/// Both connect engines of the load (each reads the response its own way).
const LOAD_ENGINES: [&str; 2] = ["epoll", "io-uring"];

fn own_server_load_round(engine: &str, load_engine: &'static str, body: u32) {
    let (scpu, lcpu) = cpus();
    let engine = engine.to_string();
    let (load, srv, passive) = testkit::NetNs::run(move |ns| {
        let mut server = command()
            .args([
                "server",
                "--listen",
                &format!("127.0.0.1:{PORT}"),
                "--cpus",
                &scpu,
                "--engine",
                &engine,
                "--mode",
                "http",
                "--http-response-bytes",
                &body.to_string(),
                "--duration",
                "30s",
                "--format",
                "json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn connstorm server");
        wait_listening(PORT);
        let before = ns.counter("Tcp.PassiveOpens");
        let load = load_http(&["--http", "--load-engine", load_engine], &lcpu);
        // SIGINT ends the server with its report (exit 0).
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(server.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let _ = server.wait();
        let mut out = String::new();
        server
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let passive = ns.counter("Tcp.PassiveOpens") - before;
        (load, out, passive)
    });
    assert_eq!(
        load.status.code(),
        Some(0),
        "{load_engine}: {}",
        stderr(&load)
    );
    let j = json(&load);
    assert_eq!(
        j["engine"]["engine"],
        load_engine.replace('-', "_"),
        "{}",
        j["engine"]
    );
    let s: serde_json::Value = serde_json::from_str(&srv).expect("server JSON report");
    let h = &j["http"];
    let attempts = u(&j["total"]["attempts"]);
    assert!(attempts >= 150, "{j}");
    let accepted: u64 = s["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| u(&w["accepted"]))
        .sum();
    let served: u64 = s["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| u(&w["served"]))
        .sum();
    for (name, v) in [
        ("requests", u(&h["requests"])),
        ("responses", u(&h["responses"])),
        ("total_requests", u(&h["total_requests"])),
        ("total_responses", u(&h["total_responses"])),
        ("2xx", u(&h["status_classes"]["2xx"])),
        ("successes", u(&j["total"]["successes"])),
        ("server accepted", accepted),
        ("server served", served),
        ("PassiveOpens", passive as u64),
    ] {
        assert_eq!(v, attempts, "{name} != attempts; load {h}\nserver {s}");
    }
    assert_eq!(h["status_classes"].as_object().unwrap().len(), 1, "{h}");
    assert!(h["parse_errors"].as_object().unwrap().is_empty(), "{h}");
    let request = format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nConnection: close\r\n\r\n");
    let response = server::http::response(body);
    assert_eq!(u(&h["bytes_sent"]), attempts * request.len() as u64, "{h}");
    assert_eq!(
        u(&h["bytes_received"]),
        attempts * response.len() as u64,
        "{h}"
    );
    assert_eq!(u(&h["body_bytes"]), attempts * u64::from(body), "{h}");
    assert_eq!(u(&h["response"]["count"]), attempts, "{h}");
    assert_eq!(u(&h["first_byte"]["count"]), attempts, "{h}");
    let p50 = |k: &str| u(&h[k]["percentiles"][0][1]);
    assert!(p50("first_byte") <= p50("response"), "{h}");
    assert!(
        p50("response") >= u(&j["handshake"]["percentiles"][0][1]),
        "{h}\n{j}"
    );
}

#[test]
fn http_load_against_its_own_epoll_server_counts_every_request_once() {
    let _x = testkit::exclusive();
    own_server_round("epoll", 0);
    own_server_round("epoll", 1000);
}

#[test]
fn http_load_against_its_own_io_uring_server_counts_every_request_once() {
    if let Err(why) = server::probe::io_uring() {
        eprintln!("io_uring unavailable here, io-uring round not run: {why}");
        let _x = testkit::exclusive();
        // The epoll engine still has to pass; the skip is printed, never silent.
        return own_server_round("epoll", 5);
    }
    let _x = testkit::exclusive();
    own_server_round("io-uring", 0);
    own_server_round("io-uring", 777);
}

/// The responses of the test server, chosen by connection number (mod the list length), with
/// what the load must make of each: (bytes, status class or parse error, body bytes).
const RESPONSES: [(&[u8], &str, u64); 6] = [
    (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n6;x=y\r\nefghij\r\n0\r\nT: 1\r\n\r\n",
        "2xx",
        10,
    ),
    (b"HTTP/1.0 200 OK\r\nServer: t\r\n\r\nuntil the close", "2xx", 15),
    (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy",
        "5xx",
        4,
    ),
    (b"HTTP/1.1 404 Not Found\r\n\r\nnope", "4xx", 4),
    (b"220 smtp.example ESMTP ready\r\n\r\n", "head", 0),
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
        "truncated",
        0,
    ),
];

/// A one-thread server that reads each request head and writes the next of [`RESPONSES`], then
/// closes; counts per response kind.
struct Fixture {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<[u64; 6]>>,
}

impl Fixture {
    fn start(l: TcpListener) -> Fixture {
        Fixture::start_with(l, RESPONSES.map(|r| r.0))
    }

    /// Answers connection `n` with `responses[n % 6]`.
    fn start_with(l: TcpListener, responses: [&'static [u8]; 6]) -> Fixture {
        l.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut counts = [0u64; 6];
            let mut n = 0usize;
            loop {
                match l.accept() {
                    Ok((c, _)) => {
                        let k = n % responses.len();
                        n += 1;
                        if serve(c, responses[k]) {
                            counts[k] += 1;
                        }
                    }
                    Err(_) if s.load(Ordering::Relaxed) => return counts,
                    Err(_) => std::thread::sleep(Duration::from_micros(200)),
                }
            }
        });
        Fixture {
            stop,
            handle: Some(handle),
        }
    }

    fn finish(mut self) -> [u64; 6] {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().unwrap()
    }
}

/// `Host` is the target as given: `--target localhost:PORT` sends `Host: localhost:PORT` (as
/// curl and wrk do; it sent `Host: 127.0.0.1:PORT`, so a name-based virtual host got the wrong
/// site), an address target sends `IP:PORT`, and `--http-header 'Host: …'` replaces it; on both
/// load engines.
#[test]
fn the_host_header_is_the_target_as_given() {
    let _x = testkit::exclusive();
    let (_, lcpu) = cpus();
    for engine in LOAD_ENGINES {
        for (target, extra, want) in [
            ("localhost", None, format!("Host: localhost:{PORT}")),
            ("127.0.0.1", None, format!("Host: 127.0.0.1:{PORT}")),
            (
                "localhost",
                Some("Host: gw.example"),
                "Host: gw.example".to_string(),
            ),
        ] {
            let lcpu = lcpu.clone();
            let (load, hosts) = testkit::NetNs::run(move |_| {
                let l = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], PORT))).unwrap();
                let handle = std::thread::spawn(move || {
                    let mut hosts = std::collections::BTreeSet::new();
                    l.set_nonblocking(true).unwrap();
                    let until = Instant::now() + Duration::from_secs(5);
                    let mut idle_since = None;
                    while Instant::now() < until {
                        match l.accept() {
                            Ok((mut c, _)) => {
                                idle_since = None;
                                let head = read_head(&mut c).unwrap_or_default();
                                for line in String::from_utf8_lossy(&head).lines() {
                                    if line.to_ascii_lowercase().starts_with("host:") {
                                        hosts.insert(line.to_string());
                                    }
                                }
                                let _ = c.write_all(b"HTTP/1.1 204 No Content\r\n\r\n");
                            }
                            Err(_) => {
                                let t = *idle_since.get_or_insert_with(Instant::now);
                                if !hosts.is_empty() && t.elapsed() > Duration::from_millis(500) {
                                    break;
                                }
                                std::thread::sleep(Duration::from_millis(2));
                            }
                        }
                    }
                    hosts
                });
                let t = format!("{target}:{PORT}");
                let mut args = vec![
                    "load",
                    "--target",
                    &t,
                    "--family",
                    "4",
                    "--rate",
                    "50/s",
                    "--duration",
                    "0.5s",
                    "--warmup",
                    "0s",
                    "--cpus",
                    &lcpu,
                    "--format",
                    "json",
                    "--http",
                    "--load-engine",
                    engine,
                ];
                if let Some(h) = extra {
                    args.extend(["--http-header", h]);
                }
                let load = command().args(&args).output().expect("run connstorm load");
                (load, handle.join().unwrap())
            });
            assert_eq!(
                load.status.code(),
                Some(0),
                "{engine} {target}: {}",
                stderr(&load)
            );
            let want: std::collections::BTreeSet<String> = [want].into();
            assert_eq!(hosts, want, "{engine} {target} {extra:?}");
        }
    }
}

/// Reads a request head (up to its blank line; blocking, 2 s per read); `None` when the client
/// closed or the read failed first.
fn read_head(c: &mut TcpStream) -> Option<Vec<u8>> {
    c.set_nonblocking(false).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    Some(head)
}

/// Reads a request head, writes `resp`, closes; true when all of it was written.
fn serve(mut c: TcpStream, resp: &[u8]) -> bool {
    read_head(&mut c).is_some() && c.write_all(resp).is_ok()
}

#[test]
fn chunked_close_delimited_error_and_malformed_responses_are_counted_exactly() {
    let _x = testkit::exclusive();
    for engine in LOAD_ENGINES {
        mixed_responses_round(engine);
    }
}

fn mixed_responses_round(engine: &'static str) {
    let (_, lcpu) = cpus();
    let (load, counts) = testkit::NetNs::run(move |_| {
        let l = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], PORT))).unwrap();
        let f = Fixture::start(l);
        let load = load_http(&["--http", "/x?y=1", "--load-engine", engine], &lcpu);
        (load, f.finish())
    });
    assert_eq!(load.status.code(), Some(0), "{engine}: {}", stderr(&load));
    let j = json(&load);
    let h = &j["http"];
    let attempts = u(&j["total"]["attempts"]);
    assert_eq!(counts.iter().sum::<u64>(), attempts, "{counts:?} {j}");
    assert!(counts.iter().all(|&c| c >= 20), "{counts:?}");
    let want = |key: &str| -> u64 {
        RESPONSES
            .iter()
            .zip(counts)
            .filter(|((_, k, _), _)| *k == key)
            .map(|(_, c)| c)
            .sum()
    };
    assert_eq!(u(&h["status_classes"]["2xx"]), want("2xx"), "{h}");
    assert_eq!(u(&h["status_classes"]["4xx"]), want("4xx"), "{h}");
    assert_eq!(u(&h["status_classes"]["5xx"]), want("5xx"), "{h}");
    assert_eq!(u(&h["non_2xx_codes"]["404"]), want("4xx"), "{h}");
    assert_eq!(u(&h["non_2xx_codes"]["503"]), want("5xx"), "{h}");
    assert_eq!(h["non_2xx_codes"].as_object().unwrap().len(), 2, "{h}");
    assert_eq!(u(&h["parse_errors"]["head"]), want("head"), "{h}");
    assert_eq!(u(&h["parse_errors"]["truncated"]), want("truncated"), "{h}");
    assert_eq!(
        u(&h["responses"]),
        want("2xx") + want("4xx") + want("5xx"),
        "{h}"
    );
    let body: u64 = RESPONSES
        .iter()
        .zip(counts)
        .map(|((_, _, b), c)| b * c)
        .sum();
    assert_eq!(u(&h["body_bytes"]), body, "{h}");
    let bytes: u64 = RESPONSES
        .iter()
        .zip(counts)
        .map(|((r, _, _), c)| r.len() as u64 * c)
        .sum();
    assert_eq!(u(&h["bytes_received"]), bytes, "{h}");
    assert_eq!(h["request"], "GET /x?y=1", "{h}");
    // A success is a complete, parsed response; a malformed or truncated one is a failure of its
    // own class, never also a success. Every TCP handshake is still counted as one.
    let t = &j["total"];
    assert_eq!(u(&t["successes"]), u(&h["total_responses"]), "{t}");
    assert_eq!(
        u(&t["failures"]["HTTP parse error: head"]),
        want("head"),
        "{t}"
    );
    assert_eq!(
        u(&t["failures"]["HTTP parse error: truncated"]),
        want("truncated"),
        "{t}"
    );
    assert_eq!(t["failures"].as_object().unwrap().len(), 2, "{t}");
    assert_eq!(
        u(&t["successes"]) + want("head") + want("truncated"),
        attempts,
        "{t}"
    );
    assert_eq!(u(&t["handshakes"]), attempts, "{t}");
    assert_eq!(u(&j["successes"]), u(&h["responses"]), "{j}");
}

/// Every response unreadable: nothing succeeded, so the run exits 3 with each attempt a parse
/// error failure (and still a TCP handshake).
#[test]
fn http_load_with_only_unparseable_responses_exits_3() {
    let _x = testkit::exclusive();
    for engine in LOAD_ENGINES {
        unparseable_round(engine);
    }
}

fn unparseable_round(engine: &'static str) {
    let (_, lcpu) = cpus();
    const BAD: &[u8] = b"garbage\r\n\r\n";
    const SHORT: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab";
    let dir = tempfile::tempdir().unwrap();
    let od = dir.path().to_str().unwrap().to_string();
    let (load, counts) = testkit::NetNs::run(move |_| {
        let l = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], PORT))).unwrap();
        let f = Fixture::start_with(l, [BAD, SHORT, BAD, SHORT, BAD, SHORT]);
        let load = load_http(&["--http", "--load-engine", engine, "--out", &od], &lcpu);
        (load, f.finish())
    });
    assert_eq!(load.status.code(), Some(3), "{engine}: {}", stderr(&load));
    let j = json(&load);
    let t = &j["total"];
    let attempts = u(&t["attempts"]);
    assert_eq!(counts.iter().sum::<u64>(), attempts, "{counts:?} {j}");
    let bad = counts[0] + counts[2] + counts[4];
    let short = counts[1] + counts[3] + counts[5];
    assert!(bad > 0 && short > 0, "{counts:?}");
    assert_eq!(u(&t["successes"]), 0, "{t}");
    assert_eq!(u(&t["handshakes"]), attempts, "{t}");
    assert_eq!(u(&t["failures"]["HTTP parse error: head"]), bad, "{t}");
    assert_eq!(
        u(&t["failures"]["HTTP parse error: truncated"]),
        short,
        "{t}"
    );
    assert!(j["cpm"].is_null(), "{j}");
    // Its record reads back: each failed exchange has its TCP handshake in the histogram (the
    // record was refused as damaged: "holds 26,412 samples but the phase has 13,206 successes").
    let files = testkit::record_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let rep = command().arg("report").arg(&files[0]).output().unwrap();
    assert_eq!(rep.status.code(), Some(0), "{engine}: {}", stderr(&rep));
    let text = String::from_utf8_lossy(&rep.stdout);
    assert!(
        text.contains(&format!("HTTP parse error: head {}", common_count(bad))),
        "{engine}: {text}"
    );
}

#[test]
fn bad_http_options_exit_2_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope.bin");
    let missing = missing.to_str().unwrap();
    for (args, want) in [
        (vec!["--http", "--http-method", "GE T"], "method"),
        (vec!["--http", "--http-body", missing], "--http-body"),
        (
            vec!["--http", "--http-body", "/dev/zero"],
            "not a regular file",
        ),
        (
            vec!["--http", "--http-header", "Connection: keep-alive"],
            "sets Connection",
        ),
        (vec!["--http", "--http-header", "NoColon"], "Name: value"),
        (vec!["--http", "relative"], "must start with `/`"),
        (vec!["--http-method", "GET"], "--http"),
        (vec!["--http", "--expect-bytes", "4"], "cannot be used with"),
    ] {
        let mut all = vec!["load", "--target", "127.0.0.1:9", "--duration", "1s"];
        all.extend_from_slice(&args);
        let o = command().args(&all).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(want),
            "{args:?}: want {want:?} in {}",
            stderr(&o)
        );
    }
    let o = command()
        .args([
            "server",
            "--listen",
            "127.0.0.1:0",
            "--http-response-bytes",
            "10",
            "--duration",
            "1s",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("needs --mode http"), "{}", stderr(&o));
}

/// `server --mode http` sent heads that are not HTTP (`garbage\r\n\r\n`, a bare CRLF pair, a
/// TLS ClientHello's first bytes) beside real requests: it answers none of them, counts each in
/// `bad_requests` (not in `served`), and answers the real requests; accepted = ΔPassiveOpens.
fn bad_heads_round(engine: &str) {
    let (scpu, _) = cpus();
    let engine = engine.to_string();
    let (replies, srv, passive) = testkit::NetNs::run(move |ns| {
        let mut server = command()
            .args([
                "server",
                "--listen",
                &format!("127.0.0.1:{PORT}"),
                "--cpus",
                &scpu,
                "--engine",
                &engine,
                "--mode",
                "http",
                "--duration",
                "30s",
                "--format",
                "json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn connstorm server");
        wait_listening(PORT);
        let before = ns.counter("Tcp.PassiveOpens");
        let heads: [&[u8]; 5] = [
            b"garbage\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            b"\r\n\r\n",
            b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n",
            b"GET /a HTTP/1.0\r\n\r\n",
        ];
        let replies: Vec<Vec<u8>> = heads
            .iter()
            .map(|h| {
                let mut c = TcpStream::connect(("127.0.0.1", PORT)).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                c.write_all(h).unwrap();
                let mut got = Vec::new();
                // A reset (the server closed with our bytes unread) reads as an error: no reply.
                let _ = c.read_to_end(&mut got);
                got
            })
            .collect();
        let passive = ns.counter("Tcp.PassiveOpens") - before;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(server.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let _ = server.wait();
        let mut out = String::new();
        server
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        (replies, out, passive)
    });
    let s: serde_json::Value = serde_json::from_str(&srv).expect("server JSON report");
    let sum = |k: &str| -> u64 {
        s["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| u(&w[k]))
            .sum()
    };
    let answered: Vec<bool> = replies
        .iter()
        .map(|r| r.starts_with(b"HTTP/1.1 204 "))
        .collect();
    assert_eq!(answered, [false, true, false, false, true], "{replies:?}");
    for (i, r) in replies.iter().enumerate() {
        if !answered[i] {
            assert!(r.is_empty(), "head {i} got {r:?}");
        }
    }
    assert_eq!(sum("bad_requests"), 3, "{s}");
    assert_eq!(sum("served"), 2, "{s}");
    assert_eq!(sum("accepted"), 5, "{s}");
    assert_eq!(passive, 5, "{s}");
}

#[test]
fn http_server_does_not_answer_a_head_that_is_not_http() {
    bad_heads_round("epoll");
    match server::probe::io_uring() {
        Ok(()) => bad_heads_round("io-uring"),
        Err(why) => eprintln!("io_uring unavailable here, io-uring round not run: {why}"),
    }
}

/// `load --http --out DIR` keeps the HTTP counts and both HTTP histograms in its record:
/// `report` prints them, `merge` of two segments' records sums them exactly.
#[test]
fn http_load_record_keeps_http_counts_for_report_and_merge() {
    let _x = testkit::exclusive();
    let (scpu, lcpu) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("runs");
    let od = out_dir.clone();
    let loads = testkit::NetNs::run(move |_| {
        let mut server = command()
            .args([
                "server",
                "--listen",
                &format!("127.0.0.1:{PORT}"),
                "--cpus",
                &scpu,
                "--engine",
                "epoll",
                "--mode",
                "http",
                "--duration",
                "30s",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn connstorm server");
        wait_listening(PORT);
        let od = od.to_str().unwrap().to_string();
        let loads = testkit::segments_at_one_instant(2, |seg, start_at| {
            load_http(
                &[
                    "--http",
                    "--out",
                    &od,
                    "--segment",
                    seg,
                    "--start-at",
                    start_at,
                ],
                &lcpu,
            )
        });
        let _ = server.kill();
        let _ = server.wait();
        loads
    });
    let mut requests = 0;
    for l in &loads {
        assert_eq!(l.status.code(), Some(0), "{}", stderr(l));
        requests += u(&json(l)["http"]["requests"]);
    }
    let files = testkit::record_files(&out_dir);
    assert_eq!(files.len(), 2, "{files:?}");
    for (f, l) in files.iter().zip(&loads) {
        let rec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let p = &rec["phases"][0];
        let h = &json(l)["http"];
        for k in [
            "requests",
            "responses",
            "bytes_sent",
            "bytes_received",
            "body_bytes",
        ] {
            assert_eq!(p["http"][k], h[k], "{k}: {}", p["http"]);
        }
        assert_eq!(p["http"]["status_classes"], h["status_classes"], "{p}");
        assert!(p["histograms"]["http_response"].is_string(), "{p}");
        assert!(p["histograms"]["http_first_byte"].is_string(), "{p}");
        let rep = command().arg("report").arg(f).output().unwrap();
        assert_eq!(rep.status.code(), Some(0), "{}", stderr(&rep));
        let text = String::from_utf8_lossy(&rep.stdout);
        assert!(
            text.contains(&format!(
                "http (GET /): {} requests",
                common_count(u(&h["requests"]))
            )),
            "{text}"
        );
        assert!(text.contains("http_response"), "{text}");
    }
    let rec = testkit::merge(command(), &files, &dir.path().join("merged.json"));
    let p = &rec["phases"][0];
    assert_eq!(u(&p["http"]["requests"]), requests, "{}", p["http"]);
    assert!(p["histograms"]["http_response"].is_string(), "{p}");
}

/// A count as the reports print it (thousands separated by commas).
fn common_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Every attempt of `j` (a JSON report's `total`) is a success, a failure or abandoned.
fn balanced(t: &serde_json::Value) -> bool {
    u(&t["attempts"]) == u(&t["successes"]) + testkit::failures_total(t) + u(&t["abandoned"])
}

/// `connstorm server --mode MODE` on 127.0.0.1:PORT and `cpu` in this namespace, listening when
/// it returns; the caller kills it.
fn spawn_server(cpu: &str, mode: &str) -> std::process::Child {
    let server = command()
        .args(["server", "--listen", &format!("127.0.0.1:{PORT}")])
        .args(["--cpus", cpu, "--mode", mode, "--duration", "30s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn connstorm server");
    wait_listening(PORT);
    server
}

/// `--http` against a server that resets each connection as it accepts it (`--mode rst`), closed
/// loop so many handshakes complete already reset: on both engines every attempt is a failure of
/// the same class, `HTTP ECONNRESET`, none lost (the io_uring engine once counted such
/// handshakes in no class; the epoll engine once called most of them `HTTP EPIPE`).
#[test]
fn http_against_a_resetting_server_accounts_for_every_attempt_on_both_engines() {
    let _x = testkit::exclusive();
    let (scpu, lcpu) = cpus();
    for engine in LOAD_ENGINES {
        let (scpu, lcpu) = (scpu.clone(), lcpu.clone());
        let load = testkit::NetNs::run(move |_| {
            let mut server = spawn_server(&scpu, "rst");
            let target = format!("127.0.0.1:{PORT}");
            let load = command()
                .args(["load", "--target", &target, "--http", "--concurrency", "64"])
                .args(["--duration", "1s", "--warmup", "0s", "--cpus", &lcpu])
                .args(["--format", "json", "--load-engine", engine])
                .output()
                .unwrap();
            let _ = server.kill();
            let _ = server.wait();
            load
        });
        let j = json(&load);
        let t = &j["total"];
        assert!(u(&t["attempts"]) > 100, "{engine}: {t}");
        assert!(balanced(t), "{engine}: {t}");
        let http_failures = http_failures(t);
        assert_eq!(http_failures, u(&t["handshakes"]), "{engine}: {t}");
        // The same class on both engines: the reset is `HTTP ECONNRESET` (the epoll engine's
        // send(2) reports EPIPE once its connect check took the socket's error).
        let resets = t["failures"]["HTTP ECONNRESET"].as_u64().unwrap_or(0);
        assert_eq!(resets, http_failures, "{engine}: {t}");
    }
}

/// A request body the server never reads (larger than both socket buffers) cannot be written:
/// each attempt fails `HTTP ETIMEDOUT` at the read phase's deadline and the run ends on time,
/// on both engines (the io_uring engine's SEND once had no timeout and held the run).
#[test]
fn a_body_the_server_never_reads_times_out_on_both_engines() {
    let _x = testkit::exclusive();
    let (_, lcpu) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    std::fs::write(&body, vec![b'x'; 8 << 20]).unwrap();
    let body = body.to_str().unwrap().to_string();
    for engine in LOAD_ENGINES {
        let (lcpu, body) = (lcpu.clone(), body.clone());
        let (load, took) = testkit::NetNs::run(move |_| {
            // Accepts (the kernel does) and never reads.
            let _l = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], PORT))).unwrap();
            let t0 = Instant::now();
            let load = command()
                .args(["load", "--target", &format!("127.0.0.1:{PORT}")])
                .args(["--http", "--http-method", "POST", "--http-body", &body])
                .args(["--rate", "20/s", "--duration", "1s", "--warmup", "0s"])
                .args(["--connect-timeout", "1s", "--cpus", &lcpu])
                .args(["--format", "json", "--load-engine", engine])
                .output()
                .unwrap();
            (load, t0.elapsed())
        });
        assert!(took < Duration::from_secs(10), "{engine}: {took:?}");
        assert_eq!(load.status.code(), Some(3), "{engine}: {}", stderr(&load));
        let j = json(&load);
        let t = &j["total"];
        assert!(u(&t["attempts"]) >= 10, "{engine}: {t}");
        assert!(balanced(t), "{engine}: {t}");
        assert_eq!(
            u(&t["failures"]["HTTP ETIMEDOUT"]),
            u(&t["attempts"]),
            "{engine}: {t}"
        );
        assert_eq!(
            u(&j["http"]["total_requests"]),
            0,
            "{engine}: {}",
            j["http"]
        );
    }
}

/// A large POST body, `len` bytes of `x`, in `dir`: its path.
fn big_body(dir: &std::path::Path, len: usize) -> String {
    let body = dir.join("body");
    std::fs::write(&body, vec![b'x'; len]).unwrap();
    body.to_str().unwrap().to_string()
}

/// `load --http` POSTing `body` at 20/s for 1 s (10 s deadlines) with `engine`: its output
/// and how long it took. With `--close rst`, the wire these tests were written on: some of their
/// servers answer and then hold the connection open, where the default (`--close server`, issue
/// 36) would wait for a FIN until the 10 s deadline.
fn post_round(engine: &str, lcpu: &str, body: &str, extra: &[&str]) -> (Output, Duration) {
    post_round_at("20/s", engine, lcpu, body, extra)
}

/// [`post_round`] at `rate`.
fn post_round_at(
    rate: &str,
    engine: &str,
    lcpu: &str,
    body: &str,
    extra: &[&str],
) -> (Output, Duration) {
    let t0 = Instant::now();
    let load = command()
        .args(["load", "--target", &format!("127.0.0.1:{PORT}")])
        .args(["--http", "--http-method", "POST", "--http-body", body])
        .args(["--rate", rate, "--duration", "1s", "--warmup", "0s"])
        .args(["--connect-timeout", "10s", "--cpus", lcpu])
        .args([
            "--format",
            "json",
            "--load-engine",
            engine,
            "--close",
            "rst",
        ])
        .args(extra)
        .output()
        .unwrap();
    (load, t0.elapsed())
}

/// Checks of every [`post_round`]: it ended within 6 s (the deadlines are 10 s), started at
/// least 10 attempts and accounted for each. Returns its JSON report and its attempts.
fn post_checked(load: &Output, took: Duration, what: &str) -> (serde_json::Value, u64) {
    assert!(took < Duration::from_secs(6), "{what}: {took:?}");
    let j = json(load);
    let attempts = u(&j["total"]["attempts"]);
    assert!(attempts >= 10, "{what}: {}", j["total"]);
    assert!(balanced(&j["total"]), "{what}: {}", j["total"]);
    (j, attempts)
}

/// What [`early_server`] does with a connection after its answer.
#[derive(Clone, Copy, PartialEq)]
enum After {
    /// Closes it with the body unread (an RST).
    Close,
    /// Holds it open, unread, until the server stops.
    Hold,
    /// Reads the rest of the body until the client's close, then closes it.
    Drain,
}

/// A test server on `PORT` (in the caller's namespace): for each connection it reads the
/// request head, writes `answer` if any (then its FIN with `fin`), then does `after`. Returns
/// the stop flag and the thread, which answers how many connections it served.
fn early_server(
    answer: Option<&'static [u8]>,
    fin: bool,
    after: After,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<u64>) {
    let l = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], PORT))).unwrap();
    l.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let server = std::thread::spawn(move || {
        let (mut held, mut served) = (Vec::new(), 0);
        while !s.load(Ordering::Relaxed) {
            match l.accept() {
                Ok((c, _)) => {
                    if serve(c.try_clone().unwrap(), answer.unwrap_or_default()) {
                        if fin {
                            let _ = c.shutdown(std::net::Shutdown::Write);
                        }
                        served += 1;
                        match after {
                            After::Hold => held.push(c),
                            After::Drain => {
                                let (mut c, mut buf) = (c, vec![0u8; 64 << 10]);
                                while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
                            }
                            After::Close => {}
                        }
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        served
    });
    (stop, server)
}

/// A server that closes each connection after the request head, with most of a large body
/// unread and no answer (the close of a socket with unread data is an RST), cuts the body's
/// send short: on both engines that is the reset it is (`HTTP ECONNRESET`, or `HTTP EPIPE`),
/// never a timeout (the io_uring engine once took every short SEND for its link timeout), and
/// the run ends long before the 10 s read deadline.
#[test]
fn a_body_cut_short_by_the_servers_reset_is_a_reset_not_a_timeout_on_both_engines() {
    let _x = testkit::exclusive();
    let (_, lcpu) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let body = big_body(dir.path(), 16 << 20);
    for engine in LOAD_ENGINES {
        let (lcpu, body) = (lcpu.clone(), body.clone());
        let ((load, took), served) = testkit::NetNs::run(move |_| {
            let (stop, server) = early_server(None, false, After::Close);
            let out = post_round(engine, &lcpu, &body, &[]);
            stop.store(true, Ordering::Relaxed);
            (out, server.join().unwrap())
        });
        let (j, attempts) = post_checked(&load, took, engine);
        let (t, h) = (&j["total"], &j["http"]);
        assert_eq!(served, attempts, "{engine}: {t}");
        let class = |c: &str| t["failures"][c].as_u64().unwrap_or(0);
        assert_eq!(class("HTTP ETIMEDOUT"), 0, "{engine}: {t}");
        let resets = class("HTTP ECONNRESET") + class("HTTP EPIPE");
        assert_eq!(resets, attempts, "{engine}: {t}");
        assert_eq!(u(&h["total_responses"]), 0, "{engine}: {h}");
        assert_eq!(u(&h["requests"]), 0, "{engine}: {h}");
        // No response began: no parse error either (the epoll engine once read the reset
        // socket after its failed write and counted a truncated response too).
        assert_eq!(h["parse_errors"], serde_json::json!({}), "{engine}: {h}");
        assert!(u(&h["bytes_sent"]) >= attempts * 100, "{engine}: {h}");
    }
}

/// `server --mode http` answers after the request head and closes with most of a large body
/// unread (an RST): the complete response came before the reset, so on both engines each
/// attempt is a success whose response came before its request was written completely (the
/// epoll engine reads what is queued when its write fails; the io_uring engine's RECV runs
/// beside the long SEND), none a reset or a timeout.
#[test]
fn an_answer_before_the_servers_reset_is_a_response_on_both_engines() {
    let _x = testkit::exclusive();
    let (scpu, lcpu) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let body = big_body(dir.path(), 16 << 20);
    for engine in LOAD_ENGINES {
        let (scpu, lcpu, body) = (scpu.clone(), lcpu.clone(), body.clone());
        let (load, took) = testkit::NetNs::run(move |_| {
            let mut server = spawn_server(&scpu, "http");
            let out = post_round(engine, &lcpu, &body, &[]);
            server.kill().unwrap();
            server.wait().unwrap();
            out
        });
        let (j, attempts) = post_checked(&load, took, engine);
        let (t, h) = (&j["total"], &j["http"]);
        assert_eq!(u(&t["successes"]), attempts, "{engine}: {t}");
        assert_eq!(u(&h["responses"]), attempts, "{engine}: {h}");
        assert_eq!(u(&h["early_responses"]), attempts, "{engine}: {h}");
        assert_eq!(u(&h["requests"]), 0, "{engine}: {h}");
    }
}

/// A server that answers 413 after the request head and stops reading, the connection held
/// open (a gateway refusing a body too large): each response came before its request was
/// written, on both engines. Each attempt is a success with a 4xx, none a timeout or reset;
/// `responses` = `early_responses`, `requests` 0 (none was written completely), and the bytes
/// sent count the part of each body that did go out (the io_uring engine once linked its RECV
/// after the whole SEND, so it never read these answers and called each a reset).
#[test]
fn an_early_413_before_the_body_is_written_is_a_response_on_both_engines() {
    let _x = testkit::exclusive();
    let (_, lcpu) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let len = 8usize << 20;
    let body = big_body(dir.path(), len);
    for (engine, fin) in LOAD_ENGINES.iter().flat_map(|&e| [(e, false), (e, true)]) {
        let (lcpu, body) = (lcpu.clone(), body.clone());
        let out = dir.path().join(format!("rec-{engine}-{fin}"));
        let rec = out.to_str().unwrap().to_string();
        let ((load, took), answered) = testkit::NetNs::run(move |_| {
            let resp = b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 3\r\nConnection: close\r\n\r\nbig";
            let (stop, server) = early_server(Some(resp), fin, After::Hold);
            let out = post_round(engine, &lcpu, &body, &["--out", &rec]);
            stop.store(true, Ordering::Relaxed);
            (out, server.join().unwrap())
        });
        let what = format!("{engine} fin {fin}");
        assert_eq!(load.status.code(), Some(0), "{what}: {}", stderr(&load));
        let (j, attempts) = post_checked(&load, took, &what);
        let (t, h) = (&j["total"], &j["http"]);
        assert_eq!(u(&t["successes"]), attempts, "{engine} fin {fin}: {t}");
        assert_eq!(answered, attempts, "{engine} fin {fin}: {t}");
        assert_eq!(
            u(&h["total_responses"]),
            attempts,
            "{engine} fin {fin}: {h}"
        );
        assert_eq!(u(&h["responses"]), attempts, "{engine} fin {fin}: {h}");
        assert_eq!(
            u(&h["early_responses"]),
            attempts,
            "{engine} fin {fin}: {h}"
        );
        assert_eq!(u(&h["requests"]), 0, "{engine} fin {fin}: {h}");
        assert_eq!(
            u(&h["non_2xx_codes"]["413"]),
            attempts,
            "{engine} fin {fin}: {h}"
        );
        assert_eq!(u(&h["body_bytes"]), 3 * attempts, "{engine} fin {fin}: {h}");
        let sent = u(&h["bytes_sent"]);
        assert!(sent >= attempts * 100, "{engine} fin {fin}: {h}");
        assert!(sent < attempts * len as u64, "{engine} fin {fin}: {h}");
        // The record keeps the body's size and digest, not its bytes (an 8 MiB body once made
        // a 92 MB record, written after the run).
        let files: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        let size = std::fs::metadata(&files[0]).unwrap().len();
        assert!(size < 1 << 20, "{engine} fin {fin}: a {size}-byte record");
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
        assert_eq!(r["config"]["http"]["body"]["bytes"], len as u64, "{engine}");
        assert_eq!(
            r["config"]["http"]["body"]["sha256"].as_str().map(str::len),
            Some(64)
        );
    }
}

/// Interrupted while every connection waits for a response (`server --mode hold`): each attempt
/// is abandoned, and each request written in full is counted, on both engines (the io_uring
/// engine once counted a request only when its response began, so none here).
#[test]
fn an_interrupt_while_responses_are_awaited_counts_the_requests_written() {
    let _x = testkit::exclusive();
    let (scpu, lcpu) = cpus();
    for engine in LOAD_ENGINES {
        let (scpu, lcpu) = (scpu.clone(), lcpu.clone());
        let load = testkit::NetNs::run(move |_| {
            let mut server = spawn_server(&scpu, "hold");
            let load = command()
                .args(["load", "--target", &format!("127.0.0.1:{PORT}"), "--http"])
                .args(["--rate", "200/s", "--duration", "5s", "--warmup", "0s"])
                .args(["--connect-timeout", "4s", "--cpus", &lcpu])
                .args(["--format", "json", "--load-engine", engine])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(1200));
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(load.id() as i32),
                nix::sys::signal::Signal::SIGINT,
            )
            .unwrap();
            let out = load.wait_with_output().unwrap();
            let _ = server.kill();
            let _ = server.wait();
            out
        });
        assert_eq!(load.status.code(), Some(130), "{engine}: {}", stderr(&load));
        let j = json(&load);
        let t = &j["total"];
        assert!(u(&t["abandoned"]) >= 100, "{engine}: {t}");
        assert!(balanced(t), "{engine}: {t}");
        // A request is counted once written in full. At the stop the io_uring engine may
        // still hold the SEND of a connection that completed just before it (cancelled, never
        // written): a few at most; the epoll engine writes at the handshake.
        let (requests, handshakes) = (u(&j["http"]["total_requests"]), u(&t["handshakes"]));
        assert!(requests <= handshakes, "{engine}: {}", j["http"]);
        assert!(
            handshakes - requests <= 2,
            "{engine}: {requests} of {handshakes}"
        );
        let request =
            format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nConnection: close\r\n\r\n");
        assert_eq!(
            u(&j["http"]["bytes_sent"]),
            requests * request.len() as u64,
            "{engine}: {}",
            j["http"]
        );
    }
}

/// `--http` against a listener that never accepts (a stopped gateway): the server's kernel
/// completes every handshake and queues it, no response comes, so each attempt is an HTTP
/// failure. The accept-queue line says the queued connections are this run's (not "queued
/// before the run"), already failures on the client, and the diagnosis names the cause: the
/// application never accepted them. On both engines; counts equal the kernel's Δ PassiveOpens.
#[test]
fn http_against_a_listener_that_never_accepts_names_the_queue_as_this_runs() {
    let _x = testkit::exclusive();
    testkit::require_tool("ss", "iproute2");
    let (_, lcpu) = cpus();
    for engine in LOAD_ENGINES {
        let lcpu = lcpu.clone();
        let (j, t, passive) = testkit::NetNs::run(move |ns| {
            // Listening, never accepting: the accept queue (backlog 128) holds every handshake.
            let l =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            l.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
                .unwrap();
            l.listen(128).unwrap();
            let target = l.local_addr().unwrap().as_socket().unwrap().to_string();
            let run = |format: &str| {
                command()
                    .args(["load", "--target", &target, "--http", "--rate", "60/s"])
                    .args(["--duration", "500ms", "--warmup", "0s", "--cpus", &lcpu])
                    .args(["--connect-timeout", "300ms", "--load-engine", engine])
                    .args(["--format", format])
                    .output()
                    .unwrap()
            };
            let p0 = ns.counter("Tcp.PassiveOpens");
            let j = run("json");
            let passive = ns.counter("Tcp.PassiveOpens") - p0;
            // The second run finds the first run's connections still queued (older, FIFO).
            let t = run("text");
            drop(l);
            (j, t, passive)
        });
        assert_eq!(j.status.code(), Some(3), "{engine}: {}", stderr(&j));
        let r = json(&j);
        let tot = &r["total"];
        let attempts = u(&tot["attempts"]);
        assert!(attempts >= 20, "{engine}: {tot}");
        assert_eq!(
            attempts as i64, passive,
            "{engine}: every handshake queued: {r}"
        );
        assert_eq!(u(&tot["successes"]), 0, "{engine}: {tot}");
        let http_failures = http_failures(tot);
        assert_eq!(http_failures, attempts, "{engine}: {tot}");
        assert!(
            tot["failures"].get("NEVER_ACCEPTED_QUEUED").is_none(),
            "{engine}: an HTTP failure is not counted twice: {tot}"
        );
        let q = &r["accept_queue"];
        assert_eq!(q["after_settle"].as_i64(), Some(passive), "{engine}: {q}");
        assert_eq!(q["this_run"].as_i64(), Some(passive), "{engine}: {q}");
        assert_eq!(q["never_accepted"].as_u64(), Some(0), "{engine}: {q}");
        let diag = r["diagnosis"].to_string();
        assert!(
            diag.contains(&format!(
                "never accepted: {passive} handshakes the server's kernel completed were still waiting in the listener's accept queue"
            )),
            "{engine}: {diag}"
        );
        assert!(
            !diag.contains("no counter here says why"),
            "{engine}: {diag}"
        );
        // The text run: both runs' connections queued, only its own called this run's.
        let text = String::from_utf8_lossy(&t.stdout);
        let line = text
            .lines()
            .find(|l| l.starts_with("  accept queue at the end: "))
            .unwrap_or_else(|| panic!("{engine}: no accept queue line: {text}"));
        let queued: i64 = line["  accept queue at the end: ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap();
        let second = queued - passive;
        assert!(second > 0, "{engine}: {line}");
        assert!(
            line.contains(&format!(
                "; {second} of them from this run, each already a failure on the client (counted under its class above, not twice) (the other {passive} were queued before the run)"
            )),
            "{engine}: {line}"
        );
    }
}

/// A server that answers 413 after the request head and then reads the rest of the body (a
/// gateway that drains what it refused): a response can come before its request is written and
/// the write finish after it. Each exchange is counted once on both engines: written before
/// its response (`requests`) or answered first (`early_responses`), never both (the io_uring
/// engine once counted a SEND that finished after its response in both).
#[test]
fn a_response_before_a_drained_body_counts_each_exchange_once_on_both_engines() {
    let _x = testkit::exclusive();
    let (_, lcpu) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let body = big_body(dir.path(), 8 << 20);
    for engine in LOAD_ENGINES {
        let (lcpu, body) = (lcpu.clone(), body.clone());
        let ((load, took), served) = testkit::NetNs::run(move |_| {
            let resp = b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n\r\n";
            let (stop, server) = early_server(Some(resp), false, After::Drain);
            let out = post_round_at("30/s", engine, &lcpu, &body, &[]);
            stop.store(true, Ordering::Relaxed);
            (out, server.join().unwrap())
        });
        let (j, attempts) = post_checked(&load, took, engine);
        let (t, h) = (&j["total"], &j["http"]);
        eprintln!("{engine}: {h}");
        assert_eq!(u(&t["successes"]), attempts, "{engine}: {t}");
        assert_eq!(served, attempts, "{engine}: {t}");
        assert_eq!(u(&h["total_responses"]), attempts, "{engine}: {h}");
        assert_eq!(u(&h["non_2xx_codes"]["413"]), attempts, "{engine}: {h}");
        assert_eq!(u(&h["responses"]), u(&j["successes"]), "{engine}: {h}");
        assert_eq!(
            u(&h["requests"]) + u(&h["early_responses"]),
            u(&h["responses"]),
            "{engine}: each exchange once: {h}"
        );
    }
}

/// Issue 36 item 1: `load --http` without `--close` is on the wire HTTP clients use — the
/// server closes after the response (what wrk or h2load sending `Connection: close` see) — and
/// says so first. Against `server --mode http` in a fresh namespace, on both engines: no RST
/// leaves either side (ΔTcp.OutRsts = 0, no abort counted: the client read the server's FIN and
/// closed with its own), the first line of stdout and of stderr, the JSON's `wire` and `report`
/// on the run's record name the wire; `--close rst` is the other wire: one RST per connection
/// at least, named as not what HTTP clients do.
#[test]
fn http_load_closes_after_the_servers_fin_by_default_and_names_the_wire() {
    let _x = testkit::exclusive();
    let (scpu, lcpu) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let od = dir.path().join("runs");
    let out_dir = od.clone();
    let runs = testkit::NetNs::run(move |ns| {
        let mut server = spawn_server(&scpu, "http");
        let resets = || {
            [
                "Tcp.OutRsts",
                "TcpExt.TCPAbortOnClose",
                "TcpExt.TCPAbortOnData",
            ]
            .map(|k| ns.counters().get(k).copied().unwrap_or(0))
        };
        let mut runs = Vec::new();
        let target = format!("127.0.0.1:{PORT}");
        for (engine, extra) in [
            (
                "epoll",
                vec!["--format", "text", "--out", od.to_str().unwrap()],
            ),
            ("io-uring", vec!["--format", "json"]),
            ("epoll", vec!["--format", "json", "--close", "rst"]),
        ] {
            let before = resets();
            let load = command()
                .args([
                    "load",
                    "--target",
                    &target,
                    "--rate",
                    "300/s",
                    "--duration",
                    "1s",
                ])
                .args([
                    "--warmup",
                    "0s",
                    "--cpus",
                    &lcpu,
                    "--http",
                    "--load-engine",
                    engine,
                ])
                .args(extra)
                .output()
                .expect("run connstorm load");
            let after = resets();
            let delta: Vec<i64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
            runs.push((engine, load, delta));
        }
        let _ = server.kill();
        let _ = server.wait();
        runs
    });
    let wire_server =
        "wire: HTTP/1.1, server closes after the response (like wrk -H 'Connection: close')";
    let wire_rst = "wire: HTTP/1.1, client RST after the response (not what HTTP clients do)";
    for (i, (engine, load, delta)) in runs.iter().enumerate() {
        assert_eq!(load.status.code(), Some(0), "{engine}: {}", stderr(load));
        let err = stderr(load);
        let first_err = err.lines().next().unwrap_or_default();
        if i == 0 {
            let out = String::from_utf8_lossy(&load.stdout);
            let first = out.lines().next().unwrap_or_default();
            assert!(
                first.starts_with(&format!("connstorm load: {wire_server}; ")),
                "{first}"
            );
            assert!(out.contains("--close server"), "{out}");
        }
        if i < 2 {
            // The server's FIN, then the client's: no RST, no abort, on either side.
            assert_eq!(
                delta,
                &vec![0, 0, 0],
                "{engine}: OutRsts, AbortOnClose, AbortOnData"
            );
            assert!(
                first_err.starts_with(&format!("connstorm load: {wire_server}; ")),
                "{err}"
            );
        } else {
            let j = json(load);
            assert_eq!(j["wire"], common::wire::value(wire_rst), "{j}");
            assert_eq!(j["close"], "rst", "{j}");
            let successes = u(&j["total"]["successes"]);
            assert!(successes >= 150, "{j}");
            assert!(
                delta[0] >= successes as i64,
                "OutRsts {delta:?} < {successes}"
            );
            assert!(
                first_err.starts_with(&format!("connstorm load: {wire_rst}; ")),
                "{err}"
            );
        }
        if i == 1 {
            let j = json(load);
            assert_eq!(j["wire"], common::wire::value(wire_server), "{j}");
            assert_eq!(j["close"], "server", "{j}");
            assert!(u(&j["total"]["successes"]) >= 150, "{j}");
        }
    }
    // `report` on the record: the first line under the heading names the wire.
    let rec = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("the record");
    let rep = command().args(["report"]).arg(&rec).output().unwrap();
    assert!(rep.status.success(), "{}", stderr(&rep));
    let text = String::from_utf8_lossy(&rep.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("wire:"))
        .unwrap_or_else(|| panic!("no wire line in {text}"));
    assert!(line.trim_start().starts_with(wire_server), "{text}");
    assert!(
        text.lines().position(|l| l.contains("wire:")) <= Some(2),
        "{text}"
    );
}
