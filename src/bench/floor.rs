//! The kernel floor (`connstorm bench --baseline`): the simplest possible blocking pair, run on the
//! same CPUs as the benchmark, so connstorm's peak can be stated as a ratio of what the kernel does
//! with no tool in the way.
//!
//! - server side: one thread per server CPU, pinned, each with its own `SO_REUSEPORT` listener,
//!   looping on blocking `accept(2)` + `close(2)`;
//! - client side: one thread per load CPU, pinned, looping on `socket(2)`, blocking `connect(2)`,
//!   `close(2)` with `SO_LINGER {on, 0}` (RST close, no TIME_WAIT) — the same loop as the C pair
//!   the project's performance target was measured with.
//!
//! Both sides stop at the deadline; the client counts completed connects.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use socket2::{Domain, Protocol, Socket, Type};

/// What the floor measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Floor {
    /// Completed connects per second over the measured time.
    pub per_sec: f64,
    /// Completed connects.
    pub connections: u64,
    /// Measured seconds.
    pub secs: f64,
    /// connect() failures (should be zero).
    pub failures: u64,
    /// Delta of the kernel's Tcp.ActiveOpens over the run (None if unreadable); at least
    /// `connections + failures` minus pre-SYN failures, more only with other traffic.
    pub kernel_active_opens: Option<i64>,
}

/// Runs the blocking pair on `server_cpus` / `load_cpus` against `ip` for `duration`, or until
/// `stop` turns true.
///
/// # Errors
/// Listener or thread setup failures.
pub fn run(
    ip: std::net::IpAddr,
    server_cpus: &[usize],
    load_cpus: &[usize],
    duration: Duration,
    stop: &AtomicBool,
) -> anyhow::Result<Floor> {
    let mut addr = SocketAddr::new(ip, 0);
    let mut listeners = Vec::new();
    for _ in server_cpus {
        let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        s.set_reuse_port(true)?;
        s.set_reuse_address(true)?;
        s.bind(&addr.into())
            .with_context(|| format!("floor: bind {addr}"))?;
        s.listen(4096)?;
        addr = s
            .local_addr()?
            .as_socket()
            .context("floor: listener address")?;
        listeners.push(TcpListener::from(s));
    }
    let done = Arc::new(AtomicBool::new(false));
    let mut servers = Vec::new();
    for (l, &cpu) in listeners.into_iter().zip(server_cpus) {
        let done = Arc::clone(&done);
        servers.push(std::thread::spawn(move || {
            pin(cpu);
            // A short receive timeout lets the loop see `done` when no client connects any more.
            let s = Socket::from(l);
            let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
            while !done.load(Ordering::Relaxed) {
                if let Ok((c, _)) = s.accept() {
                    drop(c);
                }
            }
        }));
    }
    let counters_before = tuning::counters::Snapshot::read_current().ok();
    let start = Instant::now();
    let deadline = start + duration;
    let results: Vec<std::thread::Result<(u64, u64)>> = std::thread::scope(|scope| {
        let clients: Vec<_> = load_cpus
            .iter()
            .map(|&cpu| {
                scope.spawn(move || {
                    pin(cpu);
                    let (mut ok, mut failed) = (0u64, 0u64);
                    let sa: socket2::SockAddr = addr.into();
                    while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
                        for _ in 0..64 {
                            let Ok(s) = Socket::new(Domain::for_address(addr), Type::STREAM, None)
                            else {
                                failed += 1;
                                continue;
                            };
                            if s.connect(&sa).is_ok() {
                                ok += 1;
                            } else {
                                failed += 1;
                            }
                            let _ = s.set_linger(Some(Duration::ZERO));
                        }
                    }
                    (ok, failed)
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join()).collect()
    });
    let mut connections = 0;
    let mut failures = 0;
    for r in results {
        let (ok, failed) = r.map_err(|_| anyhow::anyhow!("floor client thread panicked"))?;
        connections += ok;
        failures += failed;
    }
    let secs = start.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    for s in servers {
        let _ = s.join();
    }
    // The kernel's count of connects in the same time (the host namespace: other traffic may add).
    let kernel_active_opens = match (counters_before, tuning::counters::Snapshot::read_current()) {
        (Some(b), Ok(a)) => a.delta(&b).get("Tcp.ActiveOpens"),
        _ => None,
    };
    Ok(Floor {
        per_sec: connections as f64 / secs,
        connections,
        secs,
        failures,
        kernel_active_opens,
    })
}

fn pin(cpu: usize) {
    let mut set = nix::sched::CpuSet::new();
    if set.set(cpu).is_ok() {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
    }
}
