//! `connstorm load --tls` against `connstorm server --tls`, in private network namespaces:
//! handshakes counted by the load = the server's TLS accepts = the namespace's new passive
//! opens; resumption with tickets and session IDs (exact: all but each worker's first handshake
//! resume when one connection at a time is in flight); a wrong CA fails every handshake with a
//! class naming the alert, on both sides; bad certificate/key files are refused up front.

use crate::shared::{command, cpus, u, wait_listening};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use testkit::{json, stderr};

const PORT: u16 = 8443;

/// A certificate for `localhost`/127.0.0.1 and its key, written as PEM files in `dir` under
/// `name`.pem / `name`.key.
fn cert_files(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = dir.join(format!("{name}.pem"));
    let key = dir.join(format!("{name}.key"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

/// A 1,024-bit RSA private key (PKCS#8 PEM), a test fixture: too small for aws-lc-rs to sign with.
const RSA_1024_KEY: &str = "\
-----BEGIN PRIVATE KEY-----\n\
MIICdQIBADANBgkqhkiG9w0BAQEFAASCAl8wggJbAgEAAoGBAMY/swWAzZXJyf3G\n\
stvuFaz4wNqTA0l6ZVWSlABWV1TVtQBVurfDrfq5BaHLopura8jsL085gZqIpA+w\n\
n758k2zHbHPADjlvItNEPLFLlFaM8DQS/uhHmtEQVmCBEX5KRdzvN2pCbZ2Hl8qI\n\
r7SzmUAPWcKc9AYTqYyYXxdKy1k5AgMBAAECgYBzcJA8Oh58hH48akGoU2EH0enq\n\
3QRi+wSa6bmI4L4FxlOZmFIbw7RBdQ/UgRF0+ELRQsbhqSjQ5ZQzFrROZZgqDxfH\n\
5qT1hxzrSqOQWy4JdmGZDrCYeyqtGLySqoXRMhFL/Rx910wxEUtD09k3H2EXxjYl\n\
2dW/X6hNdaemkL5NKQJBAOd72l/D2y7T4ActpPPncoeS2xmFwCPWwTcrl0tU0xiO\n\
g8IcH4OshdUnDm2Ywo4mlX6cR8JKu/47zfiN8ch90PcCQQDbPsHFNBvra1YzlLyh\n\
UNlrS8aV1NLkl+EwkHk6FKfr3d3gPYZDGCLjzCJAYWafzgnJcFI+F/QyAgsBL7fF\n\
3MtPAkAvz4TrAqjioyBCW0sWlVcyaUKXouhsfo6ptncpN/vhto3AKc7Yg2mg/NAe\n\
Es8cTRvTarPnjUgG2pNQIwEtR89BAkAC36i0iAFRrZ98n5d1WdTvtheNQTPecSsv\n\
csVUAI9O5SKSXNwUpw1WBQfx5hTtRUsVi9ZYIAJAYYx5YIG9Iy67AkAz1PHye/z+\n\
R4Nl1bwHS3NqOH6DVaecYRev7fxmvZ2p4qG8DOULaNJ8wr6vzIXJQa1NlcWhWmky\n\
+37Eet46taMS\n\
-----END PRIVATE KEY-----\n\
";

/// The server engines every test runs on.
const ENGINES: [&str; 2] = ["epoll", "io-uring"];

fn start_server(cpu: &str, engine: &str, extra: &[String]) -> Child {
    let mut args: Vec<String> = [
        "server",
        "--listen",
        &format!("127.0.0.1:{PORT}"),
        "--cpus",
        cpu,
        "--engine",
        engine,
        "--tls",
        "--duration",
        "60s",
        "--format",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().cloned());
    command()
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn connstorm server")
}

/// SIGINT ends the server with its JSON report.
fn stop_server(mut server: Child) -> serde_json::Value {
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
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("server JSON report ({e}): {out}"))
}

fn sum(s: &serde_json::Value, k: &str) -> u64 {
    s["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| u(&w[k]))
        .sum()
}

/// One server (`server_args`) and one load (`load_args`) in a fresh namespace: the load's JSON
/// report and exit code, the server's report, ΔPassiveOpens.
fn round(
    engine: &str,
    server_args: Vec<String>,
    load_args: Vec<String>,
) -> (Output, serde_json::Value, i64) {
    let (scpu, lcpu) = cpus();
    let engine = engine.to_string();
    testkit::NetNs::run(move |ns| {
        let server = start_server(&scpu, &engine, &server_args);
        wait_listening(PORT);
        let before = ns.counter("Tcp.PassiveOpens");
        let mut args = load_base(&lcpu, true);
        args.extend(load_args);
        let load = command().args(&args).output().expect("run connstorm load");
        let passive = ns.counter("Tcp.PassiveOpens") - before;
        (load, stop_server(server), passive)
    })
}

/// `connstorm load --tls` against this test's server on `localhost` (IPv4), 1 s, no warm-up,
/// on CPU `lcpu`; `json`: with `--format json` (else the text report).
fn load_base(lcpu: &str, json: bool) -> Vec<String> {
    let target = format!("localhost:{PORT}");
    let mut v = strings(&[
        "load",
        "--target",
        &target,
        "--family",
        "4",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--cpus",
        lcpu,
        "--tls",
    ]);
    if json {
        v.extend(strings(&["--format", "json"]));
    }
    v
}

/// A [`round`] with one connection in flight at a time (so every handshake after a worker's
/// first can resume), TLS `version`, `--tls-resume resume`, `--insecure`, and the server's
/// `srv` options.
fn one_at_a_time(
    engine: &str,
    version: &str,
    resume: &str,
    srv: &[&str],
) -> (Output, serde_json::Value, i64) {
    let load = strings(&[
        "--concurrency",
        "1",
        "--insecure",
        "--tls-version",
        version,
        "--tls-resume",
        resume,
    ]);
    round(engine, strings(srv), load)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Handshakes counted by the load = successes = attempts = the server's TLS accepts = its
/// accepts = ΔPassiveOpens; without resumption every handshake is full.
#[test]
fn tls_handshakes_of_the_load_equal_the_servers_tls_accepts_and_passive_opens() {
    let _x = testkit::exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let (cert, key) = cert_files(tmp.path(), "a");
    // (versions offered, --http, --tls-ciphers, the suite every handshake must agree): by
    // default AES-128-GCM first (an ECDSA certificate, so ECDHE_ECDSA in TLS 1.2); a list
    // given in IANA spelling is offered as given.
    let configs = [
        ("1.3", false, None, "TLS13_AES_128_GCM_SHA256"),
        (
            "1.2",
            false,
            None,
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        ),
        ("auto", true, None, "TLS13_AES_128_GCM_SHA256"),
        (
            "auto",
            false,
            Some("TLS_CHACHA20_POLY1305_SHA256,TLS13_AES_256_GCM_SHA384"),
            "TLS13_CHACHA20_POLY1305_SHA256",
        ),
    ];
    for (engine, (version, http, ciphers, suite)) in
        ENGINES.iter().flat_map(|e| configs.map(|c| (*e, c)))
    {
        let mut load = strings(&["--rate", "200/s", "--tls-version", version]);
        if let Some(c) = ciphers {
            load.extend(strings(&["--tls-ciphers", c]));
        }
        load.extend(["--ca".into(), cert.display().to_string()]);
        let mut srv = strings(&["--cert", &cert.display().to_string()]);
        srv.extend(["--key".into(), key.display().to_string()]);
        if http {
            load.push("--http".into());
            srv.extend(strings(&["--mode", "http"]));
        }
        let (out, s, passive) = round(engine, srv, load);
        assert_eq!(out.status.code(), Some(0), "{engine}: {}", stderr(&out));
        assert_eq!(s["engine"], engine.replace('-', "_"), "{s}");
        let j = json(&out);
        let t = &j["tls"];
        let attempts = u(&j["total"]["attempts"]);
        assert!(attempts >= 100, "{j}");
        for (name, v) in [
            ("load successes", u(&j["total"]["successes"])),
            ("load TLS handshakes", u(&t["total_handshakes"])),
            ("load full handshakes", u(&t["total_full"])),
            ("server TLS accepts", sum(&s, "tls_accepted")),
            ("server accepts", sum(&s, "accepted")),
            ("PassiveOpens", passive as u64),
        ] {
            assert_eq!(
                v, attempts,
                "{engine} {version} http {http}: {name}\nload {j}\nserver {s}"
            );
        }
        assert_eq!(u(&t["total_resumed"]), 0, "{t}");
        assert_eq!(sum(&s, "tls_resumed"), 0, "{s}");
        assert_eq!(sum(&s, "tls_failed"), 0, "{s}");
        let key13 = if version == "1.2" { "tls12" } else { "tls13" };
        assert_eq!(u(&t[key13]), u(&t["handshakes"]), "{t}");
        assert_eq!(u(&t["handshake"]["count"]), u(&t["handshakes"]), "{t}");
        let suites = t["cipher_suites"].as_object().expect("cipher_suites");
        assert_eq!(suites.len(), 1, "{engine} {version} {ciphers:?}: {t}");
        assert_eq!(
            u(&suites[suite]),
            u(&t["handshakes"]),
            "{engine} {version}: {t}"
        );
        if http {
            assert_eq!(u(&j["http"]["status_classes"]["2xx"]), attempts, "{j}");
            assert_eq!(sum(&s, "served"), attempts, "{s}");
        }
    }
}

/// One connection in flight (one worker, closed loop of 1): every handshake but the worker's
/// first resumes — TLS 1.3 and 1.2 tickets, TLS 1.2 session IDs — and the server counts the same.
#[test]
fn tls_resumption_resumes_all_but_each_workers_first_handshake() {
    let _x = testkit::exclusive();
    // `--mode http` without a request: the client's Finished and close_notify arrive in one
    // read, and the TLS 1.3 tickets queued after the Finished must still be sent (they were
    // dropped: 0 of 1,542 resumed).
    let cases = ENGINES.iter().flat_map(|e| {
        [
            ("1.3", "tickets", "close"),
            ("1.2", "tickets", "close"),
            ("1.2", "ids", "close"),
            ("1.3", "tickets", "http"),
        ]
        .map(|c| (*e, c))
    });
    for (engine, (version, resume, mode)) in cases {
        let (out, s, passive) = one_at_a_time(engine, version, resume, &["--mode", mode]);
        assert_eq!(out.status.code(), Some(0), "{engine}: {}", stderr(&out));
        assert_eq!(s["engine"], engine.replace('-', "_"), "{s}");
        let j = json(&out);
        let t = &j["tls"];
        let hs = u(&t["total_handshakes"]);
        let case = format!("{engine} {version} {resume} --mode {mode}");
        assert!(hs >= 20, "{case}: {j}");
        assert_eq!(hs, u(&j["total"]["attempts"]), "{j}");
        assert_eq!(u(&t["total_full"]), 1, "{case}: {t}");
        assert_eq!(u(&t["total_resumed"]), hs - 1, "{case}: {t}");
        assert!(
            !stderr(&out).contains("was asked for"),
            "{case}: {}",
            stderr(&out)
        );
        assert_eq!(sum(&s, "tls_accepted"), hs, "{s}");
        assert_eq!(sum(&s, "tls_resumed"), hs - 1, "{s}");
        assert_eq!(passive as u64, hs, "{s}");
    }
}

/// `server --tls --tls-resume off` offers no resumption: a client that asks for it (tickets in
/// TLS 1.3 and 1.2, session IDs in 1.2) gets a full handshake every time, counted so on both
/// sides, and the server's start line says so.
#[test]
fn server_without_resumption_gives_only_full_handshakes_to_clients_that_ask() {
    let _x = testkit::exclusive();
    let cases = ENGINES
        .iter()
        .flat_map(|e| [("1.3", "tickets"), ("1.2", "tickets"), ("1.2", "ids")].map(|c| (*e, c)));
    for (engine, (version, resume)) in cases {
        let srv = ["--mode", "http", "--tls-resume", "off"];
        let (out, s, passive) = one_at_a_time(engine, version, resume, &srv);
        let case = format!("{engine} {version} {resume}");
        assert_eq!(out.status.code(), Some(0), "{case}: {}", stderr(&out));
        let j = json(&out);
        let t = &j["tls"];
        let hs = u(&t["total_handshakes"]);
        assert!(hs >= 20, "{case}: {j}");
        assert_eq!(u(&t["total_full"]), hs, "{case}: {t}");
        assert_eq!(u(&t["total_resumed"]), 0, "{case}: {t}");
        // Asked for and not given: said, so the figures are not read as resumed ones.
        let want = format!("--tls-resume {resume} was asked for, but none of the");
        assert!(stderr(&out).contains(&want), "{case}: {}", stderr(&out));
        assert_eq!(sum(&s, "tls_accepted"), hs, "{case}: {s}");
        assert_eq!(sum(&s, "tls_resumed"), 0, "{case}: {s}");
        assert_eq!(passive as u64, hs, "{case}: {s}");
    }
    // The start line names it; without --tls the option is refused.
    let mut srv = command()
        .args([
            "server",
            "--listen",
            "127.0.0.1:0",
            "--duration",
            "1s",
            "--tls",
            "--tls-resume",
            "off",
        ])
        .output()
        .unwrap();
    assert_eq!(srv.status.code(), Some(0), "{}", stderr(&srv));
    assert!(
        stderr(&srv).contains("over TLS (resumption off: every handshake full)"),
        "{}",
        stderr(&srv)
    );
    srv = command()
        .args([
            "server",
            "--listen",
            "127.0.0.1:0",
            "--duration",
            "1s",
            "--tls-resume",
            "off",
        ])
        .output()
        .unwrap();
    assert_eq!(srv.status.code(), Some(2), "{}", stderr(&srv));
    assert!(stderr(&srv).contains("--tls"), "{}", stderr(&srv));
}

/// The client trusts another CA: every handshake fails with one class naming the alert it sends,
/// nothing succeeds (exit 3), and the server counts each of those failed handshakes.
#[test]
fn tls_with_a_wrong_ca_fails_every_handshake_naming_the_alert() {
    let _x = testkit::exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let (cert, key) = cert_files(tmp.path(), "server");
    let (other, _) = cert_files(tmp.path(), "other");
    let srv = strings(&[
        "--cert",
        &cert.display().to_string(),
        "--key",
        &key.display().to_string(),
    ]);
    let load = strings(&["--rate", "100/s", "--ca", &other.display().to_string()]);
    for engine in ENGINES {
        wrong_ca_round(engine, srv.clone(), load.clone());
    }
}

fn wrong_ca_round(engine: &str, srv: Vec<String>, load: Vec<String>) {
    let (out, s, passive) = round(engine, srv, load);
    assert_eq!(out.status.code(), Some(3), "{engine}: {}", stderr(&out));
    assert_eq!(s["engine"], engine.replace('-', "_"), "{s}");
    let j = json(&out);
    let attempts = u(&j["total"]["attempts"]);
    assert!(attempts >= 50, "{j}");
    assert_eq!(u(&j["total"]["successes"]), 0, "{j}");
    // One class: the alert this client sent (its name is rustls' mapping of the certificate
    // error), on every attempt.
    let fails = j["total"]["failures"].as_object().unwrap();
    assert_eq!(fails.len(), 1, "{j}");
    let (class, n) = fails.iter().next().unwrap();
    assert_eq!(u(n), attempts, "{j}");
    let alert = class
        .strip_prefix("TLS alert ")
        .and_then(|c| c.strip_suffix(" sent"))
        .unwrap_or_else(|| panic!("not an alert class: {class}"));
    assert_eq!(u(&j["total"]["handshakes"]), attempts, "{j}");
    assert_eq!(sum(&s, "tls_accepted"), 0, "{s}");
    assert_eq!(sum(&s, "tls_failed"), attempts, "{s}");
    // The server counts every failed handshake (by the alert it read, or the reset that
    // followed it when the client's RST overtook the alert).
    let classes: u64 = s["workers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["tls_failures"].as_object().unwrap().values())
        .map(u)
        .sum();
    assert_eq!(classes, attempts, "{alert}: {s}");
    assert_eq!(passive as u64, attempts, "{s}");
}

/// A server certificate marked CA:TRUE (what `openssl req -x509` makes by default), trusted by
/// the client as its own CA: webpki refuses a CA as an end entity, the client sends
/// CertificateUnknown, and the report's explanation names that cause (it offered only "wrong
/// name, expired, or not usable", and a new user could not find it).
#[test]
fn a_ca_certificate_served_as_the_servers_own_is_explained() {
    let _x = testkit::exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let (c, k) = (tmp.path().join("ca.pem"), tmp.path().join("ca.key"));
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    let srv = strings(&["--cert", c.to_str().unwrap(), "--key", k.to_str().unwrap()]);
    let load = vec!["--ca".to_string(), c.display().to_string()];
    let (out, _, _) = round("epoll", srv, load);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let j = json(&out);
    let fails = j["total"]["failures"].as_object().unwrap();
    assert_eq!(
        fails.keys().collect::<Vec<_>>(),
        ["TLS alert CertificateUnknown sent"],
        "{j}"
    );
    // The text report (stdout) explains the class.
    let (scpu, lcpu) = cpus();
    let ca = c.display().to_string();
    let srv = strings(&["--cert", c.to_str().unwrap(), "--key", k.to_str().unwrap()]);
    let text = testkit::NetNs::run(move |_| {
        let server = start_server(&scpu, "epoll", &srv);
        wait_listening(PORT);
        let mut args = load_base(&lcpu, false);
        args.extend(strings(&["--ca", &ca, "--concurrency", "2"]));
        let o = command().args(&args).output().unwrap();
        stop_server(server);
        o
    });
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(
        t.contains("TLS alert CertificateUnknown sent") && t.contains("CA:TRUE"),
        "{t}"
    );
}

/// A `load --tls --out` record of a run whose every TLS handshake failed reads back (it was
/// refused as damaged: its handshake histogram holds the TCP handshakes of the failed
/// attempts), and `report` names the alert.
#[test]
fn a_record_of_failed_tls_handshakes_reads_back_and_names_the_alert() {
    let _x = testkit::exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let (other, _) = cert_files(tmp.path(), "other");
    let runs = tmp.path().join("runs");
    let load = strings(&[
        "--concurrency",
        "2",
        "--ca",
        other.to_str().unwrap(),
        "--out",
        runs.to_str().unwrap(),
    ]);
    let srv_runs = tmp.path().join("srv");
    let srv = strings(&["--out", srv_runs.to_str().unwrap(), "--tls-resume", "off"]);
    let (out, _, _) = round("epoll", srv, load);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let j = json(&out);
    let attempts = u(&j["total"]["attempts"]);
    // The server's record keeps its failed handshakes by class and that it offered no
    // resumption (it kept neither), and its report prints them.
    let srv_files = testkit::record_files(&srv_runs);
    let srec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&srv_files[0]).unwrap()).unwrap();
    let side = &srec["phases"][0]["server"];
    let failed: u64 = side["tls_failures"]
        .as_object()
        .unwrap_or_else(|| panic!("{side}"))
        .values()
        .map(u)
        .sum();
    assert_eq!(failed, attempts, "{side}");
    assert_eq!(side["tls_accepted"], 0, "{side}");
    assert_eq!(side["tls_resumption"], false, "{side}");
    let srep = command().arg("report").arg(&srv_files[0]).output().unwrap();
    let stext = String::from_utf8_lossy(&srep.stdout);
    assert!(
        stext.contains(&format!("{} failed (", common::numfmt::count(attempts)))
            && stext.contains("resumption not offered (server --tls-resume off)"),
        "{stext}"
    );
    let files = testkit::record_files(&runs);
    assert_eq!(files.len(), 1, "{files:?}");
    let rep = command().arg("report").arg(&files[0]).output().unwrap();
    assert_eq!(rep.status.code(), Some(0), "{}", stderr(&rep));
    let text = String::from_utf8_lossy(&rep.stdout);
    // The class the load printed (the alert rustls sends for that certificate error), with
    // its count, as the load counted it.
    let fails = j["total"]["failures"].as_object().unwrap();
    assert_eq!(fails.len(), 1, "{j}");
    let (class, n) = fails.iter().next().unwrap();
    assert!(class.starts_with("TLS alert "), "{j}");
    assert_eq!(u(n), attempts, "{j}");
    let want = format!("({class} {})", common::numfmt::count(attempts));
    assert!(text.contains(&want), "{want} in {text}");
    assert!(attempts >= 20, "{j}");
}

/// Unusable certificate or key files, half a pair, a mode TLS does not serve, a bad CA file, on
/// either engine: one line saying what and how to fix it, exit 2, before anything listens.
#[test]
fn bad_tls_files_and_options_exit_2_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (cert, key) = cert_files(tmp.path(), "a");
    let (_, other_key) = cert_files(tmp.path(), "b");
    let junk = tmp.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let missing = tmp.path().join("missing.pem");
    // An RSA key of 1,024 bits (made once with `openssl genpkey -algorithm RSA -pkeyopt
    // rsa_keygen_bits:1024`): aws-lc-rs will not sign with it. It was reported as a key that
    // does not match its certificate.
    let small = tmp.path().join("rsa1024.key");
    std::fs::write(&small, RSA_1024_KEY).unwrap();
    // Files that yielded "no items found" alike: an encrypted key (only its PEM label matters
    // here), a DER key, a certificate given as the key, a key given as the certificate.
    let encrypted = tmp.path().join("enc.key");
    std::fs::write(
        &encrypted,
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIBvTBXBgkqhkiG9w0BBQ0wSjApBgkqhkiG9w0BBQwwHAQI\n-----END ENCRYPTED PRIVATE KEY-----\n",
    )
    .unwrap();
    let der = tmp.path().join("der.key");
    std::fs::write(&der, rcgen::KeyPair::generate().unwrap().serialize_der()).unwrap();
    let p = |x: &Path| x.display().to_string();
    for (args, want) in [
        (vec!["--cert", &p(&missing), "--key", &p(&key)], "--cert"),
        (vec!["--cert", &p(&junk), "--key", &p(&key)], "--cert"),
        (vec!["--cert", &p(&cert), "--key", &p(&junk)], "--key"),
        (vec!["--cert", &p(&cert), "--key", &p(&other_key)], "key"),
        (
            vec!["--cert", &p(&cert), "--key", &p(&small)],
            "an RSA key aws-lc-rs will not sign with, most likely shorter than 2,048 bits",
        ),
        (
            vec!["--cert", &p(&cert), "--key", &p(&encrypted)],
            "an encrypted private key (the server cannot ask for its passphrase): decrypt it first",
        ),
        (
            vec!["--cert", &p(&cert), "--key", &p(&der)],
            "not PEM (no -----BEGIN line; DER or another format): convert it",
        ),
        (
            vec!["--cert", &p(&cert), "--key", &p(&cert)],
            "it holds a certificate, not a private key",
        ),
        (
            vec!["--cert", &p(&key), "--key", &p(&key)],
            "it holds a private key, not a certificate",
        ),
        (vec!["--cert", &p(&cert)], "--cert and --key go together"),
        (vec!["--mode", "hold"], "--mode close or --mode http"),
    ] {
        for engine in ENGINES {
            let mut all = vec![
                "server",
                "--listen",
                "127.0.0.1:0",
                "--duration",
                "1s",
                "--engine",
                engine,
                "--tls",
            ];
            all.extend_from_slice(&args);
            let o = command().args(&all).output().unwrap();
            let e = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{engine} {args:?}: {e}");
            assert!(e.contains(want), "{engine} {args:?}: want {want:?} in {e}");
            assert_eq!(e.trim().lines().count(), 1, "{engine} {args:?}: {e}");
        }
    }
    for (args, want) in [
        (vec!["--tls", "--ca", &p(&missing)], "--ca"),
        (vec!["--tls", "--ca", &p(&junk)], "--ca"),
        (vec!["--tls", "--tls-resume", "ids"], "--tls-version 1.2"),
        (vec!["--tls", "--alpn", ""], "1 to 255 bytes (RFC 7301 3.1)"),
        (
            vec!["--tls", "--alpn", "http/1.1,"],
            "1 to 255 bytes (RFC 7301 3.1)",
        ),
        (vec!["--tls-resume", "tickets"], "--tls"),
        (
            vec!["--tls", "--tls-ciphers", "TLS_RSA_WITH_RC4_128_MD5"],
            "TLS_AES_128_GCM_SHA256 etc.): TLS13_",
        ),
        (
            vec![
                "--tls",
                "--tls-ciphers",
                "TLS13_AES_128_GCM_SHA256,tls_aes_128_gcm_sha256",
            ],
            "names TLS13_AES_128_GCM_SHA256 again",
        ),
        (
            vec![
                "--tls",
                "--tls-version",
                "1.3",
                "--tls-ciphers",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            ],
            "no suite given is of the TLS version(s) offered (--tls-version 1.3)",
        ),
        (
            vec!["--tls", "--tls-ciphers", "TLS13_AES_128_GCM_SHA256,"],
            "an empty name",
        ),
        (vec!["--tls-ciphers", "TLS13_AES_128_GCM_SHA256"], "--tls"),
    ] {
        let mut all = vec!["load", "--target", "127.0.0.1:9", "--duration", "1s"];
        all.extend_from_slice(&args);
        let o = command().args(&all).output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: want {want:?} in {e}");
    }
}

/// `server --tls --cert c.pem --key k.pem --cert-out k.pem` wrote the certificate over the
/// private key it had just read (lost data): an output that is one of the inputs is refused,
/// exit 2, before anything listens, in any spelling.
#[test]
fn lost_data_cert_out_naming_the_key_or_cert_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (cert, key) = cert_files(tmp.path(), "a");
    let (cert_pem, key_pem) = (std::fs::read(&cert).unwrap(), std::fs::read(&key).unwrap());
    let p = |x: &Path| x.display().to_string();
    let dotted = tmp.path().join(".").join("a.key");
    for (out, what) in [
        (p(&key), format!("--key file {}", p(&key))),
        (p(&dotted), format!("--key file {}", p(&key))),
        (p(&cert), format!("--cert file {}", p(&cert))),
    ] {
        let o = command()
            .args([
                "server",
                "--listen",
                "127.0.0.1:0",
                "--duration",
                "1s",
                "--tls",
                "--cert",
                &p(&cert),
                "--key",
                &p(&key),
                "--cert-out",
                &out,
            ])
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{out}: {e}");
        assert!(
            e.contains(&format!("--cert-out {out} is the {what}")),
            "{out}: {e}"
        );
        assert_eq!(std::fs::read(&key).unwrap(), key_pem, "the key is intact");
        assert_eq!(std::fs::read(&cert).unwrap(), cert_pem);
    }
}

/// `load --tls --http --out DIR` keeps the TLS counts (full, resumed) and the TLS handshake
/// histogram in its record (equal to the load's own report); `report` prints them; `merge` of
/// two segments' records sums them exactly.
#[test]
fn tls_load_record_keeps_tls_counts_for_report_and_merge() {
    let _x = testkit::exclusive();
    let (scpu, lcpu) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("runs");
    let od = out_dir.to_str().unwrap().to_string();
    let engine = match server::probe::io_uring() {
        Ok(()) => "io-uring",
        Err(_) => "epoll",
    };
    let loads = testkit::NetNs::run(move |_| {
        let server = start_server(&scpu, engine, &strings(&["--mode", "http"]));
        wait_listening(PORT);
        let loads = testkit::segments_at_one_instant(2, |seg, start_at| {
            command()
                .args([
                    "load",
                    "--target",
                    &format!("localhost:{PORT}"),
                    "--family",
                    "4",
                    "--rate",
                    "100/s",
                    "--duration",
                    "1s",
                    "--warmup",
                    "0s",
                    "--cpus",
                    &lcpu,
                    "--tls",
                    "--insecure",
                    "--tls-resume",
                    "tickets",
                    "--http",
                    "--format",
                    "json",
                    "--out",
                    &od,
                    "--segment",
                    seg,
                    "--start-at",
                    start_at,
                ])
                .output()
                .unwrap()
        });
        stop_server(server);
        loads
    });
    let files = testkit::record_files(&out_dir);
    assert_eq!(files.len(), 2, "{files:?}");
    let mut handshakes = 0;
    for (f, l) in files.iter().zip(&loads) {
        assert_eq!(l.status.code(), Some(0), "{}", stderr(l));
        let t = &json(l)["tls"];
        let rec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let p = &rec["phases"][0];
        for k in [
            "handshakes",
            "full",
            "resumed",
            "tls13",
            "tls12",
            "alpn_agreed",
            "cipher_suites",
        ] {
            assert_eq!(p["tls"][k], t[k], "{k}: {}", p["tls"]);
        }
        // 100 offered per segment; how many complete in the second depends on the host (49
        // on a busy one): what matters is a full one and resumed ones to count and merge.
        assert!(u(&t["handshakes"]) >= 2, "{t}");
        assert!(u(&t["resumed"]) > 0, "{t}");
        handshakes += u(&t["handshakes"]);
        let hist =
            results::record::decode_histogram(p["histograms"]["tls_handshake"].as_str().unwrap())
                .unwrap();
        assert_eq!(hist.len(), u(&t["handshakes"]), "{p}");
        let rep = command().arg("report").arg(f).output().unwrap();
        assert_eq!(rep.status.code(), Some(0), "{}", stderr(&rep));
        let text = String::from_utf8_lossy(&rep.stdout);
        let want = format!(
            "tls: {} handshakes",
            results::numfmt::count(u(&t["handshakes"]))
        );
        assert!(text.contains(&want), "{want}: {text}");
        let want = format!(
            "cipher suites TLS13_AES_128_GCM_SHA256 {}",
            results::numfmt::count(u(&t["handshakes"]))
        );
        assert!(text.contains(&want), "{want}: {text}");
        assert!(text.contains("tls_handshake"), "{text}");
    }
    let rec = testkit::merge(command(), &files, &dir.path().join("merged.json"));
    let p = &rec["phases"][0];
    assert_eq!(u(&p["tls"]["handshakes"]), handshakes, "{}", p["tls"]);
    let hist =
        results::record::decode_histogram(p["histograms"]["tls_handshake"].as_str().unwrap())
            .unwrap();
    assert_eq!(hist.len(), handshakes);
}

/// Resumption when many handshakes of a worker are in flight, with a request on each: a warm
/// worker finds a ticket for every handshake (rustls' own cache keeps only 8 per server, so at
/// 32 in flight about half went full), and a resumed TLS 1.2 handshake — where the client
/// speaks last — sends its Finished and the request in one segment: two segments made the
/// request wait under Nagle for the server's delayed ACK, at least 40 ms (TCP_DELACK_MIN) on
/// every connection.
#[test]
fn tls_resumption_with_many_in_flight_and_a_request_resumes_without_waiting_for_acks() {
    let _x = testkit::exclusive();
    let srv = strings(&["--mode", "http"]);
    for (engine, (version, resume, concurrency)) in ENGINES.iter().flat_map(|e| {
        [
            ("1.3", "tickets", 32u64),
            ("1.2", "ids", 1),
            ("1.2", "tickets", 1),
        ]
        .map(|c| (*e, c))
    }) {
        let load = strings(&[
            "--concurrency",
            &concurrency.to_string(),
            "--insecure",
            "--http",
            "/",
            "--tls-version",
            version,
            "--tls-resume",
            resume,
        ]);
        let case = format!("{engine} {version} {resume} c{concurrency}");
        let (out, s, passive) = round(engine, srv.clone(), load);
        assert_eq!(out.status.code(), Some(0), "{case}: {}", stderr(&out));
        let j = json(&out);
        let t = &j["tls"];
        let hs = u(&t["total_handshakes"]);
        let full = u(&t["total_full"]);
        assert!(hs >= 100, "{case}: {j}");
        assert!(
            (1..=concurrency).contains(&full),
            "{case}: only each slot's first handshake may be full, {full} of {hs} were: {t}"
        );
        assert_eq!(u(&t["total_resumed"]), hs - full, "{case}: {t}");
        assert_eq!(sum(&s, "tls_resumed"), hs - full, "{case}: {s}");
        assert_eq!(passive as u64, hs, "{case}: {s}");
        let p50 = j["http"]["response"]["percentiles"]
            .as_array()
            .and_then(|p| p.iter().find(|x| x[0] == 50.0))
            .map(|x| u(&x[1]))
            .unwrap_or_else(|| panic!("{case}: no response p50: {j}"));
        assert!(
            p50 < 40_000_000,
            "{case}: response p50 {p50} ns is at the delayed-ACK floor (40 ms): a segment waited for an ACK"
        );
    }
}

/// The load's TLS on the io_uring engine (`--load-engine io-uring`), against both server
/// engines: the same accounting as on epoll. Full handshakes (TLS 1.3, TLS 1.2 whose client
/// speaks twice, and a request over TLS 1.3 with `--close server`, which reads to the server's
/// close, longer than one SEND, its response longer than one RECV): the load's handshakes = its successes = attempts = the server's TLS accepts = its
/// accepts = ΔPassiveOpens. Resumption with tickets (one connection in flight): every
/// handshake but the worker's first resumes, counted so on both sides, in TLS 1.3 and in TLS
/// 1.2 with a request (whose Finished and request go in one segment: no wait for a delayed
/// ACK); with 32 in flight and a request on each only each slot's first may be full. A wrong CA: every
/// handshake fails with one class naming the alert the client sent, as on epoll, and the
/// server counts each failed handshake.
#[test]
fn tls_on_the_io_uring_load_engine_counts_handshakes_resumptions_and_alerts() {
    if let Err(why) = loadgen::engine::probe_io_uring() {
        panic!("the io_uring connect engine cannot run here: {why} (this machine kind has io_uring with IORING_OP_SOCKET, Linux >= 5.19; check kernel.io_uring_disabled)");
    }
    let _x = testkit::exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let (cert, key) = cert_files(tmp.path(), "a");
    let (other, _) = cert_files(tmp.path(), "other");
    let uring = strings(&["--load-engine", "io-uring"]);
    let files = strings(&[
        "--cert",
        &cert.display().to_string(),
        "--key",
        &key.display().to_string(),
    ]);
    // Full handshakes, exact counts.
    for (engine, version, http) in [
        ("epoll", "1.3", false),
        ("io-uring", "1.2", false),
        ("io-uring", "auto", true),
    ] {
        let case = format!("server {engine}, load io_uring, {version} http {http}");
        let mut load = strings(&["--rate", "200/s", "--tls-version", version]);
        load.extend(["--ca".into(), cert.display().to_string()]);
        load.extend(uring.clone());
        let mut srv = files.clone();
        if http {
            // A request longer than a slot's TLS output buffer (4 KiB: sent in two parts) and
            // a response longer than a RECV (10 kB of body: several).
            let pad = format!("X-Pad: {}", "p".repeat(6000));
            load.extend(strings(&["--http", "/", "--close", "server"]));
            load.extend(["--http-header".into(), pad]);
            srv.extend(strings(&["--mode", "http:10000"]));
        }
        let (out, s, passive) = round(engine, srv, load);
        assert_eq!(out.status.code(), Some(0), "{case}: {}", stderr(&out));
        let j = json(&out);
        assert_eq!(j["engine"]["engine"], "io_uring", "{case}: {}", j["engine"]);
        let t = &j["tls"];
        let attempts = u(&j["total"]["attempts"]);
        assert!(attempts >= 100, "{case}: {j}");
        for (name, v) in [
            ("load successes", u(&j["total"]["successes"])),
            ("load TLS handshakes", u(&t["total_handshakes"])),
            ("load full handshakes", u(&t["total_full"])),
            ("server TLS accepts", sum(&s, "tls_accepted")),
            ("server accepts", sum(&s, "accepted")),
            ("PassiveOpens", passive as u64),
        ] {
            assert_eq!(v, attempts, "{case}: {name}\nload {j}\nserver {s}");
        }
        assert_eq!(sum(&s, "tls_failed"), 0, "{case}: {s}");
        let key13 = if version == "1.2" { "tls12" } else { "tls13" };
        assert_eq!(u(&t[key13]), u(&t["handshakes"]), "{case}: {t}");
        if http {
            assert_eq!(u(&j["http"]["status_classes"]["2xx"]), attempts, "{j}");
            assert_eq!(sum(&s, "served"), attempts, "{s}");
        }
    }
    // Resumption: one in flight (exact), without and with a request (a resumed TLS 1.2
    // client speaks last: its Finished and the request must go in one segment, or the request
    // waits for the server's delayed ACK), then 32 in flight with a request on each.
    for (engine, version, concurrency, http) in [
        ("epoll", "1.3", 1u64, false),
        ("io-uring", "1.2", 1, true),
        ("epoll", "1.3", 32, true),
    ] {
        let case = format!("server {engine}, load io_uring, {version} tickets c{concurrency}");
        let mut load = strings(&[
            "--concurrency",
            &concurrency.to_string(),
            "--insecure",
            "--tls-version",
            version,
            "--tls-resume",
            "tickets",
        ]);
        load.extend(uring.clone());
        let srv = if http {
            load.extend(strings(&["--http", "/"]));
            strings(&["--mode", "http"])
        } else {
            strings(&["--mode", "close"])
        };
        let (out, s, passive) = round(engine, srv, load);
        assert_eq!(out.status.code(), Some(0), "{case}: {}", stderr(&out));
        let j = json(&out);
        assert_eq!(j["engine"]["engine"], "io_uring", "{case}: {}", j["engine"]);
        let t = &j["tls"];
        let hs = u(&t["total_handshakes"]);
        let full = u(&t["total_full"]);
        assert!(hs >= 20, "{case}: {j}");
        assert_eq!(hs, u(&j["total"]["attempts"]), "{case}: {j}");
        assert!((1..=concurrency).contains(&full), "{case}: {t}");
        if concurrency == 1 {
            assert_eq!(full, 1, "{case}: {t}");
            if http {
                // (With 32 in flight a debug build's queueing alone passes 40 ms.)
                let p50 = j["http"]["response"]["percentiles"]
                    .as_array()
                    .and_then(|p| p.iter().find(|x| x[0] == 50.0))
                    .map(|x| u(&x[1]))
                    .unwrap_or_else(|| panic!("{case}: no response p50: {j}"));
                assert!(p50 < 40_000_000, "{case}: response p50 {p50} ns");
            }
        }
        assert_eq!(u(&t["total_resumed"]), hs - full, "{case}: {t}");
        assert_eq!(sum(&s, "tls_accepted"), hs, "{case}: {s}");
        assert_eq!(sum(&s, "tls_resumed"), hs - full, "{case}: {s}");
        assert_eq!(passive as u64, hs, "{case}: {s}");
    }
    // A wrong CA: failures by alert, as on epoll.
    let mut load = strings(&["--rate", "100/s", "--ca", &other.display().to_string()]);
    load.extend(uring);
    for engine in ENGINES {
        wrong_ca_round(engine, files.clone(), load.clone());
    }
}
/// Issue 36 item 5: `--tls-groups`, `--tls-ciphers` and `--tls-resume-share` are what the
/// handshakes agreed on and how many resumed, counted by the load, the server and the record;
/// the record keeps them as setup, and `compare` refuses two records that differ in them.
#[test]
fn tls_groups_ciphers_and_resume_share_are_what_ran_and_compare_as_setup() {
    let _x = testkit::exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let out_a = tmp.path().join("a");
    let out_b = tmp.path().join("b");
    for (groups, suite, share, out, want_group) in [
        ("p256", "TLS_AES_256_GCM_SHA384", "30%", &out_a, "secp256r1"),
        (
            "x25519",
            "TLS13_AES_128_GCM_SHA256",
            "100%",
            &out_b,
            "X25519",
        ),
    ] {
        let load = strings(&[
            "--concurrency",
            "1",
            "--insecure",
            "--tls-groups",
            groups,
            "--tls-ciphers",
            suite,
            "--tls-resume-share",
            share,
            "--out",
            out.to_str().unwrap(),
        ]);
        let (o, s, passive) = round("epoll", vec![], load);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let t = &json(&o)["tls"];
        let hs = u(&t["handshakes"]);
        assert!(hs >= 50, "too few handshakes to judge a share: {t}");
        // What was negotiated is what was asked, on every handshake.
        let iana_suite = suite.replace("TLS_AES", "TLS13_AES");
        assert_eq!(u(&t["cipher_suites"][&iana_suite]), hs, "{t}");
        assert_eq!(u(&t["groups"][want_group]), hs, "{t}");
        // The share: every handshake full or resumed; one worker, one connection at a time,
        // so exactly `share` of every 100 connections offered a ticket (each found one: the
        // ones that offer none keep theirs), ±1 for the last one in flight at the end.
        let (full, resumed) = (u(&t["full"]), u(&t["resumed"]));
        assert_eq!(full + resumed, hs, "{t}");
        let pct: u64 = share.trim_end_matches('%').parse().unwrap();
        let want = hs * pct / 100;
        assert!(
            resumed + 1 >= want && resumed <= want + 1,
            "{share}: {resumed} of {hs} resumed, want {want} ± 1: {t}"
        );
        assert_eq!(sum(&s, "tls_resumed"), resumed, "{s}");
        assert_eq!(sum(&s, "tls_accepted") as i64, passive, "{s}");
        // The record: the setup offered and the groups agreed.
        let files = testkit::record_files(out);
        let rec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
        let setup = &rec["run"]["tls"];
        assert_eq!(setup["groups"], serde_json::json!([want_group]), "{setup}");
        assert_eq!(setup["ciphers"], serde_json::json!([iana_suite]), "{setup}");
        assert_eq!(u(&setup["resume_share_pct"]), pct, "{setup}");
        assert_eq!(setup["verified"], false, "{setup}");
        assert_eq!(rec["phases"][0]["tls"]["groups"], t["groups"], "{rec}");
        // The text report names the group agreed, and its first line the unverified run.
        let rep = command().arg("report").arg(&files[0]).output().unwrap();
        let text = String::from_utf8_lossy(&rep.stdout);
        assert!(
            text.lines().next().unwrap().contains("TLS UNVERIFIED"),
            "{text}"
        );
        assert!(
            text.contains(&format!("key exchange groups {want_group}")),
            "{text}"
        );
    }
    let (a, b) = (
        testkit::record_files(&out_a)[0].clone(),
        testkit::record_files(&out_b)[0].clone(),
    );
    let o = command()
        .args(["compare"])
        .arg(&a)
        .arg("--")
        .arg(&b)
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    for want in [
        "TLS groups: A secp256r1, B X25519",
        "TLS ciphers: A TLS13_AES_256_GCM_SHA384, B TLS13_AES_128_GCM_SHA256",
        "TLS resumption: A tickets 30%, B tickets 100%",
    ] {
        assert!(e.contains(want), "want {want:?} in {e}");
    }
}

/// Like for like: `--tls-resume-share 0%` alone turned ticket resumption on (recorded
/// "tickets 0%") and then offered no session, and the load warned that the server offers no
/// resumption. A share of 0% alone now leaves resumption off: every handshake full on both
/// sides, the record says resumption off with no share, and no warning. With `--tls-resume
/// tickets` given too, the tickets are kept and never offered: still none resumed, recorded as
/// "tickets 0%", and still no warning blaming the server.
#[test]
fn like_for_like_a_resume_share_of_zero_alone_leaves_resumption_off() {
    let _x = testkit::exclusive();
    let tmp = tempfile::tempdir().unwrap();
    for (version, explicit) in [("1.3", false), ("1.2", false), ("1.3", true)] {
        let out = tmp.path().join(format!("{version}-{explicit}"));
        let mut load = strings(&[
            "--concurrency",
            "1",
            "--insecure",
            "--tls-version",
            version,
            "--tls-resume-share",
            "0%",
            "--out",
            out.to_str().unwrap(),
        ]);
        if explicit {
            load.extend(strings(&["--tls-resume", "tickets"]));
        }
        let (o, s, passive) = round("epoll", vec![], load);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(!err.contains("was asked for, but none"), "{err}");
        let t = &json(&o)["tls"];
        let hs = u(&t["handshakes"]);
        assert!(hs >= 10, "too few handshakes to judge: {t}");
        assert_eq!((u(&t["full"]), u(&t["resumed"])), (hs, 0), "{t}");
        assert_eq!(sum(&s, "tls_resumed"), 0, "{s}");
        assert_eq!(sum(&s, "tls_accepted") as i64, passive, "{s}");
        let files = testkit::record_files(&out);
        let rec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
        let setup = &rec["run"]["tls"];
        if explicit {
            assert_eq!(setup["resume"], "tickets", "{setup}");
            assert_eq!(u(&setup["resume_share_pct"]), 0, "{setup}");
        } else {
            assert_eq!(setup["resume"], "off", "{setup}");
            assert!(setup["resume_share_pct"].is_null(), "{setup}");
        }
    }
}

/// Issue 36 item 6: `bench --target HOST --tls` checks the certificate as `load --tls` does:
/// against connstorm's own TLS server it passes with `--ca` (its certificate), fails every
/// handshake by the alert this client sent without it (the system's CAs do not know it), and
/// passes with `--insecure`, whose first line then says TLS UNVERIFIED.
#[test]
fn bench_target_tls_verifies_as_load_does() {
    let _x = testkit::exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let ca = tmp.path().join("server.pem");
    let ca_s = ca.to_str().unwrap().to_string();
    let out_dir = tmp.path().join("runs");
    let out_s = out_dir.to_str().unwrap().to_string();
    let (scpu, lcpu) = cpus();
    let outs = testkit::NetNs::run(move |_| {
        let server = start_server(&scpu, "epoll", &strings(&["--cert-out", &ca_s]));
        wait_listening(PORT);
        let target = format!("127.0.0.1:{PORT}");
        let outs: Vec<Output> = [
            // bench takes load's --tls-groups too: the record says what was agreed.
            vec!["--ca", ca_s.as_str(), "--tls-groups", "p384"],
            vec![],
            vec!["--insecure"],
        ]
        .into_iter()
        .enumerate()
        .map(|(i, extra)| {
            let out = format!("{out_s}/{i}");
            let mut a = strings(&[
                "bench",
                "--target",
                &target,
                "--tls",
                "--duration",
                "1s",
                "--concurrency",
                "2",
                "--load-cpus",
                &lcpu,
                "--rate",
                "200/s",
                "--out",
                &out,
            ]);
            a.extend(strings(&extra));
            command().args(&a).output().unwrap()
        })
        .collect();
        stop_server(server);
        outs
    });
    let text = |o: &Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let (with_ca, without, insecure) = (&outs[0], &outs[1], &outs[2]);
    assert_eq!(
        with_ca.status.code(),
        Some(0),
        "{}{}",
        text(with_ca),
        stderr(with_ca)
    );
    let first = |o: &Output| text(o).lines().next().unwrap_or_default().to_string();
    assert!(!first(with_ca).contains("UNVERIFIED"), "{}", text(with_ca));
    assert!(!text(with_ca).contains("TLS alert"), "{}", text(with_ca));
    let rec = results::RunRecord::read(&testkit::record_files(&out_dir.join("0"))[0]).unwrap();
    let setup = rec.run.tls.as_ref().expect("TLS setup in the record");
    assert_eq!(setup.groups, ["secp384r1"], "{setup:?}");
    assert!(
        setup.verified && setup.server_name == "127.0.0.1",
        "{setup:?}"
    );
    for p in &rec.phases {
        let t = p.tls.as_ref().unwrap();
        assert!(t.handshakes > 0, "{}: {t:?}", p.name);
        assert_eq!(
            t.groups.get("secp384r1"),
            Some(&t.handshakes),
            "{}: {t:?}",
            p.name
        );
    }
    // Without --ca: the system's bundle does not hold the server's certificate; every
    // handshake fails with the alert this client sent, and nothing is measured (exit 3).
    assert_ne!(without.status.code(), Some(0), "{}", text(without));
    assert!(
        text(without).contains("TLS alert UnknownCA sent")
            || stderr(without).contains("TLS alert UnknownCA sent"),
        "{}{}",
        text(without),
        stderr(without)
    );
    assert_eq!(
        insecure.status.code(),
        Some(0),
        "{}{}",
        text(insecure),
        stderr(insecure)
    );
    assert!(
        first(insecure).contains("TLS UNVERIFIED"),
        "{}",
        text(insecure)
    );
}

/// Issue 36, bad input: a group the provider lacks, a resume share outside 0–100% (or with
/// resumption off), a TLS 1.3 group with TLS 1.2 only, a certificate the groups cannot use,
/// `--insecure` with `--ca`, `bench --insecure` without `--target`: one line each naming the
/// option, exit 2 before anything runs.
#[test]
fn bad_tls_groups_shares_and_trust_exit_2_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (cert, key) = cert_files(tmp.path(), "a");
    let p = |x: &Path| x.display().to_string();
    let load = |extra: &[&str]| {
        let mut v = vec![
            "load",
            "--target",
            "127.0.0.1:9",
            "--duration",
            "1s",
            "--tls",
        ];
        v.extend_from_slice(extra);
        v.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let bench = |extra: &[&str]| {
        let mut v = vec!["bench", "--duration", "1s", "--tls"];
        v.extend_from_slice(extra);
        v.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    for (args, want) in [
        (
            load(&["--tls-groups", "ffdhe2048"]),
            "--tls-groups: \"ffdhe2048\" is not a key exchange group",
        ),
        (
            load(&["--tls-ciphers", "TLS_RSA_WITH_RC4_128_MD5"]),
            "--tls-ciphers: \"TLS_RSA_WITH_RC4_128_MD5\" is not a cipher suite",
        ),
        (
            load(&["--tls-resume-share", "150%"]),
            "--tls-resume-share 150%: give a whole percent from 0% to 100%",
        ),
        (
            load(&["--tls-resume", "off", "--tls-resume-share", "30%"]),
            "--tls-resume off asks for none",
        ),
        (
            load(&["--tls-version", "1.2", "--tls-groups", "X25519MLKEM768"]),
            "--tls-groups: X25519MLKEM768 is a TLS 1.3 group",
        ),
        (
            load(&["--insecure", "--ca", &p(&cert)]),
            "--insecure and --ca",
        ),
        (
            bench(&["--tls-groups", "p521"]),
            "--tls-groups: \"p521\" is not a key exchange group",
        ),
        (
            bench(&["--tls-resume-share", "-5%"]),
            "--tls-resume-share -5%",
        ),
        (
            bench(&["--insecure", "--ca", &p(&cert)]),
            "--insecure and --ca",
        ),
        // Accepted, it checked nothing and marked the run TLS UNVERIFIED, though bench knows
        // its own server's certificate (and so does its dry run).
        (
            bench(&["--insecure"]),
            "--insecure is for --target: bench checks its own server's certificate",
        ),
        (
            bench(&["--insecure", "--dry-run"]),
            "--insecure is for --target: bench checks its own server's certificate",
        ),
        (
            bench(&["--tls-version", "1.2", "--tls-groups", "x25519"]),
            "--tls-groups X25519: the server's certificate is ECDSA on secp256r1",
        ),
        (
            bench(&[
                "--cert",
                &p(&cert),
                "--key",
                &p(&key),
                "--sni",
                "gateway.example",
            ]),
            "the load's check refuses the server's certificate",
        ),
        (
            strings(&[
                "server",
                "--listen",
                "127.0.0.1:0",
                "--duration",
                "1s",
                "--tls",
                "--tls-groups",
                "x448",
            ]),
            "--tls-groups: \"x448\" is not a key exchange group",
        ),
    ] {
        let o = command().args(&args).output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: want {want:?} in {e}");
        assert_eq!(e.trim().lines().count(), 1, "{args:?}: {e}");
        assert!(
            o.stdout.is_empty(),
            "{args:?}: ran: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

/// `server --tls-groups` limits the groups the server takes: a client offering X25519 first and
/// P-256 second agrees on P-256 with a server that takes only P-256 (after a
/// HelloRetryRequest), and one offering X25519 alone fails every handshake by the alert the
/// server sent.
#[test]
fn server_tls_groups_limit_what_is_agreed() {
    let _x = testkit::exclusive();
    let srv = strings(&["--tls-groups", "p256"]);
    let (o, _, _) = round(
        "epoll",
        srv.clone(),
        strings(&[
            "--insecure",
            "--tls-groups",
            "x25519,p256",
            "--concurrency",
            "2",
        ]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t = &json(&o)["tls"];
    let hs = u(&t["handshakes"]);
    assert!(hs > 0, "{t}");
    assert_eq!(u(&t["groups"]["secp256r1"]), hs, "{t}");
    let (o, _, _) = round(
        "epoll",
        srv,
        strings(&["--insecure", "--tls-groups", "x25519", "--concurrency", "2"]),
    );
    let j = json(&o);
    assert_eq!(u(&j["successes"]), 0, "{j}");
    let fails = j["failures"].to_string();
    assert!(
        fails.contains("TLS alert HandshakeFailure received"),
        "{fails}"
    );
}

/// Issue 36 item 4: `load --tls` measures the crypto floor of its full handshakes in-process
/// after the run — the negotiated group's key exchange (X25519, what both sides offer first)
/// and the server certificate's signature verification (its key type read from the certificate
/// received) — on its load CPU: positive and finite, below the client's CPU per handshake,
/// named in the text report with the ratio, and in the JSON. Verified against `--ca` the
/// certificate's own signature counts too (2 verifications); `--insecure` checks only the
/// handshake's (1).
#[test]
fn load_tls_measures_the_crypto_floor_of_its_full_handshakes() {
    let _x = testkit::exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let (cert, key) = cert_files(tmp.path(), "p256");
    let ed = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
    let ed_cert = rcgen::CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .self_signed(&ed)
        .unwrap();
    let (ec, ek) = (tmp.path().join("ed.pem"), tmp.path().join("ed.key"));
    std::fs::write(&ec, ed_cert.pem()).unwrap();
    std::fs::write(&ek, ed.serialize_pem()).unwrap();
    let (_, lcpu) = cpus();
    for (c, k, verify, sig, n) in [
        (&cert, &key, "--ca", "ECDSA-P256-SHA256", 2),
        (&ec, &ek, "--insecure", "Ed25519", 1),
    ] {
        let srv = strings(&["--cert", c.to_str().unwrap(), "--key", k.to_str().unwrap()]);
        let mut load = strings(&["--concurrency", "8", verify]);
        if verify == "--ca" {
            load.push(c.display().to_string());
        }
        let (out, _, _) = round("epoll", srv.clone(), load.clone());
        assert_eq!(out.status.code(), Some(0), "{sig}: {}", stderr(&out));
        let j = json(&out);
        let f = &j["crypto_floor"];
        assert_eq!(f["group"], "X25519", "{j}");
        assert_eq!(j["tls"]["floor"]["group"], f["group"], "{j}");
        assert_eq!(f["signature"], sig, "{f}");
        assert_eq!(f["verifications"], n, "{f}");
        assert_eq!(f["cpu"].as_u64(), Some(lcpu.parse().unwrap()), "{f}");
        let floor = f["floor_ns"].as_f64().unwrap();
        let (kx, v) = (
            f["kx_ns"].as_f64().unwrap(),
            f["verify_ns"].as_f64().unwrap(),
        );
        assert!(floor.is_finite() && kx > 0.0 && v > 0.0, "{f}");
        assert!((floor - (kx + n as f64 * v)).abs() < 1e-6 * floor, "{f}");
        assert!(
            (f["per_sec"].as_f64().unwrap() * floor - 1e9).abs() < 1.0,
            "{f}"
        );
        let client = f["client_cpu_per_handshake_ns"].as_f64().unwrap();
        assert!(
            client > floor,
            "client CPU per handshake {client} ns below the floor: {f}"
        );
        assert_eq!(f["all_full"], true, "{f}");
        // The text report: the floor and the ratio, after the TLS lines.
        let mut text_load = load.clone();
        text_load.extend(strings(&["--format", "text"]));
        let (scpu, lcpu2) = cpus();
        let (srv2, tl) = (srv.clone(), text_load);
        let out = testkit::NetNs::run(move |_| {
            let server = start_server(&scpu, "epoll", &srv2);
            wait_listening(PORT);
            let mut args = load_base(&lcpu2, false);
            args.extend(tl);
            let out = command().args(&args).output().expect("run connstorm load");
            stop_server(server);
            out
        });
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| {
                l.trim_start()
                    .starts_with("crypto floor (in-process, aws-lc-rs, CPU ")
            })
            .unwrap_or_else(|| panic!("no floor line: {text}"));
        assert!(line.contains("X25519 keygen+agree"), "{line}");
        assert!(
            line.contains(&format!("{sig} verify")) && line.contains(&format!("×{n})")),
            "{line}"
        );
        assert!(
            text.contains("client CPU per full handshake ")
                && text.contains("× the crypto floor of "),
            "{text}"
        );
    }
}

/// Files people bring: `server --tls --cert-out FIFO` with no reader blocked in open(2) before
/// the server listened, forever (SIGINT could not end it). Refused at once (exit 2, one line
/// naming --cert-out and the FIFO); a FIFO with a reader still gets the certificate.
#[test]
fn cert_out_to_a_fifo_without_a_reader_is_refused_not_waited_on() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("cert.pem");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let mut child = command()
        .args([
            "server",
            "--listen",
            "127.0.0.1:0",
            "--duration",
            "1s",
            "--tls",
        ])
        .arg("--cert-out")
        .arg(&fifo)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(20) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("server --cert-out FIFO still blocked after 20 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let o = child.wait_with_output().unwrap();
    let e = stderr(&o);
    assert_eq!(status.code(), Some(2), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("--cert-out") && e.contains("a FIFO that no process reads"),
        "{e}"
    );
    // With a reader the certificate comes through the FIFO.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let mut got = None;
    for _ in 0..100 {
        let o = command()
            .args([
                "server",
                "--listen",
                "127.0.0.1:0",
                "--duration",
                "1s",
                "--tls",
            ])
            .arg("--cert-out")
            .arg(&fifo)
            .output()
            .unwrap();
        if o.status.success() {
            got = Some(reader.join().unwrap());
            break;
        }
        // The reader may not have opened its end yet: ENXIO, try again.
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pem = got.expect("the certificate through a FIFO with a reader");
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
}
