//! `bench --baseline`: the paired baseline. Slices of the kernel floor ([`loadgen::floor`]) and
//! of connstorm's peak (a closed-loop phase on the running harness) alternate on the same CPUs
//! in ABBA order ([`results::analysis::abba_order`]), each after its own warm-up; every slice is
//! printed as it ends, and the record's [`Baseline`] gets the median paired ratio, its
//! order-statistic 95% interval ([`results::record::Paired`]) and every slice. The floor takes the
//! whole-machine shape when the CPU sets overlap ([`loadgen::floor::Shape`]). The kernel's
//! `Tcp.ActiveOpens` is read around each floor slice and checked against its count.
//!
//! Interface: [`measure`] takes the connstorm slice as a closure (the harness lives with the
//! caller) and [`Options`] from the command line; [`crate::run::Trial::baseline`] runs it on a
//! trial's still-running server. Every line it shows goes to the caller's `on_note`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::numfmt;
use results::analysis::abba_order;
use results::record::{Arm, Baseline, Paired, PhaseRecord, RunRecord, Slice};

use crate::run::{peak_concurrency, Event};
use crate::setup::PhaseSpec;

/// Default number of pairs: the fewest that give a 95% order-statistic interval (6).
pub const DEFAULT_PAIRS: usize = 6;

/// Most pairs accepted (each pair is two slices and two warm-ups).
pub const MAX_PAIRS: usize = 100;

/// Default measured time of one slice.
pub const DEFAULT_SLICE: Duration = Duration::from_secs(2);

/// Shortest and longest slice accepted: below 0.5 s the start and stop costs show in the rate;
/// above 60 s a pair no longer shares the host's state.
pub const SLICE_RANGE: (Duration, Duration) = (Duration::from_millis(500), Duration::from_secs(60));

/// Warm-up before each slice (connections made then are not counted).
pub const WARMUP: Duration = Duration::from_millis(500);

/// Confidence of the interval printed and stored.
pub const CONFIDENCE: f64 = 0.95;

/// How the paired baseline runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Pairs (floor + connstorm slices), 1..=[`MAX_PAIRS`]; default [`DEFAULT_PAIRS`].
    pub pairs: usize,
    /// Measured time per slice, within [`SLICE_RANGE`]; default [`DEFAULT_SLICE`].
    pub slice: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            pairs: DEFAULT_PAIRS,
            slice: DEFAULT_SLICE,
        }
    }
}

impl Options {
    /// Checks the ranges.
    ///
    /// # Errors
    /// A message naming the option, its range and a value that works.
    pub fn validate(&self) -> Result<(), String> {
        if self.pairs == 0 || self.pairs > MAX_PAIRS {
            return Err(format!(
                "--baseline-pairs {} is outside 1..={MAX_PAIRS}: give e.g. --baseline-pairs {DEFAULT_PAIRS} (the fewest with a 95% interval)",
                self.pairs
            ));
        }
        if self.slice < SLICE_RANGE.0 || self.slice > SLICE_RANGE.1 {
            return Err(format!(
                "--baseline-slice {:?} is outside {:?}..={:?}: give e.g. --baseline-slice 2s",
                self.slice, SLICE_RANGE.0, SLICE_RANGE.1
            ));
        }
        Ok(())
    }
}

