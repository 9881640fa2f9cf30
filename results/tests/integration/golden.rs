//! Golden run records: checked-in files read back to the numbers they were made from.
//!
//! `tests/data/golden-v2.json` was written by [`golden_record`] (set `CONNSTORM_BLESS=1` to
//! rewrite it after a deliberate, version-bumping format change). The test reads the file, not
//! the builder's output, so a change that silently breaks reading old files fails here.
//! `tests/data/golden-v1.json` is the same record as schema 1 wrote it (no phase start, no
//! per-second histograms): the reader for the previous version must still read it.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use results::analysis::LatencySummary;
use results::record::{
    new_latency_histogram, CpuUsage, Histograms, Latency, Pattern, PhaseRecord, RecordError,
    RunRecord, SideCpu, TimelineRow,
};

use crate::util::data;

/// Handshake samples of the golden record: 1 µs, 2 µs, ... 1000 µs, once each (in ns).
fn handshake() -> Histogram<u64> {
    let mut h = new_latency_histogram();
    for us in 1..=1_000u64 {
        h.record(us * 1_000).unwrap();
    }
    h
}

/// Service samples: 500 × 20 µs and 500 × 40 µs.
fn service() -> Histogram<u64> {
    let mut h = new_latency_histogram();
    h.record_n(20_000, 500).unwrap();
    h.record_n(40_000, 500).unwrap();
    h
}

/// First-byte samples: 999 × 100 µs and one 5 ms.
fn first_byte() -> Histogram<u64> {
    let mut h = new_latency_histogram();
    h.record_n(100_000, 999).unwrap();
    h.record(5_000_000).unwrap();
    h
}

/// The record `golden-v1.json` holds.
fn golden_record() -> RunRecord {
    let mut rec = RunRecord::new(
        "golden",
        serde_json::json!({"rate": "1000/s", "duration": "1s"}),
    );
    rec.run.command = "bench".into();
    rec.run.engine = "io_uring".into();
    rec.run.started_at = "2026-11-29T22:15:03Z".into();
    rec.run.started_unix_ms = Some(1_795_990_503_000);
    rec.run.server_cpus = vec![0];
    rec.run.load_cpus = vec![1];
    rec.host.kernel_release = Some("6.12.0".into());
    rec.phases.push(PhaseRecord {
        name: "latency".into(),
        pattern: Pattern::Open {
            rate_per_sec: 1_000.0,
            arrival: Default::default(),
        },
        offered_per_sec: Some(1_000.0),
        achieved_per_sec: Some(1_000.0),
        cpm: Some(60_000.0),
        measured_secs: 1.0,
        attempts: 1_002,
        successes: 1_000,
        failures: BTreeMap::from([("ETIMEDOUT".into(), 2)]),
        histograms: Histograms::encode(&handshake(), &service(), Some(&first_byte())),
        timeline: vec![TimelineRow {
            t_secs: 1.0,
            length_secs: 1.0,
            attempts: 1_002,
            successes: 1_000,
            failures: BTreeMap::from([("ETIMEDOUT".into(), 2)]),
            p50_ns: handshake().value_at_quantile(0.5),
            p99_ns: handshake().value_at_quantile(0.99),
            dropped: 0,
            late: 0,
            handshake: Some(results::record::encode_histogram(&handshake())),
        }],
        start_unix_ms: Some(1_795_990_503_500),
        start_offset_ms: Some(500.0),
        cpu: CpuUsage {
            server: Some(SideCpu::new(
                10_000_000,
                30_000_000,
                1_000_000_000,
                1,
                1_000,
            )),
            load: SideCpu::new(20_000_000, 50_000_000, 1_000_000_000, 1, 1_000),
        },
        counters: BTreeMap::from([
            ("TcpExt.ListenOverflows".into(), 3),
            ("Tcp.ActiveOpens".into(), 1_002),
        ]),
        ..PhaseRecord::default()
    });
    rec
}

/// What schema 1 held of [`golden_record`]: no phase start, no per-second figures.
fn golden_record_v1() -> RunRecord {
    let mut rec = golden_record();
    rec.run.started_unix_ms = None;
    for p in &mut rec.phases {
        p.start_unix_ms = None;
        p.start_offset_ms = None;
        for r in &mut p.timeline {
            r.handshake = None;
        }
    }
    rec
}

