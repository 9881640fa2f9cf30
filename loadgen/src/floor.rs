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
//! Both sides stop at the deadline; the client counts completed connects. The floor uses only
//! sockets and pinning; comparing its count with the kernel's `Tcp.ActiveOpens` is the caller's
//! (the binary reads the counters around [`run`]).

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

/// Why the floor could not run.
#[derive(Debug, thiserror::Error)]
pub enum FloorError {
    /// A listener could not be set up (socket, SO_REUSEPORT, bind, listen).
    #[error("floor: {what}: {source}")]
    Listener {
        /// Which step, e.g. `bind 127.0.0.1:0`.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A client thread panicked.
    #[error("floor client thread panicked")]
    Panicked,
}

fn listener_step<T>(what: impl FnOnce() -> String, r: std::io::Result<T>) -> Result<T, FloorError> {
    r.map_err(|source| FloorError::Listener {
        what: what(),
        source,
    })
}

/// What the floor measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Floor {
    /// Completed connects per second over the measured time.
    pub per_sec: f64,
    /// Completed connects.
    pub connections: u64,
    /// Measured seconds.
    pub secs: f64,
    /// socket() or connect() failures (should be zero).
    pub failures: u64,
}

/// Runs the blocking pair on `server_cpus` / `load_cpus` against `ip` for `duration`, or until
/// `stop` turns true.
///
/// # Errors
/// [`FloorError`]: a listener cannot be set up, or a client thread panicked.
pub fn run(
    ip: std::net::IpAddr,
    server_cpus: &[usize],
    load_cpus: &[usize],
    duration: Duration,
    stop: &AtomicBool,
) -> Result<Floor, FloorError> {
    let mut addr = SocketAddr::new(ip, 0);
    let mut listeners = Vec::new();
    for _ in server_cpus {
        let s = listener_step(
            || "socket".into(),
            Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP)),
        )?;
        listener_step(|| "SO_REUSEPORT".into(), s.set_reuse_port(true))?;
        listener_step(|| "SO_REUSEADDR".into(), s.set_reuse_address(true))?;
        listener_step(|| format!("bind {addr}"), s.bind(&addr.into()))?;
        listener_step(|| format!("listen on {addr}"), s.listen(4096))?;
        let local = listener_step(|| "listener address".into(), s.local_addr())?;
        addr = local.as_socket().unwrap_or(addr);
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
        let (ok, failed) = r.map_err(|_| FloorError::Panicked)?;
        connections += ok;
        failures += failed;
    }
    let secs = start.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    for s in servers {
        let _ = s.join();
    }
    Ok(Floor {
        per_sec: connections as f64 / secs,
        connections,
        secs,
        failures,
    })
}

/// Pins the calling thread when the CPU allows it; the floor runs unpinned otherwise (the
/// benchmark refused unusable CPUs before).
fn pin(cpu: usize) {
    let _ = crate::worker::pin(cpu);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short floor on loopback completes connects at a plausible rate with no failure, and
    /// ends near its duration.
    #[test]
    fn floor_on_loopback_connects_and_ends_on_time() {
        let stop = AtomicBool::new(false);
        let t0 = Instant::now();
        let f = run(
            std::net::Ipv4Addr::LOCALHOST.into(),
            &[0],
            &[0],
            Duration::from_millis(300),
            &stop,
        )
        .unwrap();
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        assert_eq!(f.failures, 0);
        assert!(f.connections >= 64, "{f:?}");
        assert!(f.secs >= 0.3, "{f:?}");
        let rate = f.connections as f64 / f.secs;
        assert!((f.per_sec - rate).abs() < 1e-6 * rate, "{f:?}");
    }

    #[test]
    fn a_stop_already_set_ends_at_once() {
        let stop = AtomicBool::new(true);
        let t0 = Instant::now();
        let f = run(
            std::net::Ipv4Addr::LOCALHOST.into(),
            &[0],
            &[0],
            Duration::from_secs(30),
            &stop,
        )
        .unwrap();
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        assert_eq!((f.connections, f.failures), (0, 0));
    }
}
