//! `connstorm sweep`: capacity planning. Probes the peak (closed loop), then steps the offered
//! rate in open loop from `--from` to `--to` of it, recording achieved rate, latency and errors
//! per step, and reports the knee: the highest rate that meets the SLO — as CPM,
//! connections/s and per server core. One run record holds every step as a phase (`step-1`,
//! …).
//!
//! - [`args`]: the options ([`Args`]; where and how to run is `bench`'s
//!   [`SetupArgs`](super::bench::SetupArgs)).
//! - [`run`] (here): the options checked (the SLO's latency against what the run measures),
//!   the harness started where [`placement`] says, the record written and the table printed;
//!   [`phases`]: the probe and the steps on the harness.
//! - [`placement`]: server and load CPUs so that the server, not the generator, reaches its
//!   limit first where the CPUs allow; after a load-limited probe the CPUs may move once.

pub mod args;
pub mod phases;
pub mod placement;

pub use args::Args;

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::Context;
use results::analysis::{self as sweep, Criteria, Slo};
use results::record::BuildInfo;

use super::Format;
use crate::bad_input;
use crate::record::Build;
use crate::setup::PhaseSpec;
use phases::Steps;

/// Refuses, before anything runs, an SLO on a latency this run would not measure: `response`
/// without `--http`, `tls-handshake` without `--tls`, `first-byte` without `--http` or a
/// greeting server, the accept-queue wait with an external server (`--target`) or the io_uring
/// load engine (which cannot read a connection's port: `loadgen::accept_stamps_unavailable`).
/// An accept-queue wait SLO turns `--load-engine auto` to epoll, and returns the note that says
/// so.
///
/// # Errors
/// Bad input (exit 2) naming the latency and what records it.
fn check_slo_latency(
    slo: &Slo,
    setup: &mut super::bench::SetupArgs,
) -> anyhow::Result<Option<&'static str>> {
    use sweep::SloLatency as L;
    let greets = matches!(setup.mode, Some(server::Mode::Greet { .. }));
    let mut note = None;
    if slo.latency == L::AcceptQueueWait && setup.load_engine == loadgen::LoadEngine::Auto {
        setup.load_engine = loadgen::LoadEngine::Epoll;
        note = Some("--load-engine auto runs epoll: the accept-queue wait SLO needs each connection's local port, which the io_uring engine cannot read");
    }
    let measured = match slo.latency {
        L::Handshake | L::Service => true,
        L::Response => setup.http,
        L::FirstByte => setup.http || greets,
        L::TlsHandshake => setup.tls,
        L::AcceptQueueWait => {
            setup.target.is_none()
                && setup.load_engine == loadgen::LoadEngine::Epoll
                && setup.accept_wait == crate::commands::server::args::OnOff::On
        }
    };
    if measured {
        return Ok(note);
    }
    Err(bad_input(
        sweep::SweepError::SloLatency {
            latency: slo.latency.name().to_string(),
            why: format!(
                "this sweep would not record it (--slo {:?}): it is recorded with {}",
                slo.text,
                slo.latency.needs().unwrap_or("every run")
            ),
        }
        .to_string(),
    ))
}