#[test]
fn schema_one_records_are_read_by_the_previous_version_reader() {
    let rec = RunRecord::read(&data("golden-v1.json")).unwrap();
    assert_eq!(rec.schema_version, results::SCHEMA_VERSION);
    assert_eq!(rec, golden_record_v1());
    // Schema 1 stored 0 µs per connection for a phase with no connection: now n/a.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("golden-v1.json")).unwrap()).unwrap();
    v["phases"][0]["successes"] = 0.into();
    v["phases"][0]["achieved_per_sec"] = 0.0.into();
    v["phases"][0]["cpm"] = 0.0.into();
    // No connection: no handshake sample either.
    let empty = results::record::encode_histogram(&new_latency_histogram());
    v["phases"][0]["histograms"]["handshake"] = empty.clone().into();
    v["phases"][0]["histograms"]["service"] = empty.into();
    v["phases"][0]["cpu"]["load"]["us_per_conn_sys"] = 0.0.into();
    v["phases"][0]["cpu"]["load"]["us_per_conn_user"] = 0.0.into();
    let rec = RunRecord::from_json(&v.to_string(), std::path::Path::new("v1.json")).unwrap();
    let load = rec.phases[0].cpu.load;
    assert_eq!((load.us_per_conn_sys, load.us_per_conn()), (None, None));
    assert_eq!(load.sys_ns, 50_000_000, "the CPU time itself is kept");
}

#[test]
fn golden_record_reads_back_to_the_numbers_it_was_made_from() {
    let path = data("golden-v2.json");
    if std::env::var_os("CONNSTORM_BLESS").is_some() {
        std::fs::write(&path, golden_record().to_json() + "\n").unwrap();
    }
    let rec = RunRecord::read(&path).unwrap();
    assert_eq!(rec, golden_record());
    assert_eq!(rec.phases[0].start_offset_ms, Some(500.0));
    let phase = rec.phase("latency").unwrap();

    let hs = phase
        .histograms
        .decode(Latency::Handshake)
        .unwrap()
        .unwrap();
    assert_eq!(hs, handshake());
    let s = LatencySummary::of(&hs);
    assert_eq!(s.count, 1_000);
    // The 500th of 1 µs..1000 µs is 500 µs, the 990th 990 µs (to HdrHistogram's resolution).
    assert_eq!(s.p50_ns, hs.highest_equivalent(500_000));
    assert_eq!(s.p99_ns, hs.highest_equivalent(990_000));
    assert_eq!(s.max_ns, hs.highest_equivalent(1_000_000));
    assert!(
        (s.mean_ns - 500_500.0).abs() / 500_500.0 < 1e-3,
        "mean {}",
        s.mean_ns
    );

    let fb = LatencySummary::of(
        &phase
            .histograms
            .decode(Latency::FirstByte)
            .unwrap()
            .unwrap(),
    );
    assert_eq!(fb.p99_ns, fb.p50_ns, "999 of 1000 samples are 100 µs");
    assert!(fb.max_ns >= 5_000_000);

    assert_eq!(phase.failed(), 2);
    assert_eq!(phase.drops(), vec![("TcpExt.ListenOverflows", 3)]);
    let load = phase.cpu.load;
    assert!(
        (load.us_per_conn_sys.unwrap() - 50.0).abs() < 1e-9,
        "50 ms of sys over 1000 connections"
    );
    assert!((load.sys_pct().unwrap() - 5.0).abs() < 1e-9);
}

#[test]
fn golden_files_with_bad_content_give_errors_naming_them() {
    type Expect = fn(&RecordError) -> bool;
    let cases: [(&str, Expect); 4] = [
        ("newer-schema.json", |e| {
            matches!(e, RecordError::NewerSchema { .. })
        }),
        ("truncated.json", |e| {
            matches!(e, RecordError::Truncated { .. })
        }),
        ("garbage.json", |e| matches!(e, RecordError::NotJson { .. })),
        ("missing-field.json", |e| {
            matches!(e, RecordError::Invalid { .. })
        }),
    ];
    for (name, expected) in cases {
        let err = RunRecord::read(&data(name)).unwrap_err();
        assert!(expected(&err), "{name}: unexpected {err:?}");
        assert!(err.to_string().contains(name), "{name}: {err}");
    }
    let err = RunRecord::read(&data("does-not-exist.json")).unwrap_err();
    assert!(matches!(err, RecordError::Read { .. }), "{err}");
}

/// Like for like: a record of `bench --close server` against its own server in `--mode rst`
/// (the server's default without --tls/--http) reads as the server's RST, not as a FIN that
/// leaves TIME_WAIT on the server; with `--mode close` or an external server it reads as before.
#[test]
fn a_record_names_the_servers_rst_when_its_own_server_resets() {
    let mut rec = RunRecord::example();
    for p in &mut rec.phases {
        p.http = None;
        p.tls = None;
    }
    rec.run.close_mode = "server".into();
    rec.run.server_mode = "rst".into();
    let w = rec.wire().unwrap();
    assert!(
        w.starts_with("wire: TCP, server RST first after the handshake"),
        "{w}"
    );
    for mode in ["close", "external"] {
        rec.run.server_mode = mode.into();
        assert_eq!(
            rec.wire().unwrap(),
            "wire: TCP, server closes first after the handshake, TIME_WAIT on the server"
        );
    }
}