/// Runs the paired baseline and stores it in `record` (baseline and warnings).
/// `connstorm_slice(measured, warmup)` runs one connstorm peak slice on the caller's harness and
/// returns its phase record and warnings; `on_note` gets the plan line, one line per slice as it
/// ends (`[baseline] pair 1/6 floor: ...`) and the summary line. Stops early when `stop` turns
/// true (the slices so far are kept).
///
/// # Errors
/// When the floor's listeners cannot be set up or a connstorm slice fails.
pub fn measure(
    record: &mut RunRecord,
    server_cpus: &[usize],
    load_cpus: &[usize],
    opts: Options,
    stop: &AtomicBool,
    connstorm_slice: &mut dyn FnMut(
        Duration,
        Duration,
    ) -> anyhow::Result<(PhaseRecord, Vec<String>)>,
    on_note: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let shape = loadgen::floor::Shape::of(server_cpus, load_cpus);
    on_note(&format!(
        "[baseline] {} pairs in ABBA order, {:.1} s slices after {:.1} s warm-up each, floor shape {} ({} client / {} server threads)",
        opts.pairs,
        opts.slice.as_secs_f64(),
        WARMUP.as_secs_f64(),
        shape.name(),
        load_cpus.len(),
        server_cpus.len()
    ));
    let mut slices = Vec::with_capacity(2 * opts.pairs);
    for (pair, arm) in abba_order(opts.pairs) {
        if stop.load(Ordering::Relaxed) {
            record
                .warnings
                .push("baseline interrupted: fewer pairs than asked".into());
            break;
        }
        let slice = match arm {
            Arm::Floor => floor_slice(record, pair, server_cpus, load_cpus, opts.slice, stop)?,
            Arm::Connstorm => {
                let (phase, warnings) = connstorm_slice(opts.slice, WARMUP)?;
                record.warnings.extend(
                    warnings
                        .into_iter()
                        .map(|w| format!("baseline pair {}: {w}", pair + 1)),
                );
                from_phase(pair, &phase)
            }
        };
        if stop.load(Ordering::Relaxed) {
            // Cut short by the interrupt: its rate covers a fraction of a slice; its pair is
            // left out (a pair needs both arms measured the same way).
            slices.retain(|s: &Slice| s.pair != pair);
            record.warnings.push(format!(
                "baseline interrupted during pair {}: that pair left out of the ratio",
                pair + 1
            ));
            break;
        }
        on_note(&slice_line(&slice, opts.pairs));
        slices.push(slice);
    }
    let paired = Paired::from_slices(
        slices,
        CONFIDENCE,
        opts.slice.as_secs_f64(),
        WARMUP.as_secs_f64(),
        shape.name(),
    );
    on_note(&format!(
        "[baseline] {}",
        results::render::paired_line(&paired)
    ));
    record.baseline = Some(Baseline {
        floor_per_sec: paired.median_per_sec(Arm::Floor),
        ratio: paired.median_ratio,
        paired: Some(paired),
    });
    Ok(())
}

/// How [`crate::run::Trial::baseline`] runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BaselineRun {
    /// `--netns`: the record gets a warning, as the floor runs on the host's loopback and
    /// connstorm across the namespaces' veth.
    pub netns: bool,
    /// Closed-loop concurrency of the connstorm slices; `None` = [`peak_concurrency`]'s default.
    pub concurrency: Option<u32>,
    /// Pairs and slice length.
    pub opts: Options,
}

