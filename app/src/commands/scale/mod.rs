//! `connstorm scale`: the closed-loop peak at 1, 2, 4, … N cores, in two shapes — server and
//! load growing together, and a fixed server with the load growing — each step on its own
//! harness (a fresh server, and with `--netns` fresh namespaces), measured and checked against
//! the kernel like every `bench` phase. Prints and records per step conn/s, per core, scaling
//! efficiency, CPU µs per connection per side and the busiest CPU's softirq share; names each
//! shape's knee (efficiency below `--efficiency`) and what limited it.
//!
//! - [`args`]: the options ([`Args`]).
//! - [`run`] (here): every input checked first (the CPUs, the plan, `--profile`'s access, the
//!   sizes; bad input exits 2 before anything runs), the plan printed ([`tuning::advice::plan_scale`]:
//!   node by node, one thread per core first), the steps run, the record written (a `scale`
//!   section, [`results::record::ScaleRecord`], beside one phase per step), the table, knees,
//!   profiles and plot.

pub mod args;

pub use args::Args;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::Context;
use results::record::{BuildInfo, ScaleRecord, ScaleStep};
use tuning::advice::{PairLayout, ScalePlan, ScalePlanError, ScaleRequest, ScaleShape};

use super::Format;
use crate::bad_input;
use crate::record::Build;
use crate::setup::{PhaseSpec, Setup};
use args::{PairsArg, ShapeArg};

/// Attempts in flight per load core by default (as `bench`'s peak: 32 per load CPU).
pub const DEFAULT_CONCURRENCY_PER_CORE: u32 = 32;

/// Shortest step accepted: two whole seconds, so whether the rate settled can be judged.
pub const MIN_STEP: std::time::Duration = std::time::Duration::from_secs(2);

/// The scale request from the options (CPUs, shapes, steps), without the host.
fn request(args: &Args, allowed: Vec<usize>, nic_node: Option<usize>) -> ScaleRequest {
    ScaleRequest {
        shapes: match args.shape {
            ShapeArg::Together => vec![ScaleShape::Together],
            ShapeArg::FixedServer => vec![ScaleShape::FixedServer],
            ShapeArg::Both => vec![ScaleShape::Together, ScaleShape::FixedServer],
        },
        pairs: match args.pairs {
            PairsArg::Split => PairLayout::Split,
            PairsArg::Shared => PairLayout::Shared,
        },
        steps: args.steps.clone(),
        server_cores: args.server_cores,
        smt: args.smt,
        housekeeping_cores: args.housekeeping_cores,
        nic_node,
        allowed: Some(allowed),
    }
}

/// What `--like` sets, said in the dry run and the run alike: neper's flows per thread as
/// attempts in flight per load core, and when they do not divide, that they were rounded up
/// (`-T 4 -F 1` runs 1 per core: 4 on four cores, where neper keeps 1).
fn like_note(l: &str, per_core: u32) -> anyhow::Result<String> {
    let t = super::bench::neper::parse(l)?;
    let rounded = if t.flows % t.threads == 0 {
        String::new()
    } else {
        format!(
            " (neper's -F {} flows over -T {} threads is {} per thread, rounded up to {} per load core: a step of N cores keeps {}×N in flight where neper keeps {})",
            t.flows,
            t.threads,
            common::numfmt::exact(f64::from(t.flows) / f64::from(t.threads)),
            per_core,
            per_core,
            t.flows
        )
    };
    Ok(format!(
        "scale: --like {l}: {per_core} attempts in flight per load core{rounded}, --close fin, --mode hold"
    ))
}

