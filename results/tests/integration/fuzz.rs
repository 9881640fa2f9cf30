//! Deterministic fuzzing of the parsers of outside input: run records, SLOs, bucket edges.
//! Mutated input must give `Ok` or an error naming the file, never a panic.

use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use results::record::RunRecord;

use crate::util::data;

#[test]
fn mutated_records_never_panic_and_errors_name_the_file() {
    let good = std::fs::read(data("golden-v1.json")).unwrap();
    let path = Path::new("/fuzz/case.json");
    let mut rng = StdRng::seed_from_u64(42);
    let (mut ok, mut err) = (0, 0);
    for _ in 0..1_500 {
        let mut bytes = good.clone();
        match rng.gen_range(0..3) {
            0 => bytes.truncate(rng.gen_range(0..good.len())),
            1 => {
                for _ in 0..rng.gen_range(1..8) {
                    let i = rng.gen_range(0..bytes.len());
                    bytes[i] = rng.gen();
                }
            }
            _ => {
                let i = rng.gen_range(0..bytes.len());
                let j = rng.gen_range(i..bytes.len());
                bytes.drain(i..j);
            }
        }
        match RunRecord::from_slice(&bytes, path) {
            Ok(_) => ok += 1,
            Err(e) => {
                err += 1;
                assert!(e.to_string().contains("/fuzz/case.json"), "{e}");
            }
        }
    }
    assert!(
        err > 1_000,
        "most mutations must be refused ({ok} accepted)"
    );
}

#[test]
fn slo_and_bucket_parsers_take_any_text() {
    let mut rng = StdRng::seed_from_u64(7);
    let alphabet: Vec<char> = "p9.<=>,0123456789 usmµn%-".chars().collect();
    for _ in 0..5_000 {
        let len = rng.gen_range(0..12);
        let text: String = (0..len)
            .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
            .collect();
        if let Ok(slo) = results::analysis::Slo::parse(&text) {
            assert!(
                slo.quantile > 0.0 && slo.quantile < 1.0 && slo.max_ns > 0,
                "{text:?}"
            );
        }
        if let Ok(edges) = results::render::parse_bucket_edges(&text) {
            assert!(
                edges.windows(2).all(|w| w[0] < w[1]) && edges[0] > 0,
                "{text:?}"
            );
        }
        let _ = results::analysis::parse_percent(&text);
    }
}
