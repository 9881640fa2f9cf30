//! Our histograms and interval logs decoded by an independent HdrHistogram implementation
//! (Python `hdrh` 0.10.8), and theirs decoded by us: same counts, same percentiles.
//!
//! Golden fixture, no Python at test time: `scripts/hdrh-golden.py` (pinned
//! `hdrhistogram==0.10.8`) decoded the inputs under `tests/data/hdrh/` and wrote
//! `python-hdrh.json`. [`golden_inputs_are_what_we_write_now`] checks the inputs are still what
//! this build writes; to regenerate after a deliberate change:
//! `CONNSTORM_BLESS=1 cargo test --release -p connstorm-results --test integration hdrh_golden`
//! then `python3 scripts/hdrh-golden.py` and commit both.

use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use results::record::{
    decode_histogram, encode_histogram, new_latency_histogram, Latency, RunRecord,
};
use serde_json::Value;

use crate::util::data;

/// Percentiles (in %) compared between the implementations.
const PERCENTILES: [f64; 7] = [1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99];

/// A wide, skewed distribution: 40 µs base, exponential tail, a few ms-scale outliers.
fn skewed(n: usize, seed: u64) -> Histogram<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut h = new_latency_histogram();
    for i in 0..n {
        let u: f64 = rng.gen_range(f64::EPSILON..1.0);
        let mut v = 40_000.0 - u.ln() * 25_000.0;
        if i % 997 == 0 {
            v *= 100.0;
        }
        h.record(v as u64).unwrap();
    }
    h
}

fn recorded(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_since_last_iteration()))
        .collect()
}