/// A plan error as bad input, with the options that would make a plan fit on this host
/// (`smt`: the host has SMT siblings the plan left out).
fn plan_error(e: ScalePlanError, args: &Args, smt: bool) -> anyhow::Error {
    let fix = match &e {
        ScalePlanError::OneCpu { .. } if args.cpus.is_some() => {
            "give --cpus with at least two CPUs".to_string()
        }
        ScalePlanError::OneCpu { .. } => {
            "run it where this process may use more CPUs (taskset -c, the cpuset)".to_string()
        }
        // One piece of advice: the steps given, in order and each once, where that leaves
        // any (`1,2,2` and `2,1` both mean 1,2).
        ScalePlanError::BadSteps { steps } => {
            let mut fixed: Vec<usize> = steps.iter().copied().filter(|&n| n >= 1).collect();
            fixed.sort_unstable();
            fixed.dedup();
            let ordered = fixed
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",");
            if fixed.is_empty() {
                "give --steps like 1,2,4,8".into()
            } else {
                format!("give --steps like 1,2,4,8 (yours in order, each once: --steps {ordered})")
            }
        }
        ScalePlanError::TooFew { housekeeping, .. } => {
            let mut v = vec!["fewer or smaller --steps".to_string()];
            if args.pairs == PairsArg::Split && args.shape != ShapeArg::FixedServer {
                v.push("--pairs shared (one server and one load worker per CPU)".into());
            }
            if smt && !args.smt {
                v.push("--smt (both threads of a core)".into());
            }
            if !housekeeping.is_empty() && args.housekeeping_cores > 0 {
                v.push("--housekeeping-cores 0 (when nothing is isolated)".into());
            }
            v.push("more CPUs".into());
            format!("give {}", v.join(", or "))
        }
        ScalePlanError::OneStep { shape, .. } => {
            let mut v = Vec::new();
            if *shape == "together" && args.pairs == PairsArg::Split {
                // With both shapes asked, the fixed server fits on no fewer CPUs than
                // together-split does: name the command line that runs here.
                v.push(if args.shape == ShapeArg::Both {
                    "--shape together --pairs shared (one server and one load worker per CPU)"
                } else {
                    "--pairs shared (twice the cores on these CPUs)"
                });
            }
            if *shape == "fixed-server" && args.shape == ShapeArg::Both {
                v.push("--shape together");
            }
            if smt && !args.smt {
                v.push("--smt");
            }
            v.push("more CPUs");
            format!("give {}", v.join(", or "))
        }
        // The suggestion counts the worker CPUs (`server + left` overflowed for a huge
        // --server-cores and suggested "18446744073709551613 or fewer").
        ScalePlanError::ServerTooLarge {
            server, workers, ..
        } if *server > 1 && workers.len() >= 3 => {
            format!("give --server-cores {} or fewer", workers.len() - 2)
        }
        ScalePlanError::ServerTooLarge { .. } => "a fixed server needs three worker CPUs (one \
            server core and two load steps): give --shape together, or more CPUs"
            .into(),
    };
    bad_input(format!("scale: {e}; {fix}"))
}

/// The CPUs the plan may use: `--cpus` (each online and allowed) or every allowed CPU; with
/// `--root`, that root's `Cpus_allowed_list`.
fn allowed(args: &Args, root: &Path) -> anyhow::Result<Vec<usize>> {
    let mask = if args.root.is_some() {
        tuning::host::allowed_cpus(root).map_err(|e| bad_input(format!("--root: {e}")))?
    } else {
        common::cpulist::usable()
    };
    let Some(list) = &args.cpus else {
        return Ok(mask);
    };
    let cpus = common::units::parse_cpus(list).map_err(|e| bad_input(format!("--cpus: {e}")))?;
    if let Some(c) = cpus.iter().find(|c| !mask.contains(c)) {
        return Err(bad_input(format!(
            "--cpus: {}",
            common::cpulist::unavailable_message(*c, &mask)
        )));
    }
    Ok(cpus)
}

/// `--plot FILE`: a picture format the plot writer draws (`.svg` or `.png`), at a path it can
/// write once every step has run ([`common::files::check_output_file`]).
fn check_plot(p: &Path) -> anyhow::Result<()> {
    common::files::check_output_file("--plot", p)?;
    let ext = p
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if !matches!(ext.as_deref(), Some("svg" | "png")) {
        return Err(bad_input(format!(
            "--plot {}: name the picture FILE.svg or FILE.png",
            p.display()
        )));
    }
    Ok(())
}

