use super::metrics::LATENCY;
use super::*;
use crate::record::Pattern;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

/// `n` trials around `center` with ±`noise` relative uniform noise.
pub(crate) fn trials(rng: &mut StdRng, n: usize, center: f64, noise: f64) -> Vec<f64> {
    (0..n)
        .map(|_| center * (1.0 + rng.gen_range(-noise..=noise)))
        .collect()
}

/// Records whose peak rate is each of `rates` (everything else as the example).
pub(crate) fn records(label: &str, rates: &[f64]) -> Vec<RunRecord> {
    rates
        .iter()
        .enumerate()
        .map(|(i, &r)| {
            let mut rec = RunRecord::example();
            rec.label = format!("{label}#{}", i + 1);
            rec.warnings.clear();
            for p in &mut rec.phases {
                p.counters.clear();
                p.dropped = 0;
                if let Some(c) = &mut p.cross_check {
                    c.agree = true;
                }
            }
            rec.phases[0].achieved_per_sec = Some(r);
            rec
        })
        .collect()
}

pub(crate) fn rate(c: &Comparison) -> &MetricComparison {
    c.metrics
        .iter()
        .find(|m| m.name == "connections/s")
        .unwrap()
}

/// Two sets of closed-loop `load` records (no open-loop phase anywhere): their latency is
/// compared from the closed-loop phase, and the note says so (it said "no samples" beside
/// tens of thousands). Beside a record with an open-loop phase it stays n/a.
#[test]
fn closed_loop_records_compare_their_latency_from_the_closed_loop_phase() {
    let closed = |label: &str| {
        let mut v = records(label, &[100.0; 5]);
        for r in &mut v {
            r.phases
                .retain(|p| matches!(p.pattern, Pattern::Closed { .. }));
            r.phases[0].name = "load".into();
        }
        v
    };
    let (a, b) = (closed("a"), closed("b"));
    assert!(latency_phase(&a[0]).is_none());
    let c = compare(&a, &b, (None, None), &CompareOptions::default());
    let p50 = c
        .metrics
        .iter()
        .find(|m| m.name == "handshake p50")
        .unwrap();
    assert_eq!(p50.a.n, 5, "{p50:?}");
    assert_ne!(p50.verdict, Verdict::NotApplicable);
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("no record has an open-loop phase")),
        "{:?}",
        c.notes
    );
    let mixed = compare(
        &records("a", &[100.0; 5]),
        &b,
        (None, None),
        &CompareOptions::default(),
    );
    let p50 = mixed
        .metrics
        .iter()
        .find(|m| m.name == "handshake p50")
        .unwrap();
    assert_eq!(p50.b.n, 0, "{p50:?}");
}

/// Trial numbers are cut only where they number trials: a side of one record labelled
/// `tlshttp2` is not the same side as `tlshttp`.
#[test]
fn side_names_cut_trial_numbers_not_the_digits_of_a_name() {
    assert_eq!(side_name_of(["A1", "A2", "A3"]), "A");
    assert_eq!(side_name_of(["run-1", "run-2"]), "run");
    assert_eq!(side_name_of(["x#1", "x#2"]), "x");
    assert_eq!(side_name_of(["tlshttp2"]), "tlshttp2");
    assert_eq!(side_name_of(["kernel1"]), "kernel1");
    assert_eq!(side_name_of(["kernel1", "kernel1"]), "kernel1");
    assert_eq!(side_name_of(["v6.1", "v6.8"]), "v6.1, v6.8");
    assert_eq!(side_name_of(["42", "43"]), "42, 43");
    assert_eq!(side_name_of(["", ""]), "unlabelled");
}

#[test]
fn identical_distributions_give_no_verdict() {
    let mut rng = StdRng::seed_from_u64(2);
    for seed_round in 0..20 {
        let a = trials(&mut rng, 10, 20_000.0, 0.03);
        let b = trials(&mut rng, 10, 20_000.0, 0.03);
        let m = compare_samples("x", "u", Direction::HigherIsBetter, &a, &b, None);
        assert!(
            !matches!(m.verdict, Verdict::Better | Verdict::Worse),
            "round {seed_round}: {m:?}"
        );
    }
    let a = trials(&mut rng, 10, 20_000.0, 0.03);
    let m = compare_samples("x", "u", Direction::LowerIsBetter, &a, &a, None);
    assert_eq!(m.verdict, Verdict::NoSignificantChange, "{m:?}");
    assert_eq!(m.relative_change, Some(0.0));
}

