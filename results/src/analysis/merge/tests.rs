use std::collections::BTreeMap;
use std::path::PathBuf;

use hdrhistogram::Histogram;

use super::*;
use crate::record::new_latency_histogram;
use crate::record::{Arrival, CrossCheck, NetnsIdentity, Pattern, SegmentInfo, WorkerAccepts};

const T0_MS: u64 = 1_795_990_503_000;

/// One generator's record: segment `index/count`, `rate` per second for `secs` seconds, every
/// handshake `lat_ns + index` ns, started `skew_ms` after T0.
pub(crate) fn load(index: u32, count: u32, rate: u64, secs: u64, skew_ms: u64) -> MergeInput {
    let lat = 50_000 + 10_000 * u64::from(index);
    let mut total = new_latency_histogram();
    let mut timeline = Vec::new();
    for s in 1..=secs {
        let mut h = new_latency_histogram();
        h.record_n(lat, rate).unwrap();
        total.add(&h).unwrap();
        timeline.push(TimelineRow {
            t_secs: s as f64,
            attempts: rate,
            successes: rate,
            p50_ns: lat,
            p99_ns: lat,
            handshake: Some(encode_histogram(&h)),
            ..TimelineRow::default()
        });
    }
    let successes = rate * secs;
    let mut rec = RunRecord::new("seg", serde_json::json!({"segment": index}));
    rec.role = Role::Load;
    rec.run.started_unix_ms = Some(T0_MS + skew_ms);
    rec.segment = Some(SegmentInfo {
        index,
        count,
        planned_start_unix_ms: Some(T0_MS),
        real_start_unix_ms: T0_MS + skew_ms,
        clock_sync: "synchronized".into(),
        clock_offset_ms: Some(0.1),
        clock_source: "chronyc tracking".into(),
        whole_config: Some(whole_config(secs)),
    });
    rec.counters_netns = Some(NetnsIdentity {
        inode: 4_026_532_000 + u64::from(index),
        boot_id: Some("b00t".into()),
        hostname: Some(format!("gen{index}")),
    });
    rec.phases.push(PhaseRecord {
        name: "load".into(),
        pattern: Pattern::Open {
            rate_per_sec: rate as f64,
            arrival: Arrival::Uniform,
        },
        offered_per_sec: Some(rate as f64),
        achieved_per_sec: Some(successes as f64 / secs as f64),
        cpm: Some(successes as f64 / secs as f64 * 60.0),
        measured_secs: secs as f64,
        start_unix_ms: Some(T0_MS + skew_ms),
        attempts: successes,
        successes,
        histograms: Histograms::encode(&total, &total, None),
        timeline,
        counters: BTreeMap::from([("Tcp.ActiveOpens".into(), successes as i64)]),
        cross_check: Some(CrossCheck {
            load_successes: successes,
            kernel_active_opens: Some(successes as i64),
            load_attempts: Some(successes),
            agree: true,
            ..CrossCheck::default()
        }),
        ..PhaseRecord::default()
    });
    MergeInput {
        path: PathBuf::from(format!("/runs/seg{index}.json")),
        schema_version: crate::SCHEMA_VERSION,
        record: rec,
    }
}

/// The whole run's load configuration every fixture generator was given (as `load` stores it).
fn whole_config(secs: u64) -> serde_json::Value {
    serde_json::json!({
        "targets": ["10.0.0.1:9000"],
        "pattern": {"kind": "open", "rate_per_sec": 1006.0, "arrival": "uniform"},
        "duration": {"secs": secs, "nanos": 0},
        "warmup": {"secs": 0, "nanos": 0},
        "cpus": [1],
        "close": "rst",
        "sources": [],
        "connect_timeout": {"secs": 3, "nanos": 0},
        "expect_bytes": null,
        "max_in_flight": 3018,
        "late_threshold": {"secs": 0, "nanos": 1_000_000},
        "http": null
    })
}

pub(crate) fn server(accepted: u64, passive: i64) -> MergeInput {
    let mut rec = RunRecord::new("srv", serde_json::Value::Null);
    rec.role = Role::Server;
    let h = new_latency_histogram();
    rec.phases.push(PhaseRecord {
        name: "server".into(),
        histograms: Histograms::encode(&h, &h, None),
        server: Some(ServerSide {
            workers: vec![WorkerAccepts {
                cpu: 0,
                accepted,
                cpu_run_ns: None,
            }],
            accept_errors: BTreeMap::new(),
            ..ServerSide::default()
        }),
        counters: BTreeMap::from([("Tcp.PassiveOpens".into(), passive)]),
        ..PhaseRecord::default()
    });
    MergeInput {
        path: PathBuf::from("/runs/server.json"),
        schema_version: crate::SCHEMA_VERSION,
        record: rec,
    }
}