/// Checks everything that needs no server: the sizes, the CPUs, the plan. Returns the
/// topology's root, the plan and the attempts in flight per load core.
fn check(args: &Args) -> anyhow::Result<(ScalePlan, tuning::host::Topology, u32)> {
    if !(args.efficiency > 0.0 && args.efficiency <= 1.0) {
        return Err(bad_input(format!(
            "--efficiency {}: give a share above 0 and at most 1, e.g. --efficiency 0.8",
            args.efficiency
        )));
    }
    if args.step_duration < MIN_STEP {
        return Err(bad_input(format!(
            "--step-duration {:?} is shorter than {} s: a step needs two whole seconds to tell \
             whether its rate settled; give e.g. --step-duration 5s",
            args.step_duration,
            MIN_STEP.as_secs()
        )));
    }
    if args.server_cores == Some(0) {
        // Planned as a server on no CPU ("server CPUs none"), then refused only once the first
        // step had begun.
        return Err(bad_input(
            "--server-cores 0: the fixed server needs at least one core; give e.g. \
             --server-cores 2, or leave it out (half of the worker CPUs)",
        ));
    }
    super::bench::args::parse_label(&args.label).map_err(|e| bad_input(format!("--label {e}")))?;
    if let Some(p) = &args.plot {
        check_plot(p)?;
    }
    let root = args.root.clone().unwrap_or_else(|| "/".into());
    let topo = tuning::host::Topology::read(&root)
        .map_err(|e| bad_input(format!("the CPU topology under {}: {e}", root.display())))?;
    let allowed = allowed(args, &root)?;
    let nic_node = match &args.dev {
        Some(dev) => {
            let nic = tuning::host::Nic::read(&root, dev)
                .map_err(|e| bad_input(format!("--dev: {e}")))?;
            nic.numa_node
        }
        None => None,
    };
    let plan = tuning::advice::plan_scale(&topo, &request(args, allowed, nic_node))
        .map_err(|e| plan_error(e, args, topo.smt_active()))?;
    let per_core = match &args.like {
        Some(l) => {
            let t = super::bench::neper::parse(l)?;
            // bench maps -l to its peak phase; scale's steps last --step-duration, and a -l
            // given here was dropped unread (the steps ran 5 s each whatever -l said).
            if super::bench::neper::gives_length(l) {
                return Err(bad_input(format!(
                    "--like: neper -l {} s is bench's test length; scale runs each step for --step-duration ({} now): drop -l and give --step-duration {}s",
                    t.seconds,
                    common::numfmt::exact(args.step_duration.as_secs_f64()),
                    t.seconds
                )));
            }
            t.flows.div_ceil(t.threads)
        }
        None => args
            .concurrency_per_core
            .unwrap_or(DEFAULT_CONCURRENCY_PER_CORE),
    };
    if per_core == 0 {
        return Err(bad_input(
            "--concurrency-per-core 0: keep at least one attempt in flight per load core, e.g. 32",
        ));
    }
    if let Some(w) = args.load_workers_per_core.map(usize::from) {
        crate::limits::check_load_workers(
            Some(w),
            1,
            Some(u64::from(per_core)),
            "--load-workers-per-core",
            "--concurrency-per-core",
        )?;
        let largest = plan.steps.iter().map(|s| s.load.len()).max().unwrap_or(1);
        crate::limits::check_load_workers(
            Some(w.saturating_mul(largest)),
            largest,
            None,
            &format!("--load-workers-per-core {w} × {largest} load cores of the largest step"),
            "",
        )?;
    }
    if let Some(w) = args.server_workers_per_core.map(usize::from) {
        let largest = plan.steps.iter().map(|s| s.server.len()).max().unwrap_or(1);
        let n = w.saturating_mul(largest);
        if n > server::config::MAX_WORKERS {
            let count = |v: usize| common::numfmt::count(v as u64);
            return Err(bad_input(format!(
                "--server-workers-per-core {w} × {largest} server cores of the largest step = {} server workers, above the most one server starts, {}: give --server-workers-per-core {} or less",
                count(n),
                count(server::config::MAX_WORKERS),
                server::config::MAX_WORKERS / largest.max(1)
            )));
        }
    }
    Ok((plan, topo, per_core))
}