#[test]
fn a_ten_percent_shift_with_ten_trials_is_detected_in_the_right_direction() {
    let mut rng = StdRng::seed_from_u64(3);
    let a = trials(&mut rng, 10, 20_000.0, 0.02);
    let b = trials(&mut rng, 10, 22_000.0, 0.02);
    let up = compare_samples(
        "connections/s",
        "conn/s",
        Direction::HigherIsBetter,
        &a,
        &b,
        None,
    );
    assert_eq!(up.verdict, Verdict::Better, "{up:?}");
    let i = up.interval.unwrap();
    assert!(i.low > 0.05 && i.high < 0.15, "{i:?}");
    assert!((up.relative_change.unwrap() - 0.1).abs() < 0.03, "{up:?}");
    let lat = compare_samples("p99", "µs", Direction::LowerIsBetter, &a, &b, None);
    assert_eq!(lat.verdict, Verdict::Worse);
    let back = compare_samples("p99", "µs", Direction::LowerIsBetter, &b, &a, None);
    assert_eq!(back.verdict, Verdict::Better);
    // Through records, with sides named by their labels.
    let c = compare(
        &records("tcp_timestamps=1", &a),
        &records("tcp_timestamps=0", &b),
        (None, None),
        &CompareOptions::default(),
    );
    assert_eq!(rate(&c).verdict, Verdict::Better);
    assert_eq!(
        (c.a.name.as_str(), c.b.name.as_str()),
        ("tcp_timestamps=1", "tcp_timestamps=0")
    );
}

#[test]
fn the_same_shift_with_two_trials_is_inconclusive() {
    let m = compare_samples(
        "connections/s",
        "conn/s",
        Direction::HigherIsBetter,
        &[20_000.0, 20_100.0],
        &[22_000.0, 22_100.0],
        None,
    );
    assert_eq!(m.verdict, Verdict::TooFewTrials, "{m:?}");
    assert_eq!(m.verdict.as_str(), "inconclusive: N too small");
    assert!(m.interval.is_none(), "2 vs 2 cannot reach 95%: {m:?}");
    assert!((m.relative_change.unwrap() - 0.1).abs() < 0.01);
    // The case: 2 trials, everything B below A, "-99% better" before.
    let c = compare(
        &records("A", &[31_300.0, 610.0]),
        &records("B", &[320.0, 270.0]),
        (None, None),
        &CompareOptions::default(),
    );
    assert_eq!(rate(&c).verdict, Verdict::TooFewTrials);
    assert!(
        c.notes.iter().any(|n| n.contains("1 time in 6")),
        "{:?}",
        c.notes
    );
}

#[test]
fn a_shift_inside_the_noise_floor_gets_no_verdict() {
    let a: Vec<f64> = (0..10).map(|i| 100.0 + i as f64 * 0.1).collect();
    let b: Vec<f64> = a.iter().map(|x| x * 1.03).collect();
    let m = compare_samples("x", "u", Direction::HigherIsBetter, &a, &b, Some(0.05));
    assert_eq!(m.verdict, Verdict::BelowNoiseFloor, "{m:?}");
    let m = compare_samples("x", "u", Direction::HigherIsBetter, &a, &b, Some(0.01));
    assert_eq!(m.verdict, Verdict::Better, "{m:?}");
    // Default floor: A's own spread (about 0.37% here).
    let m = compare_samples("x", "u", Direction::HigherIsBetter, &a, &b, None);
    assert!(
        m.min_effect.unwrap() > 0.001 && m.min_effect.unwrap() < 0.01,
        "{m:?}"
    );
}

/// Records with `--http` and `--tls` figures compare responses/s, TLS handshakes/s and
/// the TLS handshake p50/p99; records without them leave those metrics out.
#[test]
fn http_and_tls_figures_are_compared_when_the_records_have_them() {
    let plain = compare(
        &records("a", &[100.0; 5]),
        &records("b", &[100.0; 5]),
        (None, None),
        &CompareOptions::default(),
    );
    for name in OPTIONAL_METRICS.iter().skip(1) {
        assert!(plain.metrics.iter().all(|m| m.name != *name), "{name}");
    }
    let with = |label: &str, hs: u64, lat_ns: u64| -> Vec<RunRecord> {
        let mut v = records(label, &[100.0; 5]);
        for rec in &mut v {
            for p in &mut rec.phases {
                p.http = Some(crate::record::HttpCounts {
                    responses: hs,
                    ..Default::default()
                });
                p.tls = Some(crate::record::TlsCounts {
                    handshakes: hs,
                    ..Default::default()
                });
                let mut h = crate::record::new_latency_histogram();
                h.record_n(lat_ns, 100).unwrap();
                p.histograms.tls_handshake = Some(crate::record::encode_histogram(&h));
            }
        }
        v
    };
    let (a, b) = (with("a", 1_000, 2_000_000), with("b", 2_000, 1_000_000));
    let c = compare(&a, &b, (None, None), &CompareOptions::default());
    let get = |n: &str| c.metrics.iter().find(|m| m.name == n).unwrap();
    let secs = rate_phase(&a[0]).unwrap().measured_secs;
    for (name, want_a, want_b) in [
        ("responses/s", 1_000.0 / secs, 2_000.0 / secs),
        ("TLS handshakes/s", 1_000.0 / secs, 2_000.0 / secs),
    ] {
        let m = get(name);
        assert!((m.a.median.unwrap() - want_a).abs() < 1e-9, "{name} {m:?}");
        assert!((m.b.median.unwrap() - want_b).abs() < 1e-9, "{name} {m:?}");
        assert_eq!(m.verdict, Verdict::Better, "{name}");
    }
    for name in ["TLS handshake p50", "TLS handshake p99"] {
        let m = get(name);
        let (ma, mb) = (m.a.median.unwrap(), m.b.median.unwrap());
        assert!(
            (ma - 2_000.0).abs() < 2.0 && (mb - 1_000.0).abs() < 1.0,
            "{name} {m:?}"
        );
        assert_eq!(
            m.verdict,
            Verdict::Better,
            "{name}: lower latency is better"
        );
    }
    // Every trial flagged (left out): the HTTP/TLS rows stay, too few trials with the
    // flagged figures, as the TCP rows do (they vanished from the text table).
    let flag = |mut v: Vec<RunRecord>| {
        v.iter_mut().for_each(|r| r.run.interrupted = true);
        v
    };
    let c = compare(&flag(a), &flag(b), (None, None), &CompareOptions::default());
    for name in OPTIONAL_METRICS.iter().skip(1) {
        let m = c.metrics.iter().find(|m| m.name == *name);
        let m = m.unwrap_or_else(|| panic!("{name} left out when every trial is flagged"));
        assert_eq!(m.verdict, Verdict::TooFewTrials, "{name}");
        assert_eq!(m.a_excluded.n, 5, "{name}");
    }
}