fn py_recorded(v: &Value) -> Vec<(u64, u64)> {
    v["recorded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        .collect()
}

/// The value at a 1-based rank: the highest value equivalent to the `rank`-th smallest sample.
fn value_at_rank(h: &Histogram<u64>, rank: u64) -> u64 {
    let mut seen = 0;
    for v in h.iter_recorded() {
        seen += v.count_since_last_iteration();
        if seen >= rank {
            return h.highest_equivalent(v.value_iterated_to());
        }
    }
    panic!("rank {rank} beyond {} samples", h.len());
}

/// The same figures from both implementations.
///
/// The bucket contents must be identical. Percentiles differ only in the rank rule: Rust (like
/// Java's reference implementation) takes rank `ceil(p × total)`, Python `round(p × total)`; in
/// a sparse tail the two ranks can land in different buckets. So Python's percentile must be
/// the value at Python's rank in *our* decoded histogram, and ours the value at our rank.
fn assert_same(h: &Histogram<u64>, py: &Value) {
    assert_eq!(py["total"].as_u64().unwrap(), h.len());
    assert_eq!(py["max"].as_u64().unwrap(), h.max());
    assert_eq!(py["min"].as_u64().unwrap(), h.min());
    assert_eq!(py_recorded(py), recorded(h), "bucket contents differ");
    let mean = py["mean"].as_f64().unwrap();
    assert!(
        (mean - h.mean()).abs() <= h.mean() * 1e-9,
        "mean {mean} vs {}",
        h.mean()
    );
    let sd = py["stddev"].as_f64().unwrap();
    assert!(
        (sd - h.stdev()).abs() <= h.stdev() * 1e-6,
        "stddev {sd} vs {}",
        h.stdev()
    );
    let total = h.len() as f64;
    for (i, p) in PERCENTILES.iter().enumerate() {
        let py_rank = ((p / 100.0 * total + 0.5) as u64).max(1);
        let ours_rank = ((p / 100.0 * total).ceil() as u64).max(1);
        let py_value = py["pcts"][i].as_u64().unwrap();
        assert_eq!(
            py_value,
            value_at_rank(h, py_rank),
            "p{p}: python's value at its rank"
        );
        assert_eq!(
            h.value_at_quantile(p / 100.0),
            value_at_rank(h, ours_rank),
            "p{p}: ours"
        );
        if py_rank == ours_rank {
            assert_eq!(py_value, h.value_at_quantile(p / 100.0), "p{p}");
        }
    }
}

fn golden() -> Value {
    let path = data("hdrh/python-hdrh.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run scripts/hdrh-golden.py", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn read_data(name: &str) -> String {
    std::fs::read_to_string(data(&format!("hdrh/{name}"))).unwrap()
}

/// A record with three phases whose measured parts begin 0.3 s, 3.9 s and 7.4 s after the run
/// started (warm-ups and set-up between them), each with per-second histograms.
fn three_phase() -> RunRecord {
    let mut rec = RunRecord::example();
    let mut third = rec.phases[1].clone();
    third.name = "step-3".into();
    third.start_offset_ms = Some(7_400.0);
    third.start_unix_ms = Some(results::record::EXAMPLE_START_UNIX_MS + 7_400);
    rec.phases.push(third);
    rec
}

/// The inputs Python decoded: our encodings and interval logs, as this build writes them.
fn inputs() -> Vec<(String, Vec<u8>)> {
    let rec = three_phase();
    let mut v = vec![
        (
            "skewed.b64".to_string(),
            encode_histogram(&skewed(50_000, 7)).into_bytes(),
        ),
        (
            "record-handshake.b64".to_string(),
            rec.phases[1]
                .histograms
                .encoded(Latency::Handshake)
                .unwrap()
                .as_bytes()
                .to_vec(),
        ),
    ];
    for (i, p) in rec.phases.iter().enumerate() {
        let mut buf = Vec::new();
        results::render::write_hlog(&mut buf, &rec, i).unwrap();
        v.push((format!("three-phase.{}.hlog", p.name), buf));
    }
    v
}

/// The intervals of an interval log as our reader sees them (tag, start, length, histogram).
fn our_intervals(
    buf: &[u8],
) -> Vec<(
    Option<String>,
    std::time::Duration,
    std::time::Duration,
    Histogram<u64>,
)> {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    IntervalLogIterator::new(buf)
        .filter_map(|e| match e.unwrap() {
            LogEntry::Interval(i) => Some((
                i.tag().map(|t| t.as_str().to_string()),
                i.start_timestamp(),
                i.duration(),
                decode_histogram(i.encoded_histogram()).unwrap(),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn hdrh_golden_inputs_are_what_we_write_now() {
    let bless = std::env::var_os("CONNSTORM_BLESS").is_some();
    for (name, bytes) in inputs() {
        let path = data(&format!("hdrh/{name}"));
        if bless {
            std::fs::write(&path, &bytes).unwrap();
            continue;
        }
        let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if name.ends_with(".b64") {
            let ours = decode_histogram(std::str::from_utf8(&bytes).unwrap()).unwrap();
            let theirs = decode_histogram(std::str::from_utf8(&committed).unwrap().trim()).unwrap();
            assert_eq!(recorded(&ours), recorded(&theirs), "{name}");
        } else {
            // Same header times and the same intervals (DEFLATE bytes may differ by version).
            let head = |b: &[u8]| {
                String::from_utf8_lossy(b)
                    .lines()
                    .filter(|l| l.starts_with("#[StartTime") || l.starts_with("#[BaseTime"))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            };
            assert_eq!(head(&bytes), head(&committed), "{name}");
            let (a, b) = (our_intervals(&bytes), our_intervals(&committed));
            assert_eq!(a.len(), b.len(), "{name}");
            for (x, y) in a.iter().zip(&b) {
                assert_eq!((&x.0, x.1, x.2), (&y.0, y.1, y.2), "{name}");
                assert_eq!(recorded(&x.3), recorded(&y.3), "{name}");
            }
        }
    }
    assert!(
        !bless,
        "inputs written: now run `python3 scripts/hdrh-golden.py` and commit both"
    );
}

#[test]
fn hdrh_golden_python_decodes_our_histograms_to_the_same_percentiles() {
    let g = golden();
    assert!(g["generator"]
        .as_str()
        .unwrap()
        .contains("hdrhistogram==0.10.8"));
    let h = decode_histogram(read_data("skewed.b64").trim()).unwrap();
    assert_eq!(recorded(&h), recorded(&skewed(50_000, 7)));
    assert_same(&h, &g["skewed"]);
    // And a histogram stored in a record, as `connstorm report` reads it.
    let h = decode_histogram(read_data("record-handshake.b64").trim()).unwrap();
    assert_same(&h, &g["record_handshake"]);
}

#[test]
fn hdrh_golden_we_decode_histograms_python_encoded() {
    let py = &golden()["python_encoded"];
    let h = decode_histogram(py["b64"].as_str().unwrap()).unwrap();
    assert_eq!(h.len(), 20_000);
    let mut want = results::record::new_latency_histogram();
    for i in 1..=20_000u64 {
        want.record(1000 + (i * 7919) % 5_000_000).unwrap();
    }
    assert_eq!(recorded(&h), recorded(&want));
    assert_same(&h, py);
}

#[test]
fn hdrh_golden_python_reads_our_three_phase_interval_log() {
    let rec = three_phase();
    let g = golden();
    let start_sec = results::record::EXAMPLE_START_UNIX_MS as f64 / 1e3;
    for phase in &rec.phases {
        let name = format!("three-phase.{}.hlog", phase.name);
        let ivs = g["hlogs"][&name]
            .as_array()
            .unwrap_or_else(|| panic!("{name} missing from the golden file"));
        let handshake: Vec<&Value> = ivs.iter().filter(|i| i["tag"].is_null()).collect();
        assert_eq!(
            handshake.len(),
            phase.timeline.len(),
            "{name}: one interval per second"
        );
        assert_eq!(phase.timeline.len(), 3);
        let phase_start_ms = phase.start_offset_ms.unwrap();
        for (k, (iv, row)) in handshake.iter().zip(&phase.timeline).enumerate() {
            // StartTime with millisecond resolution, not whole seconds.
            assert!(
                (iv["start_time_sec"].as_f64().unwrap() - start_sec).abs() < 1e-6,
                "{iv}"
            );
            let start = iv["start_ms"].as_f64().unwrap();
            let want = phase_start_ms + 1000.0 * k as f64;
            assert!(
                (start - want).abs() < 10.0,
                "{name} second {k}: starts at {start} ms, want {want}"
            );
            assert!(
                (iv["length_ms"].as_f64().unwrap() - 1000.0).abs() < 1.0,
                "{iv}"
            );
            let h = decode_histogram(row.handshake.as_deref().unwrap()).unwrap();
            assert_eq!(h.len(), row.successes);
            assert_same(&h, &iv["d"]);
        }
        let service: Vec<&Value> = ivs.iter().filter(|i| i["tag"] == "service").collect();
        assert_eq!(service.len(), 1, "{name}");
        assert!((service[0]["start_ms"].as_f64().unwrap() - phase_start_ms).abs() < 10.0);
        assert_same(
            &phase.histograms.decode(Latency::Service).unwrap().unwrap(),
            &service[0]["d"],
        );
    }
    // The third phase starts where the record says (7.4 s), not at the sum of measured seconds (6 s).
    let third = &g["hlogs"]["three-phase.step-3.hlog"][0];
    assert!(
        (third["start_ms"].as_f64().unwrap() - 7_400.0).abs() < 10.0,
        "{third}"
    );
}
