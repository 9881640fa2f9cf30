//! Our histograms and interval logs decoded by an independent HdrHistogram implementation
//! (Python `hdrh`), and theirs decoded by us: same counts, same percentiles.

use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use results::histogram::{decode, encode, new_latency_histogram};
use results::record::{Latency, RunRecord};
use serde_json::Value;

use crate::util::python_hdrh;

/// Percentiles (in %) compared between the implementations.
const PERCENTILES: [f64; 7] = [1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99];

/// Python: prints total/min/max/mean/stddev, recorded (value, count) pairs and percentiles of
/// the base64 histogram read from stdin.
const DESCRIBE: &str = r#"
def describe(h, pcts):
    rec = [[int(i.value_iterated_to), int(i.count_added_in_this_iter_step)] for i in h.get_recorded_iterator()]
    return {"total": h.get_total_count(), "min": h.get_min_value(), "max": h.get_max_value(),
            "mean": h.get_mean_value(), "stddev": h.get_stddev(), "recorded": rec,
            "pcts": [h.get_value_at_percentile(p) for p in pcts]}
"#;

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

#[test]
fn python_hdrh_decodes_our_histograms_to_the_same_percentiles() {
    let h = skewed(50_000, 7);
    let script = format!(
        "{DESCRIBE}\nh = hdrh.histogram.HdrHistogram.decode(sys.stdin.read().strip())\nprint(json.dumps(describe(h, {PERCENTILES:?})))"
    );
    let py = python_hdrh(&script, &encode(&h));
    assert_same(&h, &py);

    // And a histogram stored in a record, as `connstorm report` reads it.
    let rec = RunRecord::example();
    let stored = rec.phases[1]
        .histograms
        .encoded(Latency::Handshake)
        .unwrap();
    let h = decode(stored).unwrap();
    assert_same(&h, &python_hdrh(&script, stored));
}

#[test]
fn we_decode_histograms_python_hdrh_encoded() {
    let script = format!(
        "{DESCRIBE}\nh = hdrh.histogram.HdrHistogram(1, 3600 * 10**9, 3)\n\
         for i in range(1, 20001):\n    h.record_value(1000 + (i * 7919) % 5_000_000)\n\
         d = describe(h, {PERCENTILES:?})\nd['b64'] = h.encode().decode()\nprint(json.dumps(d))"
    );
    let py = python_hdrh(&script, "");
    let h = decode(py["b64"].as_str().unwrap()).unwrap();
    assert_eq!(h.len(), 20_000);
    assert_same(&h, &py);
}

#[test]
fn python_hdrh_reads_our_interval_log() {
    let rec = RunRecord::example();
    let dir = tempfile::tempdir().unwrap();
    let paths = results::hlog::write_all(&rec, "run", dir.path()).unwrap();
    let script = format!(
        "{DESCRIBE}\nout = []\n\
         for path in sys.stdin.read().split():\n    r = hdrh.log.HistogramLogReader(path, hdrh.histogram.HdrHistogram(1, 3600 * 10**9, 3))\n    ivs = []\n\
         \x20   while True:\n        h = r.get_next_interval_histogram()\n        if h is None: break\n\
         \x20       ivs.append({{'tag': h.get_tag(), 'start_ms': h.get_start_time_stamp() - r.get_start_time_sec() * 1000, 'd': describe(h, {PERCENTILES:?})}})\n\
         \x20   out.append(ivs)\nprint(json.dumps(out))"
    );
    let stdin: Vec<_> = paths.iter().map(|p| p.to_str().unwrap()).collect();
    let py = python_hdrh(&script, &stdin.join("\n"));
    let mut offset_ms = 0.0;
    for (phase, ivs) in rec.phases.iter().zip(py.as_array().unwrap()) {
        let ivs = ivs.as_array().unwrap();
        assert_eq!(ivs.len(), 2, "phase {}: handshake and service", phase.name);
        for (iv, which) in ivs.iter().zip([Latency::Handshake, Latency::Service]) {
            let tag = iv["tag"].as_str();
            let want_tag = (which != Latency::Handshake).then_some(which.name());
            assert_eq!(tag, want_tag, "phase {}", phase.name);
            let start = iv["start_ms"].as_f64().unwrap();
            assert!(
                (start - offset_ms).abs() < 1.0,
                "phase {} starts at {start} ms",
                phase.name
            );
            let h = phase.histograms.decode(which).unwrap().unwrap();
            assert_same(&h, &iv["d"]);
        }
        offset_ms += phase.measured_secs * 1000.0;
    }
}