/// `--dry-run`: the workers each step runs per core, when an option set them (the plan itself
/// lists cores and CPUs).
fn workers_line(args: &Args) -> Option<String> {
    let per = |w: Option<u16>, side: &str| {
        w.map(|w| {
            format!("{w} {side} worker(s) per {side} core (N × {w} in a step of N {side} cores)")
        })
    };
    let parts: Vec<String> = [
        per(args.server_workers_per_core, "server"),
        per(args.load_workers_per_core, "load"),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!parts.is_empty()).then(|| format!("workers: {}\n", parts.join("; ")))
}

/// The harness setup of one step.
fn setup_of(args: &Args, step: &tuning::advice::ScaleStep) -> anyhow::Result<Setup> {
    let (close, mode) = match &args.like {
        Some(_) => (loadgen::CloseMode::Fin, server::Mode::Hold),
        None => {
            let mode = crate::setup::protocol_mode(args.mode, false, false).map_err(bad_input)?;
            let http = matches!(mode, server::Mode::Http { .. });
            let close = crate::setup::close_or_default(args.close, http);
            crate::setup::check_close_and_mode(close, &mode).map_err(bad_input)?;
            (close, mode)
        }
    };
    Ok(Setup {
        server_cpus: step.server.clone(),
        server_workers: args
            .server_workers_per_core
            .map_or(0, |w| usize::from(w) * step.server.len()),
        load_cpus: step.load.clone(),
        engine: args.engine,
        mode,
        backlog: args.backlog,
        close,
        target: None,
        netns: args.netns,
        rtt: None,
        connect_timeout: args.connect_timeout,
        expect_bytes: match mode {
            server::Mode::Greet { bytes } => Some(bytes),
            _ => None,
        },
        tls: None,
        http: false,
        load_engine: args.load_engine,
        accept_wait: true,
        load_workers: args
            .load_workers_per_core
            .map_or(0, |w| usize::from(w) * step.load.len()),
        port_slices: args.port_slices,
        pacing: loadgen::Pacing::default(),
        whole_machine: step.server == step.load,
    })
}

/// The phase name of a step: `together-4`, `fixed-server-8`.
fn phase_name(s: &tuning::advice::ScaleStep) -> String {
    format!("{}-{}", s.shape.name(), s.cores)
}

/// Whether a step is profiled: each shape's first and last, or all with `--profile-all`.
fn profiled(plan: &ScalePlan, i: usize, all: bool) -> bool {
    if all {
        return true;
    }
    let shape = plan.steps[i].shape;
    let of: Vec<usize> = (0..plan.steps.len())
        .filter(|&j| plan.steps[j].shape == shape)
        .collect();
    of.first() == Some(&i) || of.last() == Some(&i)
}