impl crate::run::Trial {
    /// Runs the paired baseline ([`measure`]) on this trial's still-running server and stores it
    /// in the record; call it when [`crate::run::Trial::baseline_due`] says so. The connstorm
    /// slices are closed-loop phases named `baseline` ([`BaselineRun`]); `on_second` sees their
    /// per-second rows and `on_event` their begin and end ([`Event::PhaseBegins`],
    /// [`Event::PhaseEnded`]), `on_note` the lines of [`measure`].
    ///
    /// # Errors
    /// As [`measure`], or when the server stopped before the baseline; the server is then
    /// stopped ([`crate::run::Trial::finish`]) and the record is not written.
    pub fn baseline(
        &mut self,
        how: BaselineRun,
        stop: &AtomicBool,
        on_note: &mut dyn FnMut(&str),
        on_second: &mut dyn FnMut(&loadgen::TimelineRow),
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> anyhow::Result<()> {
        let BaselineRun {
            netns,
            concurrency,
            opts,
        } = how;
        if netns {
            self.record.warnings.push("--baseline with --netns: the floor runs on the host's loopback, connstorm across the namespaces' veth: the ratio compares different paths".into());
        }
        let (server_cpus, load_cpus) = self.cpus.clone();
        let concurrency = peak_concurrency(concurrency, load_cpus.len());
        let spec = |duration, warmup| PhaseSpec {
            name: "baseline".into(),
            pattern: loadgen::Pattern::Closed { concurrency },
            duration,
            warmup,
        };
        let mut record = std::mem::replace(
            &mut self.record,
            RunRecord::new("baseline", serde_json::Value::Null),
        );
        let measured = {
            let mut slice = |d, w| match self.harness() {
                Some(h) => {
                    let spec = spec(d, w);
                    on_event(Event::PhaseBegins(&spec));
                    let ran = h.run_phase(&spec, stop, &mut *on_second);
                    on_event(Event::PhaseEnded(&spec));
                    ran.map(|o| (o.record, o.warnings))
                }
                None => Err(anyhow::anyhow!("the server stopped before the baseline")),
            };
            measure(
                &mut record,
                &server_cpus,
                &load_cpus,
                opts,
                stop,
                &mut slice,
                on_note,
            )
        };
        self.record = record;
        if measured.is_err() {
            self.finish(stop);
        }
        measured
    }
}

/// One floor slice with the kernel's `Tcp.ActiveOpens` read around it (host namespace: other
/// traffic may add, never subtract).
fn floor_slice(
    record: &mut RunRecord,
    pair: usize,
    server_cpus: &[usize],
    load_cpus: &[usize],
    measured: Duration,
    stop: &AtomicBool,
) -> anyhow::Result<Slice> {
    let before = tuning::counters::Snapshot::read_current().ok();
    let f = loadgen::floor::run(
        std::net::Ipv4Addr::LOCALHOST.into(),
        server_cpus,
        load_cpus,
        WARMUP,
        measured,
        stop,
    )?;
    let active_opens = match (before, tuning::counters::Snapshot::read_current()) {
        (Some(b), Ok(a)) => a.delta(&b).get("Tcp.ActiveOpens"),
        _ => None,
    };
    record
        .warnings
        .extend(warnings(f.connections, f.failures, active_opens));
    Ok(Slice {
        pair,
        arm: Some(Arm::Floor),
        per_sec: f.per_sec,
        connections: f.connections,
        secs: f.secs,
        failures: f.failures,
        server_us_per_conn: f.server_us_per_conn(),
        load_us_per_conn: f.client_us_per_conn(),
    })
}

/// A connstorm slice from its phase record.
fn from_phase(pair: usize, p: &PhaseRecord) -> Slice {
    Slice {
        pair,
        arm: Some(Arm::Connstorm),
        // A slice without a success completed 0 connections/s, as a floor slice would.
        per_sec: p.achieved_per_sec.unwrap_or(0.0),
        connections: p.successes,
        secs: p.measured_secs,
        failures: p.failures.values().sum(),
        server_us_per_conn: p.cpu.server.as_ref().and_then(|s| s.us_per_conn()),
        load_us_per_conn: p.cpu.load.us_per_conn(),
    }
}

/// The line printed when a slice ends, e.g. `[baseline] pair 1/6 floor: 30,120 conn/s
/// (60,240 in 2.00 s, 0 failed; CPU/conn server 8.1 µs, load 12.3 µs)`.
fn slice_line(s: &Slice, pairs: usize) -> String {
    let us = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1} µs"));
    format!(
        "[baseline] pair {}/{pairs} {}: {} conn/s ({} in {:.2} s, {} failed; CPU/conn server {}, load {})",
        s.pair + 1,
        s.arm.map_or("?", Arm::name),
        numfmt::fixed(s.per_sec, 0),
        numfmt::count(s.connections),
        s.secs,
        numfmt::count(s.failures),
        us(s.server_us_per_conn),
        us(s.load_us_per_conn)
    )
}

