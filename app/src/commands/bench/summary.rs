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
/// ([`loadgen::render::second_line`]), or `None` for a drain second after the phase's end (it
/// only holds completions of attempts started before).
pub fn progress_line(spec: &crate::setup::PhaseSpec, row: &loadgen::TimelineRow) -> Option<String> {
    // A drain second with drops settled at the end (starts due in the phase that the generator
    // never made) is printed: without it the lines would show "dropped 0/s" throughout while
    // the phase total counts thousands.
    if row.is_drain() && row.dropped == 0 {
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

    #[test]
    fn progress_line_names_the_phase_and_skips_drain_seconds() {
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
        assert_eq!(progress_line(&spec, &drain), None, "drain second");
        // Starts the generator never made, settled at the end: the drain line shows them.
        drain.dropped = 69_006;
        let l = progress_line(&spec, &drain).unwrap();
        assert!(l.contains("69,006 dropped"), "{l}");
    }
}