pub(crate) fn four() -> Vec<MergeInput> {
    (0..4)
        .map(|i| load(i, 4, 250 + u64::from(i), 3, 0))
        .collect()
}

#[test]
fn counts_histograms_and_timelines_sum_exactly() {
    let inputs = four();
    let m = merge(&inputs).unwrap();
    let p = &m.record.phases[0];
    let want: u64 = (0..4).map(|i| (250 + i) * 3).sum();
    assert_eq!(p.successes, want);
    assert_eq!(p.attempts, want);
    assert_eq!(p.counters["Tcp.ActiveOpens"], want as i64);
    assert_eq!(p.offered_per_sec, Some(1_006.0));
    assert!(matches!(p.pattern, Pattern::Open { rate_per_sec, .. } if rate_per_sec == 1_006.0));
    assert!((p.achieved_per_sec.unwrap() - want as f64 / 3.0).abs() < 1e-9);
    assert!(p.inconsistency().is_none(), "{:?}", p.inconsistency());
    // Bucket by bucket: each generator's latency value holds exactly its own count.
    let h = p.histograms.decode(Latency::Handshake).unwrap().unwrap();
    assert_eq!(h.len(), want);
    for i in 0..4u64 {
        assert_eq!(
            h.count_at(50_000 + 10_000 * i),
            (250 + i) * 3,
            "bucket of generator {i}"
        );
    }
    assert_eq!(p.timeline.len(), 3);
    for (k, row) in p.timeline.iter().enumerate() {
        assert_eq!(row.t_secs, (k + 1) as f64);
        assert_eq!(row.successes, 1_006);
        let rh = decode_histogram(row.handshake.as_deref().unwrap()).unwrap();
        assert_eq!(rh.len(), 1_006);
    }
    let c = p.cross_check.as_ref().unwrap();
    assert_eq!(c.load_successes, want);
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    assert_eq!(m.record.role, Role::Merged);
    // The merged record reads back as a valid record.
    let back = RunRecord::from_json(&m.record.to_json(), std::path::Path::new("/m.json")).unwrap();
    assert_eq!(back.phases[0].successes, want);
}

#[test]
fn overlapping_missing_and_mismatched_segments_are_refused_naming_files() {
    let mut inputs = four();
    inputs[3] = load(2, 4, 250, 3, 0);
    inputs[3].path = PathBuf::from("/runs/dup.json");
    let e = merge(&inputs).unwrap_err().to_string();
    assert!(
        e.contains("overlap") && e.contains("/runs/seg2.json") && e.contains("/runs/dup.json"),
        "{e}"
    );

    let inputs: Vec<MergeInput> = four().into_iter().take(3).collect();
    let e = merge(&inputs).unwrap_err();
    assert!(
        matches!(&e, MergeError::Missing { missing, .. } if missing == "3"),
        "{e}"
    );
    assert!(e.to_string().contains("/runs/seg0.json=0"), "{e}");

    let mut inputs = four();
    inputs[1] = load(1, 3, 250, 3, 0);
    let e = merge(&inputs).unwrap_err().to_string();
    assert!(
        e.contains("segment of 4") && e.contains("/runs/seg1.json"),
        "{e}"
    );
}

#[test]
fn different_schema_versions_and_bench_records_are_refused() {
    let mut inputs = four();
    inputs[2].schema_version = 1;
    let e = merge(&inputs).unwrap_err().to_string();
    assert!(
        e.contains("schema 1") && e.contains("/runs/seg2.json"),
        "{e}"
    );

    let mut inputs = four();
    inputs[0].record.role = Role::Bench;
    let e = merge(&inputs).unwrap_err().to_string();
    assert!(
        e.contains("bench record") && e.contains("/runs/seg0.json"),
        "{e}"
    );
}