/// The floor's warnings: the kernel counted fewer connects than the floor did (it never counts
/// fewer: each connect enters SYN-SENT, `Tcp.ActiveOpens`), or connects failed.
fn warnings(connections: u64, failures: u64, active_opens: Option<i64>) -> Vec<String> {
    let mut w = Vec::new();
    if let Some(k) = active_opens.filter(|&k| (k.max(0) as u64) < connections) {
        w.push(format!(
            "kernel floor: {} connects counted but the kernel's Tcp.ActiveOpens rose by only {}",
            numfmt::count(connections),
            numfmt::signed(k)
        ));
    }
    if failures > 0 {
        w.push(format!(
            "kernel floor: {} connect failures",
            numfmt::count(failures)
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewer_kernel_connects_and_failures_are_warned() {
        assert!(warnings(100, 0, Some(100)).is_empty());
        assert!(warnings(100, 0, Some(130)).is_empty(), "other traffic adds");
        assert!(warnings(100, 0, None).is_empty());
        assert_eq!(
            warnings(100, 2, Some(99)),
            [
                "kernel floor: 100 connects counted but the kernel's Tcp.ActiveOpens rose by only 99",
                "kernel floor: 2 connect failures"
            ]
        );
    }

    #[test]
    fn options_out_of_range_are_refused() {
        assert!(Options::default().validate().is_ok());
        let bad = |pairs, slice| Options { pairs, slice }.validate().unwrap_err();
        assert!(bad(0, DEFAULT_SLICE).contains("--baseline-pairs 0"));
        assert!(bad(101, DEFAULT_SLICE).contains("1..=100"));
        assert!(bad(6, Duration::from_millis(100)).contains("--baseline-slice"));
        assert!(bad(6, Duration::from_secs(61)).contains("--baseline-slice"));
    }

    /// Three pairs against a stand-in connstorm slice: slices run in ABBA order, each floor slice
    /// measured for real on loopback, the ratio is the stand-in's rate over the floor's, and
    /// the record holds every slice and no interval (3 pairs are too few at 95%).
    #[test]
    fn pairs_run_in_abba_order_and_land_in_the_record() {
        let mut record = RunRecord::default();
        let stop = AtomicBool::new(false);
        let mut calls = Vec::new();
        let opts = Options {
            pairs: 3,
            slice: Duration::from_millis(500),
        };
        let mut notes = Vec::new();
        measure(
            &mut record,
            &[0],
            &[0],
            opts,
            &stop,
            &mut |d, w| {
                calls.push((d, w));
                let p = PhaseRecord {
                    achieved_per_sec: Some(1000.0),
                    successes: 500,
                    measured_secs: 0.5,
                    ..PhaseRecord::default()
                };
                Ok((p, vec!["x".into()]))
            },
            &mut |l| notes.push(l.to_string()),
        )
        .unwrap();
        assert_eq!(calls, [(opts.slice, WARMUP); 3]);
        let b = record.baseline.unwrap();
        let p = b.paired.unwrap();
        let arms: Vec<_> = p.slices.iter().map(|s| (s.pair, s.arm.unwrap())).collect();
        assert_eq!(arms, abba_order(3));
        assert_eq!(p.ratios.len(), 3);
        for (i, r) in p.ratios.iter().enumerate() {
            let floor = p
                .slices
                .iter()
                .find(|s| s.pair == i && s.arm == Some(Arm::Floor))
                .unwrap();
            assert!(floor.connections > 0 && floor.failures == 0, "{floor:?}");
            assert!((r - 1000.0 / floor.per_sec).abs() < 1e-9);
        }
        assert_eq!(p.interval, None);
        assert_eq!(b.floor_per_sec, p.median_per_sec(Arm::Floor));
        assert_eq!(b.ratio, p.median_ratio);
        assert!(record.warnings.iter().any(|w| w == "baseline pair 2: x"));
        // The plan line, one line per slice, the summary line.
        assert_eq!(notes.len(), 1 + 6 + 1, "{notes:?}");
        assert!(
            notes[1].starts_with("[baseline] pair 1/3 floor: "),
            "{notes:?}"
        );
    }
}
