//! What `connstorm bench` prints beyond the record's own rendering
//! ([`results::render::bench_summary`]): the host's CPU accounting note and the per-second
//! progress lines.

/// How far to trust the user/sys split of CPU time on this kernel (read once): with tick-based
/// accounting the split is sampled at each scheduler tick, and without
/// CONFIG_IRQ_TIME_ACCOUNTING softirq time (the loopback handshake itself) is charged to whatever
/// task it interrupted (Documentation/admin-guide/kernel-parameters.txt, "tsc"/"nohz"; kernel/sched/cputime.c).
pub fn accounting_note() -> Option<&'static str> {
    static NOTE: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *NOTE.get_or_init(|| {
        let cfg = tuning::advice::KernelConfig::read_host(std::path::Path::new("/")).ok()?;
        let precise = cfg.enabled("CONFIG_VIRT_CPU_ACCOUNTING_GEN") || cfg.enabled("CONFIG_VIRT_CPU_ACCOUNTING_NATIVE");
        let irq = cfg.enabled("CONFIG_IRQ_TIME_ACCOUNTING");
        match (precise, irq) {
            (true, true) => None,
            (false, false) => Some("this kernel samples user/sys at scheduler ticks and charges softirq time to the interrupted task: compare totals between runs on the same kernel config, not the split"),
            (false, true) => Some("this kernel samples user/sys at scheduler ticks: compare totals, not the split"),
            (true, false) => Some("this kernel charges softirq time to the interrupted task (no CONFIG_IRQ_TIME_ACCOUNTING)"),
        }
    })
}

/// The whole summary of a bench run ([`results::render::bench_summary`] with this kernel's
/// [`accounting_note`]).
pub fn render(r: &results::RunRecord, record_path: Option<&std::path::Path>) -> String {
    results::render::bench_summary(r, record_path, accounting_note())
}

/// A progress line for one second of a phase: `[phase] ` and the one per-second line
/// ([`loadgen::render::second_line`]), or `None` for a drain second after the phase's end that
/// holds nothing (no completion, failure or drop).
pub fn progress_line(spec: &crate::setup::PhaseSpec, row: &loadgen::TimelineRow) -> Option<String> {
    // Every drain second that holds a count is printed: completions of attempts started in the
    // phase, failures, and drops settled at the end (starts due in the phase that the generator
    // never made). Without them the lines do not add up to the phase's summary (issue 35: the
    // last completions were in no line; "dropped 0/s" throughout beside thousands in the total).
    if row.is_drain() && row.successes == 0 && row.failures == 0 && row.dropped == 0 {
        return None;
    }
    Some(format!(
        "[{}] {}",
        spec.name,
        loadgen::render::second_line(row, spec.pattern.offered_per_sec())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: u64, offered: u64, attempts: u64, successes: u64) -> loadgen::TimelineRow {
        loadgen::TimelineRow {
            t_secs: t,
            warmup: false,
            offered,
            attempts,
            successes,
            failures: 0,
            failures_by_cause: Default::default(),
            late: 0,
            dropped: 0,
            p50_ns: 1_000,
            p99_ns: 2_000,
            max_ns: 2_000,
            length_secs: 1.0,
            handshake: None,
            workers: Vec::new(),
        }
    }

    /// Issue 35 item 4: the rows `bench` prints add up to the phase's summary. Three whole
    /// seconds end at 60,266 completions; the 534 that completed in the drain after the phase
    /// were in no line (drain seconds without drops were skipped), beside a summary of 60,800.
    #[test]
    fn the_printed_rows_add_up_to_the_summary() {
        let spec = crate::setup::PhaseSpec {
            name: "peak".into(),
            pattern: loadgen::Pattern::Closed { concurrency: 64 },
            duration: std::time::Duration::from_secs(3),
            warmup: std::time::Duration::ZERO,
        };
        let mut rows = vec![
            row(1, 20_000, 20_000, 20_000),
            row(2, 20_000, 20_000, 20_000),
            row(3, 20_266, 20_266, 20_266),
        ];
        let mut drain = row(4, 0, 0, 534);
        drain.length_secs = 0.0;
        rows.push(drain);
        let mut empty = row(5, 0, 0, 0);
        empty.length_secs = 0.0;
        rows.push(empty);
        let printed: u64 = rows
            .iter()
            .filter(|r| progress_line(&spec, r).is_some())
            .map(|r| r.successes)
            .sum();
        assert_eq!(printed, 60_800);
        let last = progress_line(&spec, &rows[3]).unwrap();
        assert!(last.contains("534 completed"), "{last}");
    }

    #[test]
    fn progress_line_names_the_phase_and_prints_every_drain_second_that_holds_a_count() {
        use std::time::Duration;
        let spec = crate::setup::PhaseSpec {
            name: "latency".into(),
            pattern: loadgen::Pattern::Closed { concurrency: 4 },
            duration: Duration::from_millis(1_200),
            warmup: Duration::from_millis(200),
        };
        let l = progress_line(&spec, &row(0, 7, 7, 0)).unwrap();
        assert!(l.starts_with("[latency] t=   0 s started 7/s"), "{l}");
        let mut drain = row(2, 3, 3, 3);
        drain.length_secs = 0.0;
        // A drain second with completions is printed: the lines add up to the summary.
        let l = progress_line(&spec, &drain).unwrap();
        assert!(l.contains("drain") && l.contains("3 completed"), "{l}");
        let empty = loadgen::TimelineRow {
            length_secs: 0.0,
            ..row(3, 0, 0, 0)
        };
        assert_eq!(progress_line(&spec, &empty), None, "empty drain second");
        // Starts the generator never made, settled at the end: the drain line shows them.
        drain.dropped = 69_006;
        let l = progress_line(&spec, &drain).unwrap();
        assert!(l.contains("69,006 dropped"), "{l}");
    }
}
