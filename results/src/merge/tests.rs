use std::collections::BTreeMap;
use std::path::PathBuf;

use hdrhistogram::Histogram;

use super::*;
use crate::histogram::new_latency_histogram;
use crate::record::{Arrival, Pattern, SegmentInfo, WorkerAccepts};

const T0_MS: u64 = 1_795_990_503_000;

/// One generator's record: segment `index/count`, `rate` per second for `secs` seconds, every
/// handshake `lat_ns + index` ns, started `skew_ms` after T0.
fn load(index: u32, count: u32, rate: u64, secs: u64, skew_ms: u64) -> Input {
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
            handshake: Some(histogram::encode(&h)),
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
    });
    rec.phases.push(PhaseRecord {
        name: "load".into(),
        pattern: Pattern::Open {
            rate_per_sec: rate as f64,
            arrival: Arrival::Uniform,
        },
        offered_per_sec: Some(rate as f64),
        achieved_per_sec: successes as f64 / secs as f64,
        cpm: successes as f64 / secs as f64 * 60.0,
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
            agree: true,
            ..CrossCheck::default()
        }),
        ..PhaseRecord::default()
    });
    Input {
        path: PathBuf::from(format!("/runs/seg{index}.json")),
        schema_version: crate::SCHEMA_VERSION,
        record: rec,
    }
}

fn server(accepted: u64, passive: i64) -> Input {
    let mut rec = RunRecord::new("srv", serde_json::Value::Null);
    rec.role = Role::Server;
    let h = new_latency_histogram();
    rec.phases.push(PhaseRecord {
        name: "server".into(),
        histograms: Histograms::encode(&h, &h, None),
        server: Some(ServerSide {
            workers: vec![WorkerAccepts { cpu: 0, accepted }],
            accept_errors: BTreeMap::new(),
        }),
        counters: BTreeMap::from([("Tcp.PassiveOpens".into(), passive)]),
        ..PhaseRecord::default()
    });
    Input {
        path: PathBuf::from("/runs/server.json"),
        schema_version: crate::SCHEMA_VERSION,
        record: rec,
    }
}

fn four() -> Vec<Input> {
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
    assert!((p.achieved_per_sec - want as f64 / 3.0).abs() < 1e-9);
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
        let rh = histogram::decode(row.handshake.as_deref().unwrap()).unwrap();
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

    let inputs: Vec<Input> = four().into_iter().take(3).collect();
    let e = merge(&inputs).unwrap_err();
    assert!(
        matches!(&e, MergeError::Missing { missing, .. } if missing == &vec![3]),
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
    inputs[1].record.phases[0].histograms.handshake = histogram::encode(&other);
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