/// A record that kept only its closed-loop peak phase (a `bench` interrupted during the
/// peak) has no latency metrics: its peak's handshake latency is not an open loop's at a
/// fixed rate, so it is n/a, never shown under "latency phase" (kind: statistics).
#[test]
fn a_record_without_an_open_loop_phase_has_no_latency_metrics() {
    let mut rec = RunRecord::example();
    let whole = metric_values(&rec);
    rec.phases.retain(|p| p.name == "peak");
    assert!(latency_phase(&rec).is_none());
    let v = metric_values(&rec);
    for (i, (name, _, _, group)) in METRICS.iter().enumerate() {
        if *group == LATENCY {
            assert_eq!(v[i], None, "{name}");
        } else {
            assert_eq!(v[i], whole[i], "{name}: the peak's figures stay");
        }
    }
    assert!(whole
        .iter()
        .zip(METRICS)
        .any(|(x, (_, _, _, group))| group == LATENCY && x.is_some()));
    let note = phase_note([&rec].into_iter(), false);
    assert!(note.contains("from phase - (open loop"), "{note}");
}

/// Issue 35 item 2: with `--tls-resume`, `compare` gives full and resumed handshakes their own
/// rates and percentiles (15 full + 585 resumed were one distribution); records without the
/// split leave those metrics out.
#[test]
fn full_and_resumed_tls_handshakes_are_compared_apart() {
    let plain = compare(
        &records("a", &[100.0; 5]),
        &records("b", &[100.0; 5]),
        (None, None),
        &CompareOptions::default(),
    );
    for name in super::metrics::TLS_SPLIT_METRICS {
        assert!(plain.metrics.iter().all(|m| m.name != name), "{name}");
    }
    let with = |label: &str, full_ns: u64, resumed_ns: u64| -> Vec<RunRecord> {
        let mut v = records(label, &[100.0; 5]);
        for rec in &mut v {
            for p in &mut rec.phases {
                p.tls = Some(crate::record::TlsCounts {
                    handshakes: 600,
                    full: 15,
                    resumed: 585,
                    ..Default::default()
                });
                let mut f = crate::record::new_latency_histogram();
                f.record_n(full_ns, 15).unwrap();
                let mut r = crate::record::new_latency_histogram();
                r.record_n(resumed_ns, 585).unwrap();
                let mut both = f.clone();
                both.add(&r).unwrap();
                p.histograms.tls_handshake = Some(crate::record::encode_histogram(&both));
                p.histograms.tls_full = Some(crate::record::encode_histogram(&f));
                p.histograms.tls_resumed = Some(crate::record::encode_histogram(&r));
            }
        }
        v
    };
    let (a, b) = (with("a", 1_500_000, 200_000), with("b", 1_500_000, 100_000));
    let c = compare(&a, &b, (None, None), &CompareOptions::default());
    let get = |n: &str| c.metrics.iter().find(|m| m.name == n).unwrap();
    let secs = rate_phase(&a[0]).unwrap().measured_secs;
    let full_rate = get("TLS full handshakes/s");
    assert!((full_rate.a.median.unwrap() - 15.0 / secs).abs() < 1e-9);
    let resumed_rate = get("TLS resumed handshakes/s");
    assert!((resumed_rate.b.median.unwrap() - 585.0 / secs).abs() < 1e-9);
    let full = get("TLS full handshake p99");
    assert!((full.a.median.unwrap() - 1_500.0).abs() < 2.0, "{full:?}");
    assert!((full.b.median.unwrap() - 1_500.0).abs() < 2.0, "{full:?}");
    let resumed = get("TLS resumed handshake p50");
    assert!(
        (resumed.a.median.unwrap() - 200.0).abs() < 0.5,
        "{resumed:?}"
    );
    assert!(
        (resumed.b.median.unwrap() - 100.0).abs() < 0.5,
        "{resumed:?}"
    );
    assert_eq!(resumed.verdict, Verdict::Better, "lower latency is better");
}