/// Runs `connstorm scale`; `build`: the binary's version and build, for the record. Exit code:
/// 0, or 3 when no step measured a connection.
///
/// # Errors
/// Bad input (exit 2) before anything runs; harness, namespace or record failures.
pub fn run(args: Args, build: (Build, BuildInfo)) -> anyhow::Result<i32> {
    let (plan, topo, per_core) = check(&args)?;
    // The bounds of the largest step (attempts in flight against the descriptor limit, the
    // connect timeout, --netns's privilege, --out) are checked for a dry run too: a plan the
    // run would refuse is refused (a billion attempts per core was printed as a plan).
    let largest_load = plan.steps.iter().map(|s| s.load.len()).max().unwrap_or(1);
    let in_flight = u64::from(per_core) * largest_load as u64;
    let room = crate::setup::fd_room_after_raise() as u64;
    if in_flight > room {
        let count = common::numfmt::count;
        return Err(bad_input(format!(
            "--concurrency-per-core {} × {largest_load} load core(s) of the largest step = {} \
             attempts in flight, above the {} this run can hold (each is a socket; the load \
             side gets half of RLIMIT_NOFILE's hard limit, at most 16,384): give \
             --concurrency-per-core {} or less",
            count(u64::from(per_core)),
            count(in_flight),
            count(room),
            count((room / largest_load as u64).max(1))
        )));
    }
    crate::limits::check_setup(&crate::limits::SetupRequest {
        concurrency: Some(per_core.saturating_mul(largest_load as u32)),
        connect_timeout: args.connect_timeout,
        target: false,
        netns: args.netns,
        out: &args.out,
    })?;
    // Before --dry-run's plan: a close mode and server mode that wait on each other are
    // refused by the plan too.
    let setups: Vec<Setup> = plan
        .steps
        .iter()
        .map(|s| setup_of(&args, s))
        .collect::<anyhow::Result<_>>()?;
    if args.dry_run {
        let mut text = tuning::render::scale_plan(&topo, &plan);
        if let Some(line) = workers_line(&args) {
            text.push_str(&line);
        }
        if let Some(l) = &args.like {
            text.push_str(&like_note(l, per_core)?);
            text.push('\n');
        }
        crate::output::out(&text);
        return Ok(0);
    }
    let profile = args.profile.check()?;
    let _ = server::rlimit::raise_nofile();
    let stop = crate::signals::stop_flag().context("install signal handlers")?;
    let note = super::bench::note;
    for n in &plan.notes {
        note(&format!("scale: {n}"));
    }
    if let Some(l) = &args.like {
        note(&like_note(l, per_core)?);
    }
    let step_secs = (args.step_duration + args.warmup).mul_f64(plan.steps.len() as f64);
    let _progress = crate::progress::begin("scale", step_secs);
    let config = serde_json::json!({
        "shape": format!("{:?}", args.shape).to_lowercase(),
        "pairs": plan_pairs(&args),
        "steps": plan.steps.iter().map(|s| s.cores).collect::<Vec<_>>(),
        "step_secs": args.step_duration.as_secs_f64(),
        "warmup_secs": args.warmup.as_secs_f64(),
        "efficiency": args.efficiency,
        "concurrency_per_core": per_core,
        "like": args.like,
        "profile_hz": profile.map(|p| p.frequency_hz),
        "setup": setups.first(),
    });
    let started = Instant::now();
    let mut record: Option<results::RunRecord> = None;
    let mut steps = Vec::new();
    let mut outcome: anyhow::Result<()> = Ok(());
    for (i, (s, setup)) in plan.steps.iter().zip(setups).enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let name = phase_name(s);
        note(&format!(
            "[scale] {} {} core(s): server CPUs {}, load CPUs {} (node{} {}){}",
            s.shape.name(),
            s.cores,
            common::cpulist::format(&s.server),
            common::cpulist::format(&s.load),
            if s.nodes.len() > 1 { "s" } else { "" },
            common::cpulist::format(&s.nodes),
            if s.notes.is_empty() {
                String::new()
            } else {
                format!(": {}", s.notes.join("; "))
            }
        ));
        let spec = PhaseSpec {
            name: name.clone(),
            pattern: loadgen::Pattern::Closed {
                concurrency: per_core.saturating_mul(s.load.len() as u32),
            },
            duration: args.step_duration,
            warmup: args.warmup,
        };
        let prof = profile
            .filter(|_| profiled(&plan, i, args.profile_all))
            .map(|p| p.config(&[("server", &s.server), ("load", &s.load)]));
        let ran = (|| -> anyhow::Result<()> {
            let mut h = super::bench::start(setup)?;
            h.check_phase(&spec)?;
            let rec = record.get_or_insert_with(|| {
                let mut r =
                    crate::record::new_record("scale", &args.label, config.clone(), &h, &build.0);
                r.build = build.1.clone();
                r
            });
            let out = h.run_phase_profiled(
                &spec,
                &stop,
                &mut |row| super::bench::progress(&spec, row),
                prof,
            );
            drop(h.finish());
            let out = out?;
            rec.warnings.extend(out.warnings);
            rec.run.interrupted |= out.report.interrupted;
            if let Some(e) = &out.report.engine {
                rec.run.note_load_engine(e.engine, e.line());
            }
            rec.phases.push(out.record);
            Ok(())
        })();
        if let Err(e) = ran {
            outcome = Err(e);
            break;
        }
        steps.push(ScaleStep {
            shape: s.shape.name().into(),
            cores: s.cores,
            phase: name,
            server_cpus: s.server.clone(),
            load_cpus: s.load.clone(),
            nodes: s.nodes.clone(),
            notes: s.notes.clone(),
            ..ScaleStep::default()
        });
    }
    let Some(mut record) = record else {
        // Nothing started: the error (or the interrupt) says why; no record to write.
        outcome?;
        return Ok(3);
    };
    let ran = steps.len();
    if ran < plan.steps.len() {
        record.warnings.push(format!(
            "scale incomplete: {ran} of {} step(s) ran{}",
            plan.steps.len(),
            match &outcome {
                Err(e) => format!(": {e:#}"),
                Ok(()) => " (interrupted)".into(),
            }
        ));
    }
    record.run.server_cpus = union(plan.steps.iter().map(|s| &s.server));
    record.run.load_cpus = union(plan.steps.iter().map(|s| &s.load));
    record.run.placement = Some(format!("scale {}", plan_pairs(&args)));
    record.run.interrupted |= crate::signals::stopped(&stop);
    let mut scale = ScaleRecord {
        efficiency_threshold: args.efficiency,
        pairs: plan_pairs(&args).into(),
        smt: args.smt,
        housekeeping: plan.housekeeping.clone(),
        order: plan.order.clone(),
        notes: plan.notes.clone(),
        steps,
        knees: Vec::new(),
    };
    results::analysis::scale_figures(&mut scale, &record.phases);
    results::analysis::knee_disturbances(&mut scale, &record.warnings);
    record.scale = Some(scale);
    record.run.wall_secs = started.elapsed().as_secs_f64();
    let path = record
        .write_atomic(&args.out)
        .with_context(|| format!("write the run record under {}", args.out.display()))?;
    let mut text = String::new();
    if let Some(s) = &record.scale {
        text.push_str(&results::render::scale_text(s));
    }
    // Per step: how evenly its server workers shared the accepts, and its CPUs' softirqs.
    for p in &record.phases {
        if let Some(s) = results::analysis::accept_spread(p) {
            let line = results::analysis::spread_line(&s);
            text.push_str(&format!("{}: {line}\n", p.name));
        }
        if let Some(line) = results::analysis::softirq_line(&p.net_softirqs) {
            text.push_str(&format!("{}: {line}\n", p.name));
        }
    }
    for p in &record.phases {
        if let Some(prof) = &p.profile {
            text.push_str(&results::render::profile_text(&p.name, prof));
        }
    }
    if profile.is_some() {
        text.push_str(&crate::profile::overhead_summary(&record));
        text.push('\n');
    }
    let uneven = record
        .phases
        .iter()
        .filter_map(results::analysis::uneven_spread);
    for w in record.warnings.iter().cloned().chain(uneven) {
        text.push_str(&format!("warning: {w}\n"));
    }
    if let Some(p) = &args.plot {
        let named = [results::render::Named {
            name: if record.label.is_empty() {
                "scale".into()
            } else {
                record.label.clone()
            },
            record: &record,
        }];
        match results::render::write_plot(results::render::PlotKind::Scale, &named, &[], p) {
            Ok(()) => text.push_str(&format!("plot: {}\n", p.display())),
            Err(e) => text.push_str(&format!("warning: no plot: {e}\n")),
        }
    }
    text.push_str(&format!("record: {}\n", path.display()));
    if args.format == Format::Json {
        crate::output::out(&format!("{}\n", record.to_json()));
        crate::output::note(text.trim_end());
    } else {
        crate::output::out(&text);
    }
    outcome?;
    Ok(if record.phases.iter().all(|p| p.successes == 0) {
        3
    } else {
        0
    })
}

/// `split`, `shared`, or `fixed-server` alone (no pairs).
fn plan_pairs(args: &Args) -> &'static str {
    match (args.shape, args.pairs) {
        (ShapeArg::FixedServer, _) => "fixed-server",
        (_, PairsArg::Split) => "split",
        (_, PairsArg::Shared) => "shared",
    }
}

fn union<'a>(lists: impl Iterator<Item = &'a Vec<usize>>) -> Vec<usize> {
    let mut v: Vec<usize> = lists.flatten().copied().collect();
    v.sort_unstable();
    v.dedup();
    v
}
