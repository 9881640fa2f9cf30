//! One shard = one pinned worker thread that owns its listener, its event loop and its counters.
//!
//! The thread pins itself (sched_setaffinity(2)), sets up its engine, says "ready" (or why not)
//! on a channel, runs until [`Shared::draining`] turns true, drains (see [`crate::drain`]), and
//! returns its [`WorkerReport`] with its own CPU time ([`common::threadcpu::ThreadCpu`], the
//! same reading it publishes in its [`crate::worker::Slot`] while it runs).

use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use socket2::Socket;

use crate::config::Mode;
use crate::error::ServerError;
use crate::report::{Engine, WorkerReport};
use crate::worker::{Ctx, Ready, Shared};

/// Everything a worker thread needs to start.
#[derive(Debug)]
pub(crate) struct WorkerSpec {
    /// CPU to pin to.
    pub(crate) cpu: usize,
    /// Index in the group.
    pub(crate) index: usize,
    /// Its listener.
    pub(crate) listener: Socket,
    /// Mode.
    pub(crate) mode: Mode,
    /// Engine to run.
    pub(crate) engine: Engine,
    /// The shared TLS config (`--tls`).
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
    /// Steering is on: sample accepts' SO_INCOMING_CPU ([`Ctx::syn_cpu`]).
    pub(crate) syn_cpu: bool,
}

/// Spawns a worker thread; it reports readiness on `ready` as `(index, Ready)`. The thread is
/// named `accept-cpu<N>` for people reading `top -H`; nothing depends on the name.
///
/// # Errors
/// [`ServerError::Spawn`] when the thread cannot be created.
pub(crate) fn spawn(
    spec: WorkerSpec,
    shared: Arc<Shared>,
    ready: Sender<(usize, Ready)>,
) -> Result<std::thread::JoinHandle<WorkerReport>, ServerError> {
    let cpu = spec.cpu;
    std::thread::Builder::new()
        .name(format!("accept-cpu{cpu}"))
        .spawn(move || run(spec, shared, ready))
        .map_err(|source| ServerError::Spawn { cpu, source })
}

fn run(spec: WorkerSpec, shared: Arc<Shared>, ready: Sender<(usize, Ready)>) -> WorkerReport {
    let WorkerSpec {
        cpu,
        index,
        listener,
        mode,
        engine,
        tls,
        syn_cpu,
    } = spec;
    // Pinned first, then every per-worker allocation (the context here, the engine's ring,
    // tables and buffers in its `run`, the stamp buffers in `Ctx::take_control`) happens on this
    // thread on its CPU: first touch puts the pages on the CPU's NUMA node (docs/engines.md,
    // "Per-worker memory").
    let mut set = CpuSet::new();
    let pinned = set
        .set(cpu)
        .and_then(|()| sched_setaffinity(Pid::from_raw(0), &set));
    let mut ctx = Ctx::new(cpu, index, listener, mode, shared);
    ctx.tls = tls;
    ctx.syn_cpu_sample = syn_cpu;
    // Where the context was made, and below where the engine's set-up ended: both on the pinned
    // CPU, or `alloc_cpu` stays `None`.
    let ctx_cpu = common::numa::pinned_cpu();
    let alloc_cpu = std::cell::Cell::new(None);
    if let Err(errno) = pinned {
        let _ = ready.send((index, Err(ServerError::Pin { cpu, errno })));
    } else {
        let report_ready = |r: Ready| {
            // The engine calls this once its set-up (and every allocation of it) is done.
            alloc_cpu.set(common::numa::pinned_cpu().filter(|&c| Some(c) == ctx_cpu));
            let _ = ready.send((index, r));
        };
        match engine {
            Engine::IoUring => crate::engine::uring::run(&mut ctx, report_ready),
            Engine::Epoll => crate::engine::epoll::run(&mut ctx, report_ready),
        }
    }
    drop(ctx.listener.take());
    let used = ctx.publish(Instant::now());
    WorkerReport {
        cpu,
        accepted: ctx.counts.accepted,
        served: ctx.counts.served,
        bad_requests: ctx.counts.bad_requests,
        errors: ctx.counts.error_names(),
        emfile_backoffs: ctx.counts.emfile_backoffs,
        cpu_run_ns: used.run_ns,
        cpu_user_ns: used.user_ns,
        cpu_sys_ns: used.sys_ns,
        left_in_queue: ctx.counts.left_in_queue,
        tls_accepted: ctx.counts.tls.accepted,
        tls_resumed: ctx.counts.tls.resumed,
        tls_failed: ctx.counts.tls.failed_total(),
        tls_failures: ctx.counts.tls.failures(),
        syn_cpu: syn_cpu.then_some(ctx.counts.syn_cpu),
        alloc_cpu: alloc_cpu.get(),
    }
}