#[test]
fn histograms_of_other_bounds_are_refused_not_rescaled() {
    let mut inputs = four();
    let mut other: Histogram<u64> = Histogram::new_with_bounds(1, 10_000_000_000, 2).unwrap();
    other.record_n(50_001, 750).unwrap();
    inputs[1].record.phases[0].histograms.handshake = encode_histogram(&other);
    let e = merge(&inputs).unwrap_err();
    assert!(
        matches!(
            e,
            MergeError::HistogramBounds {
                which: "handshake",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("/runs/seg1.json"), "{e}");
}

#[test]
fn start_skew_is_warned_and_timelines_align_on_wall_clock_seconds() {
    // Generator 1 starts a whole second late: its first second lines up with the others' second.
    let inputs = vec![load(0, 2, 100, 3, 0), load(1, 2, 100, 3, 1_000)];
    let m = merge(&inputs).unwrap();
    assert!(
        m.warnings
            .iter()
            .any(|w| w.contains("start skew 1000 ms") && w.contains("/runs/seg1.json")),
        "{:?}",
        m.warnings
    );
    let p = &m.record.phases[0];
    let rows: Vec<u64> = p.timeline.iter().map(|r| r.successes).collect();
    assert_eq!(rows, vec![100, 200, 200, 100]);
    assert!((p.measured_secs - 4.0).abs() < 1e-9);

    // A few ms of skew stays in the same second and below the warning bound.
    let inputs = vec![load(0, 2, 100, 3, 0), load(1, 2, 100, 3, 4)];
    let m = merge(&inputs).unwrap();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    assert_eq!(m.record.phases[0].timeline.len(), 3);
}

#[test]
fn server_records_cross_check_accepts_against_handshakes() {
    let mut inputs = four();
    let want: u64 = (0..4).map(|i| (250 + i) * 3).sum();
    inputs.push(server(want, want as i64));
    let m = merge(&inputs).unwrap();
    let c = m.record.phases[0].cross_check.as_ref().unwrap();
    assert_eq!(c.server_accepted, Some(want));
    assert_eq!(c.kernel_passive_opens, Some(want as i64));
    assert!(c.agree, "{}", c.note);
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);

    let mut inputs = four();
    inputs.push(server(want - 1, want as i64));
    let m = merge(&inputs).unwrap();
    assert!(!m.record.phases[0].cross_check.as_ref().unwrap().agree);
    assert!(
        m.warnings.iter().any(|w| w.contains("do not agree")),
        "{:?}",
        m.warnings
    );
}

/// Sets `key` (a top-level key or `pattern.*`) of load `i`'s whole-run configuration.
fn set_whole(inputs: &mut [MergeInput], i: usize, key: &str, v: serde_json::Value) {
    let w = inputs[i].record.segment.as_mut().unwrap();
    let w = w.whole_config.as_mut().unwrap();
    match key.strip_prefix("pattern.") {
        Some(k) => w["pattern"][k] = v,
        None => w[key] = v,
    }
}

#[test]
fn segments_of_different_runs_are_refused_naming_both_files_and_the_setting() {
    type Edit = (&'static str, serde_json::Value, &'static str);
    let edits: Vec<Edit> = vec![
        (
            "pattern.rate_per_sec",
            serde_json::json!(2012.0),
            "the whole run's --rate is 1,006/s in the first and 2,012/s in the second",
        ),
        (
            "duration",
            serde_json::json!({"secs": 5, "nanos": 0}),
            "--duration is 3s in the first and 5s in the second",
        ),
        (
            "warmup",
            serde_json::json!({"secs": 2, "nanos": 0}),
            "--warmup is 0s in the first and 2s in the second",
        ),
        (
            "close",
            serde_json::json!("fin"),
            "--close is rst in the first and fin in the second",
        ),
        (
            "pattern.kind",
            serde_json::json!("closed"),
            "the load pattern (--rate: open loop, --concurrency: closed loop) is open in the first and closed in the second",
        ),
        (
            "http",
            serde_json::json!({"method": "GET", "path": "/", "headers": [], "body": []}),
            "--http is none in the first and {\"body\":[],\"headers\":[],\"method\":\"GET\",\"path\":\"/\"} in the second",
        ),
        (
            "connect_timeout",
            serde_json::json!({"secs": 1, "nanos": 0}),
            "--connect-timeout is 3s in the first and 1s in the second",
        ),
        (
            "late_threshold",
            serde_json::json!({"secs": 0, "nanos": 5_000_000}),
            "--late-threshold is 1ms in the first and 5ms in the second",
        ),
    ];
    for (key, v, want) in edits {
        let mut inputs = four();
        set_whole(&mut inputs, 2, key, v);
        let e = merge(&inputs).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, MergeError::Setting { .. }), "{key}: {msg}");
        assert_eq!(
            msg,
            format!("/runs/seg0.json and /runs/seg2.json are not segments of one run: {want}; merge only the records of one run (every generator given the same settings and --start-at)")
        );
    }
    // Settings each host picks for itself may differ: targets, CPUs, sources, in-flight bound.
    let mut inputs = four();
    set_whole(
        &mut inputs,
        1,
        "targets",
        serde_json::json!(["10.0.1.1:9000"]),
    );
    set_whole(&mut inputs, 1, "cpus", serde_json::json!([0, 1]));
    set_whole(&mut inputs, 1, "max_in_flight", serde_json::json!(7));
    assert!(merge(&inputs).is_ok());

    // With --tls: the name each host checks (its target's host by default) and where its CA
    // file lies are its own; whether the certificate is checked, the version, ALPN and the
    // resumption are the run's (TLS segments against 127.0.0.1 and 127.0.0.2 were refused).
    let tls = |name: &str, verify: serde_json::Value, resume: &str| {
        serde_json::json!({"version": "1.3", "server_name": name, "alpn": [], "resume": resume,
            "verify": verify, "ciphers": []})
    };
    let mut inputs = four();
    for (i, inp) in ["10.0.0.1", "10.0.1.1", "10.0.2.1", "10.0.3.1"]
        .iter()
        .enumerate()
    {
        let ca = serde_json::json!({"ca": format!("/home/gen{i}/ca.pem")});
        set_whole(&mut inputs, i, "tls", tls(inp, ca, "tickets"));
    }
    assert!(merge(&inputs).is_ok(), "{:?}", merge(&inputs).err());
    for (other, what) in [
        (
            tls("10.0.2.1", serde_json::json!("insecure"), "tickets"),
            "setting `tls.verify` is ca in the first and insecure in the second",
        ),
        (
            tls("10.0.2.1", serde_json::json!({"ca": "/x"}), "off"),
            "setting `tls.resume` is tickets in the first and off in the second",
        ),
    ] {
        let mut bad = inputs.clone();
        set_whole(&mut bad, 2, "tls", other);
        let msg = merge(&bad).unwrap_err().to_string();
        assert!(msg.contains(what), "{what}: {msg}");
    }

    // Another planned start instant.
    let mut inputs = four();
    inputs[3]
        .record
        .segment
        .as_mut()
        .unwrap()
        .planned_start_unix_ms = Some(T0_MS + 60_000);
    let msg = merge(&inputs).unwrap_err().to_string();
    assert!(
        msg.contains("/runs/seg0.json and /runs/seg3.json are not segments of one run: the planned start (--start-at) is 2026-11-29T22:15:03.000Z in the first and 2026-11-29T22:16:03.000Z in the second"),
        "{msg}"
    );
}