/// Runs `connstorm sweep`; `build`: the binary's version and build, for the record.
///
/// # Errors
/// Bad options (exit 2), harness failures, record write failures.
pub fn run(args: Args, build: (Build, BuildInfo)) -> anyhow::Result<i32> {
    let mut args = args;
    let slo = Slo::parse(&args.slo).map_err(|e| bad_input(e.to_string()))?;
    if let Some(note) = check_slo_latency(&slo, &mut args.setup)? {
        eprintln!("connstorm sweep: {note}");
    }
    let from = sweep::parse_percent(&args.from).map_err(|e| bad_input(format!("--from: {e}")))?;
    let to = sweep::parse_percent(&args.to).map_err(|e| bad_input(format!("--to: {e}")))?;
    let max_errors = sweep::parse_percent(&args.max_errors)
        .map_err(|e| bad_input(format!("--max-errors: {e}")))?;
    if max_errors > 1.0 {
        return Err(bad_input(format!(
            "--max-errors {} is above 100%: give a share of attempts, e.g. `0.1%`",
            args.max_errors
        )));
    }
    let st = &Steps {
        from,
        to,
        count: args.steps as usize,
        duration: args.step_duration,
        warmup: args.warmup,
    };
    // Every step that the range alone decides is checked before anything runs; each step's
    // rate is checked right after the probe, before the first step runs.
    st.check()?;
    let setup = args.setup.resolve()?;
    let _ = server::rlimit::raise_nofile();
    let stop = crate::signals::stop_flag().context("install signal handlers")?;
    let given = placement::Given {
        lists: args.setup.server_cpus.is_some() || args.setup.load_cpus.is_some(),
        whole_machine: args.setup.whole_machine,
    };
    let started = Instant::now();
    let _progress = crate::progress::begin(
        "sweep",
        args.probe_duration + st.warmup + (st.duration + st.warmup).mul_f64(st.count as f64),
    );
    let probe = |load_cpus: usize| PhaseSpec {
        name: "peak".into(),
        pattern: loadgen::Pattern::Closed {
            concurrency: crate::run::peak_concurrency(args.setup.concurrency, load_cpus),
        },
        duration: args.probe_duration,
        warmup: st.warmup,
    };
    let cpus = placement::Cpus::of(&setup, given);
    let mut where_ = placement::initial(&cpus);
    super::bench::note(&format!("placement: {where_}"));
    let mut harness = super::bench::start(setup)?;
    // The probe; where the CPUs are ours to choose and the load side limited it, CPUs move to
    // the load (once) and the sweep probes again there. Otherwise it is the sweep's probe.
    let spec = probe(cpus.load.len());
    let out = harness.run_phase(&spec, &stop, &mut |row| super::bench::progress(&spec, row));
    let mut probed = None;
    match out
        .as_ref()
        .ok()
        .map(|o| placement::after_probe(&cpus, &o.record))
    {
        // With --load-workers (--server-workers) the worker count was fixed against these load
        // (server) CPUs: they stay.
        Some((Some(m), _))
            if !crate::signals::stopped(&stop)
                && harness.setup().load_workers == 0
                && harness.setup().server_workers == 0 =>
        {
            super::bench::note(&format!("placement: {}", m.note));
            let mut moved = harness.setup().clone();
            (moved.server_cpus, moved.load_cpus) = (m.server, m.load);
            drop(harness.finish());
            harness = super::bench::start(moved)?;
            where_ = m.note;
        }
        judged => {
            if let Some((_, Some(note))) = judged {
                where_ = note;
            }
            probed = Some(out);
        }
    }
    let server_cores = harness.setup().server_cpus.len();
    let load_cpus = harness.setup().load_cpus.len();
    let config = serde_json::json!({
        "from": st.from, "to": st.to, "steps": st.count, "slo": args.slo, "max_errors": max_errors,
        "step_secs": st.duration.as_secs_f64(), "probe_secs": args.probe_duration.as_secs_f64(),
        "warmup_secs": st.warmup.as_secs_f64(), "setup": harness.setup(), "placement": where_,
    });
    let mut record =
        crate::record::new_record("sweep", &args.setup.label, config, &harness, &build.0);
    record.build = build.1;
    let outcome = phases::run(
        &mut harness,
        &mut record,
        (&probe(load_cpus), probed),
        st,
        &stop,
        &mut super::bench::progress,
    );
    drop(harness.finish());
    record.run.interrupted = crate::signals::stopped(&stop);
    record.run.wall_secs = started.elapsed().as_secs_f64();
    let path = record
        .write_atomic(&args.setup.out)
        .with_context(|| format!("write the run record under {}", args.setup.out.display()))?;
    let (latency, quantile) = (slo.latency, slo.quantile);
    let criteria = Criteria::new(slo, max_errors);
    let steps = sweep::steps_from_record(&record, latency, quantile);
    let knee = sweep::knee(&steps, &criteria, server_cores);
    if args.format == Format::Json {
        crate::output::out(&format!("{}\n", record.to_json()));
        crate::output::note(&format!("record: {}", path.display()));
    } else {
        let mut out =
            results::render::sweep(&record, &steps, knee.as_ref(), &criteria, server_cores);
        let _ = writeln!(out, "record: {}", path.display());
        crate::output::out(&out);
    }
    outcome?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn setup(extra: &[&str]) -> crate::commands::bench::SetupArgs {
        let mut argv = vec!["sweep"];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv).unwrap().args.setup
    }

    /// Issue 37: an SLO on the accept-queue wait is accepted now that records carry it: with the
    /// default load engine (auto turns to epoll, said in a note) and with epoll; refused with
    /// the io_uring load engine or an external server, naming what records it.
    #[test]
    fn an_accept_queue_wait_slo_is_accepted_where_the_sweep_records_it() {
        let slo = Slo::parse("accept-queue-wait p99<1ms").unwrap();
        let mut s = setup(&[]);
        let note = check_slo_latency(&slo, &mut s).unwrap();
        assert!(note.unwrap().contains("runs epoll"));
        assert_eq!(s.load_engine, loadgen::LoadEngine::Epoll);
        let mut s = setup(&["--load-engine", "epoll"]);
        assert_eq!(check_slo_latency(&slo, &mut s).unwrap(), None);
        for bad in [
            &["--load-engine", "io-uring"][..],
            &["--target", "127.0.0.1:1"][..],
        ] {
            let e = check_slo_latency(&slo, &mut setup(bad))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("accept-queue-wait") && e.contains("--load-engine epoll"),
                "{bad:?}: {e}"
            );
        }
        // Another SLO leaves the engine as given.
        let mut s = setup(&[]);
        check_slo_latency(&Slo::parse("p99<1ms").unwrap(), &mut s).unwrap();
        assert_eq!(s.load_engine, loadgen::LoadEngine::Auto);
    }
}