#[test]
fn records_without_the_whole_plan_compare_their_shares_settings_and_warn() {
    let mut inputs = four();
    for i in &mut inputs {
        i.record.segment.as_mut().unwrap().whole_config = None;
        i.record.config = whole_config(3);
    }
    // The shares' rates differ (250..253/s): not compared; the warning says so.
    let m = merge(&inputs).unwrap();
    assert!(
        m.warnings
            .iter()
            .any(|w| w.contains("/runs/seg0.json, /runs/seg1.json, /runs/seg2.json, /runs/seg3.json keep only their segment's share")),
        "{:?}",
        m.warnings
    );
    inputs[1].record.config["close"] = serde_json::json!("fin");
    let msg = merge(&inputs).unwrap_err().to_string();
    assert!(msg.contains("--close is rst in the first and fin"), "{msg}");
}

#[test]
fn load_records_or_a_server_record_from_another_time_window_are_refused() {
    // A generator measured an hour later (its record from another run of the same plan).
    let mut inputs = four();
    inputs[1] = load(1, 4, 251, 3, 3_600_000);
    inputs[1]
        .record
        .segment
        .as_mut()
        .unwrap()
        .planned_start_unix_ms = Some(T0_MS);
    let e = merge(&inputs).unwrap_err();
    assert!(matches!(e, MergeError::Apart { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with("/runs/seg0.json measured 2026-11-29T22:15:03.000Z – 2026-11-29T22:15:06.000Z but /runs/seg1.json measured 2026-11-29T23:15:03.000Z"),
        "{msg}"
    );

    let mut inputs = four();
    let mut srv = server(3018, 3018);
    srv.record.run.started_unix_ms = Some(T0_MS - 86_400_000);
    srv.record.run.wall_secs = 10.0;
    inputs.push(srv);
    let msg = merge(&inputs).unwrap_err().to_string();
    assert_eq!(
        msg,
        "/runs/server.json measured 2026-11-28T22:15:03.000Z – 2026-11-28T22:15:13.000Z but /runs/seg0.json measured 2026-11-29T22:15:03.000Z – 2026-11-29T22:15:06.000Z: the server record and the load records do not overlap in time, so they are not one run; merge the records of one run"
    );
    // The server of this run (listening from before the generators to after them) merges.
    let mut inputs = four();
    let mut srv = server(3018, 3018);
    srv.record.run.started_unix_ms = Some(T0_MS - 1_000);
    srv.record.run.wall_secs = 5.0;
    inputs.push(srv);
    assert!(merge(&inputs).is_ok());
}

#[test]
fn a_segment_index_out_of_range_is_named_not_reported_missing() {
    let mut inputs = four();
    inputs[3].record.segment.as_mut().unwrap().index = 5;
    let e = merge(&inputs).unwrap_err();
    assert_eq!(
        e.to_string(),
        "/runs/seg3.json: segment 5 of 4 is out of range (0..3); `load --segment i/N` takes i in 0..N-1: fix or drop the record"
    );
}

#[test]
fn a_start_later_than_planned_is_warned_naming_the_file() {
    let mut inputs = vec![load(0, 2, 100, 3, 0), load(1, 2, 100, 3, 0)];
    inputs[1]
        .record
        .segment
        .as_mut()
        .unwrap()
        .real_start_unix_ms = T0_MS + 250;
    let m = merge(&inputs).unwrap();
    assert!(
        m.warnings.iter().any(|w| w.starts_with(
            "/runs/seg1.json: started 250 ms after its planned --start-at 2026-11-29T22:15:03.000Z"
        )),
        "{:?}",
        m.warnings
    );
}

/// Two generators of one namespace: each record holds the namespace's whole Tcp.ActiveOpens
/// (both generators' connections), and each generator's own check disagrees.
fn two_in_one_namespace() -> Vec<MergeInput> {
    let mut inputs = vec![load(0, 2, 100, 3, 0), load(1, 2, 120, 3, 0)];
    let ns = inputs[0].record.counters_netns.clone();
    let whole = 300 + 360;
    for i in &mut inputs {
        i.record.counters_netns = ns.clone();
        let p = &mut i.record.phases[0];
        p.counters.insert("Tcp.ActiveOpens".into(), whole);
        p.counters.insert("TcpExt.ListenOverflows".into(), 4);
        let c = p.cross_check.as_mut().unwrap();
        c.kernel_active_opens = Some(whole);
        c.agree = false;
    }
    inputs
}

#[test]
fn generators_sharing_a_namespace_count_its_counters_once() {
    let m = merge(&two_in_one_namespace()).unwrap();
    let p = &m.record.phases[0];
    assert_eq!(p.counters["Tcp.ActiveOpens"], 660);
    assert_eq!(p.counters["TcpExt.ListenOverflows"], 4);
    let c = p.cross_check.as_ref().unwrap();
    assert_eq!(c.kernel_active_opens, Some(660));
    assert_eq!(c.load_successes, 660);
    assert_eq!(c.load_attempts, Some(660));
    assert!(c.agree, "{}", c.note);
    assert!(
        c.note.contains(
            "namespace 1 (2 generators): 660 handshakes, 660 attempts, Tcp.ActiveOpens 660: agree"
        ),
        "{}",
        c.note
    );
    assert!(m.record.counters_netns.is_none());

    // A namespace whose kernel saw fewer SYNs than its generators' handshakes disagrees.
    let mut inputs = two_in_one_namespace();
    for i in &mut inputs {
        i.record.phases[0]
            .cross_check
            .as_mut()
            .unwrap()
            .kernel_active_opens = Some(600);
    }
    let m = merge(&inputs).unwrap();
    let c = m.record.phases[0].cross_check.as_ref().unwrap();
    assert!(!c.agree, "{}", c.note);
    assert_eq!(c.kernel_active_opens, Some(600));
}

#[test]
fn generators_in_separate_namespaces_sum_their_counters() {
    let mut inputs = two_in_one_namespace();
    inputs[1].record.counters_netns.as_mut().unwrap().inode += 1;
    for (i, own) in inputs.iter_mut().zip([300, 360]) {
        let p = &mut i.record.phases[0];
        p.counters.insert("Tcp.ActiveOpens".into(), own);
        let c = p.cross_check.as_mut().unwrap();
        c.kernel_active_opens = Some(own);
        c.agree = true;
    }
    let m = merge(&inputs).unwrap();
    let p = &m.record.phases[0];
    assert_eq!(p.counters["Tcp.ActiveOpens"], 660);
    assert_eq!(p.counters["TcpExt.ListenOverflows"], 8);
    let c = p.cross_check.as_ref().unwrap();
    assert_eq!(c.kernel_active_opens, Some(660));
    assert!(c.agree, "{}", c.note);
    assert!(
        c.note.contains("namespace 2 (1 generator): 360 handshakes"),
        "{}",
        c.note
    );

    // The same inode on another host (boot id) is another namespace.
    let mut inputs = two_in_one_namespace();
    inputs[1].record.counters_netns.as_mut().unwrap().boot_id = Some("other".into());
    let m = merge(&inputs).unwrap();
    assert_eq!(m.record.phases[0].counters["Tcp.ActiveOpens"], 1_320);
}

#[test]
fn records_without_a_namespace_leave_the_merged_counters_unknown() {
    let mut inputs = two_in_one_namespace();
    inputs[1].record.counters_netns = None;
    let m = merge(&inputs).unwrap();
    let p = &m.record.phases[0];
    assert!(p.counters.is_empty(), "{:?}", p.counters);
    let c = p.cross_check.as_ref().unwrap();
    assert_eq!(c.kernel_active_opens, None);
    assert!(!c.agree);
    assert!(
        m.warnings
            .iter()
            .any(|w| w.starts_with("/runs/seg1.json record no network namespace")),
        "{:?}",
        m.warnings
    );
}

/// `load --tls` records: the TLS counts (full, resumed, failures by alert) and the TLS
/// handshake histogram sum exactly; a part without TLS is refused (its histogram is missing).
#[test]
fn tls_counts_and_the_tls_handshake_histogram_sum_exactly() {
    let mut inputs = four();
    for (i, inp) in inputs.iter_mut().enumerate() {
        let i = i as u64;
        let p = &mut inp.record.phases[0];
        let mut h = new_latency_histogram();
        h.record_n(1_000_000 + 100_000 * i, 10 + i).unwrap();
        p.histograms.tls_handshake = Some(encode_histogram(&h));
        p.tls = Some(crate::record::TlsCounts {
            handshakes: 10 + i,
            full: 1,
            resumed: 9 + i,
            tls13: 10 + i,
            tls12: 0,
            alpn_agreed: 10 + i,
            cipher_suites: BTreeMap::from([("TLS13_AES_128_GCM_SHA256".to_string(), 10 + i)]),
            groups: BTreeMap::from([("X25519".to_string(), 10 + i)]),
            failures: BTreeMap::from([("TLS alert UnknownCA sent".to_string(), i)]),
        });
    }
    let m = merge(&inputs).unwrap();
    let p = &m.record.phases[0];
    let t = p.tls.as_ref().unwrap();
    assert_eq!(t.handshakes, 46);
    assert_eq!(t.full, 4);
    assert_eq!(t.resumed, 42);
    assert_eq!(t.tls13, 46);
    assert_eq!(t.cipher_suites["TLS13_AES_128_GCM_SHA256"], 46);
    assert_eq!(t.groups["X25519"], 46);
    // A segment from before the suites were counted makes the merged table unknown (empty),
    // not a partial count.
    let mut older = inputs.clone();
    older[2].record.phases[0]
        .tls
        .as_mut()
        .unwrap()
        .cipher_suites
        .clear();
    // Nor the groups (issue 36): a segment with full handshakes and no group table is older.
    older[1].record.phases[0]
        .tls
        .as_mut()
        .unwrap()
        .groups
        .clear();
    let m2 = merge(&older).unwrap();
    let t2 = m2.record.phases[0].tls.as_ref().unwrap();
    assert_eq!(t2.handshakes, 46);
    assert!(t2.cipher_suites.is_empty(), "{:?}", t2.cipher_suites);
    assert!(t2.groups.is_empty(), "{:?}", t2.groups);
    assert_eq!(t.failures["TLS alert UnknownCA sent"], 6);
    let h = p.histograms.decode(Latency::TlsHandshake).unwrap().unwrap();
    assert_eq!(h.len(), 46);
    for i in 0..4u64 {
        assert_eq!(h.count_at(1_000_000 + 100_000 * i), 10 + i, "generator {i}");
    }
    inputs[2].record.phases[0].histograms.tls_handshake = None;
    inputs[2].record.phases[0].tls = None;
    let e = merge(&inputs).unwrap_err().to_string();
    assert!(e.contains("tls_handshake"), "{e}");
}

/// Issue 37 (edges): TLS counts that contradict each other or the phase are refused naming the
/// file, the phase and the fields, each rule on its own; consistent counts merge.
#[test]
fn tls_counts_that_contradict_each_other_are_refused_naming_file_and_fields() {
    let consistent = || crate::record::TlsCounts {
        handshakes: 400,
        full: 15,
        resumed: 385,
        tls13: 400,
        tls12: 0,
        alpn_agreed: 400,
        cipher_suites: BTreeMap::from([("TLS13_AES_128_GCM_SHA256".to_string(), 400)]),
        groups: BTreeMap::from([("X25519".to_string(), 400)]),
        failures: BTreeMap::new(),
    };
    let with = |edit: &dyn Fn(&mut PhaseRecord)| {
        let mut inputs = four();
        for inp in &mut inputs {
            let p = &mut inp.record.phases[0];
            let mut h = new_latency_histogram();
            h.record_n(1_000_000, 400).unwrap();
            p.histograms.tls_handshake = Some(encode_histogram(&h));
            p.tls = Some(consistent());
        }
        edit(&mut inputs[2].record.phases[0]);
        let path = inputs[2].path.display().to_string();
        (merge(&inputs).map(|_| ()), path)
    };
    assert!(with(&|_| {}).0.is_ok());
    type Edit = fn(&mut PhaseRecord);
    let cases: [(Edit, &str); 8] = [
        (
            |p| p.tls.as_mut().unwrap().full = 1_000_000_000,
            "tls.full 1000000000 + tls.resumed 385 ≠ tls.handshakes 400",
        ),
        (
            |p| p.tls.as_mut().unwrap().resumed = u64::MAX,
            "tls.full 15 + tls.resumed 18446744073709551615 ≠ tls.handshakes 400",
        ),
        (
            |p| p.tls.as_mut().unwrap().tls12 = 1,
            "tls.tls13 400 + tls.tls12 1 ≠ tls.handshakes 400",
        ),
        (
            |p| p.tls.as_mut().unwrap().alpn_agreed = 401,
            "tls.alpn_agreed 401 > tls.handshakes 400",
        ),
        (
            |p| {
                p.tls
                    .as_mut()
                    .unwrap()
                    .cipher_suites
                    .insert("TLS13_AES_256_GCM_SHA384".into(), 1);
            },
            "the tls.cipher_suites counts add up to 401 > tls.handshakes 400",
        ),
        (
            |p| {
                p.tls.as_mut().unwrap().groups.insert("secp256r1".into(), 1);
            },
            "the tls.groups counts add up to 401 > tls.handshakes 400",
        ),
        (
            |p| p.attempts = 399,
            "tls.handshakes 400 > attempts 399 (one handshake per attempt at most)",
        ),
        (
            |p| p.successes = 399,
            "tls.handshakes 400 > successes 399 (without --http each TLS handshake is a success)",
        ),
    ];
    for (edit, want) in cases {
        let (r, path) = with(&edit);
        let e = r.unwrap_err();
        assert!(matches!(e, MergeError::TlsCounts { .. }), "{e:?}");
        let e = e.to_string();
        assert!(
            e.starts_with(&format!(
                "{path}: phase \"load\": the TLS counts contradict each other: {want}"
            )),
            "{e}"
        );
    }
    // With --http a handshake may be followed by a failed exchange: more handshakes than
    // successes is no contradiction.
    let (r, _) = with(&|p: &mut PhaseRecord| {
        p.successes = 399;
        p.http = Some(crate::record::HttpCounts::default());
    });
    assert!(!matches!(r, Err(MergeError::TlsCounts { .. })), "{r:?}");
    // A server's resumed TLS accepts are some of its accepts.
    let mut inputs = four();
    let mut srv = server(100, 100);
    if let Some(s) = srv.record.phases[0].server.as_mut() {
        s.tls_accepted = Some(10);
        s.tls_resumed = Some(11);
    }
    let path = srv.path.display().to_string();
    inputs.push(srv);
    let e = merge(&inputs).unwrap_err().to_string();
    assert!(
        e.contains(&format!("{path}: phase "))
            && e.contains("server.tls_resumed 11 > server.tls_accepted 10"),
        "{e}"
    );
}

/// Two unrelated load records without `--segment` were refused as "segments overlap … both
/// segment 0/1; give each generator its own --segment": they are not segments at all.
#[test]
fn records_that_are_not_segments_are_refused_as_such_not_as_overlapping() {
    let whole = |i: u32| {
        let mut l = load(i, 1, 250, 3, 0);
        l.record.segment = None;
        l
    };
    for inputs in [
        vec![whole(0), whole(1)],
        vec![whole(0), load(1, 2, 250, 3, 0)],
    ] {
        let err = merge(&inputs).unwrap_err();
        assert!(matches!(err, MergeError::NotSegmented { .. }), "{err}");
        let msg = err.to_string();
        assert!(!msg.contains("overlap"), "{msg}");
        assert!(
            msg.starts_with("/runs/seg0.json and /runs/seg1.json are not segments of one run: "),
            "{msg}"
        );
        assert!(
            msg.contains("run every generator with `--segment K/N`")
                && msg.contains("the same `--start-at`"),
            "{msg}"
        );
    }
    let msg = merge(&[whole(0), whole(1)]).unwrap_err().to_string();
    assert!(msg.contains("neither was run with --segment"), "{msg}");
    let msg = merge(&[load(1, 2, 250, 3, 0), whole(0)])
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with("/runs/seg0.json and /runs/seg1.json are not segments of one run: the first was run without --segment"),
        "{msg}"
    );
    // One whole-run load record and its server still merge.
    let mut one = vec![whole(0)];
    one.push(server(750, 750));
    assert!(merge(&one).is_ok());
}

/// One record given twice (the same path, or a copy) is named as such: it was reported as two
/// generators of the same segment ("both segment 0/2; give each generator its own --segment").
#[test]
fn a_record_given_twice_is_named_the_same_record() {
    for copy_path in ["/runs/seg0.json", "/runs/copy-of-seg0.json"] {
        let mut inputs = four();
        let mut copy = inputs[0].clone();
        copy.path = PathBuf::from(copy_path);
        inputs.push(copy);
        let e = merge(&inputs).unwrap_err();
        assert!(matches!(e, MergeError::SameRecord { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            format!("/runs/seg0.json and {copy_path} are the same record: its connections would be counted twice; give each record once")
        );
    }
}

/// Issue 35 item 3: `merge` keeps every histogram its inputs carry (the generator-lag histogram
/// of every segment was dropped silently, and the merged report had no lag line). Each segment
/// carries every kind of [`Latency::ALL`], each kind at its own value per segment; the merged
/// record holds every kind, bucket by bucket the sum of the segments'.
#[test]
fn every_histogram_kind_is_kept_and_summed_bucket_by_bucket() {
    let mut inputs = four();
    // Kind k of segment i: (20 + i) samples at 1 ms × (k + 1) + 10 µs × i.
    let value = |k: usize, i: u64| 1_000_000 * (k as u64 + 1) + 10_000 * i;
    for (i, inp) in inputs.iter_mut().enumerate() {
        let i = i as u64;
        let p = &mut inp.record.phases[0];
        for (k, which) in Latency::ALL.into_iter().enumerate() {
            if matches!(which, Latency::Handshake) {
                continue; // keeps the fixture's count of successes
            }
            let mut h = new_latency_histogram();
            h.record_n(value(k, i), 20 + i).unwrap();
            p.histograms.set(which, Some(encode_histogram(&h)));
        }
    }
    let m = merge(&inputs).unwrap();
    let p = &m.record.phases[0];
    for (k, which) in Latency::ALL.into_iter().enumerate() {
        let h = p
            .histograms
            .decode(which)
            .unwrap()
            .unwrap_or_else(|| panic!("merge dropped the {} histogram", which.name()));
        if matches!(which, Latency::Handshake) {
            assert_eq!(h.len(), (0..4).map(|i| (250 + i) * 3).sum::<u64>());
            continue;
        }
        assert_eq!(h.len(), 20 + 21 + 22 + 23, "{}", which.name());
        for i in 0..4u64 {
            assert_eq!(
                h.count_at(value(k, i)),
                20 + i,
                "{} bucket of segment {i}",
                which.name()
            );
        }
    }
    // The generator lag in particular, and its line in the merged report.
    let lag = p.histograms.decode(Latency::GeneratorLag).unwrap().unwrap();
    assert_eq!(lag.len(), 86);
    let back = RunRecord::from_json(&m.record.to_json(), std::path::Path::new("/m.json")).unwrap();
    assert_eq!(
        back.phases[0]
            .histograms
            .decode(Latency::GeneratorLag)
            .unwrap()
            .unwrap()
            .len(),
        86
    );
}

/// The load side's CPU is summed with its spin before due starts: the merged record keeps the
/// spin (the segments' sum) apart from the work, as each segment did; segments without any
/// keep none.
#[test]
fn the_spin_before_due_starts_is_summed_with_the_cpu() {
    let mut inputs = four();
    for (i, input) in inputs.iter_mut().enumerate() {
        let p = &mut input.record.phases[0];
        let n = p.cross_check.as_ref().unwrap().load_successes;
        p.cpu.load = SideCpu::new(0, 10_000_000, 3_000_000_000, 1, n)
            .with_run_ns(10_000_000, n)
            .with_spin_ns(1_000_000 * (i as u64 + 1), n);
    }
    let m = merge(&inputs).unwrap();
    let cpu = &m.record.phases[0].cpu.load;
    assert_eq!(cpu.run_ns, Some(40_000_000));
    assert_eq!(cpu.spin_ns, Some(10_000_000));
    let n = m.record.phases[0]
        .cross_check
        .as_ref()
        .unwrap()
        .load_successes as f64;
    assert!((cpu.us_per_conn().unwrap() - 30_000.0 / n).abs() < 1e-9);
    let m = merge(&four()).unwrap();
    assert_eq!(m.record.phases[0].cpu.load.spin_ns, None);
}
