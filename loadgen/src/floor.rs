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
//! The shape follows the CPU sets ([`Shape`]): with disjoint sets (`--server-cpus 0
//! --load-cpus 1`) it is the single-core pair; when they overlap (`--server-cpus 0-1
//! --load-cpus 0-1`) it is the whole-machine floor, one blocking client and one server thread on
//! every CPU, the shape connstorm's own workers have there.
//!
//! A warm-up runs first (connects made then are not counted); the measured window follows. Both
//! sides stop at the deadline; the client counts completed connects, and each thread reads its
//! own CPU time (`CLOCK_THREAD_CPUTIME_ID`) around the measured window, so the floor's CPU per
//! connection per side sits beside connstorm's. The floor uses only sockets and pinning;
//! comparing its count with the kernel's `Tcp.ActiveOpens` is the caller's (the binary reads the
//! counters around [`run`]).

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::threadcpu::ThreadCpu;
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

/// How the floor was laid out on the CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// Server and client threads on disjoint CPU sets (e.g. server CPU 0, client CPU 1).
    Split,
    /// The CPU sets overlap: one client and one server thread on each shared CPU, the
    /// whole-machine floor.
    WholeMachine,
}

impl Shape {
    /// The shape of a floor on these CPU sets: [`Shape::WholeMachine`] when any CPU is in both.
    pub fn of(server_cpus: &[usize], load_cpus: &[usize]) -> Shape {
        if server_cpus.iter().any(|c| load_cpus.contains(c)) {
            Shape::WholeMachine
        } else {
            Shape::Split
        }
    }

    /// `split` or `whole-machine`.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Split => "split",
            Shape::WholeMachine => "whole-machine",
        }
    }
}

/// What the floor measured (the measured window only, warm-up excluded).
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
    /// The layout: split or whole machine.
    pub shape: Shape,
    /// Client threads (one per load CPU).
    pub clients: usize,
    /// Server threads (one per server CPU).
    pub servers: usize,
    /// On-CPU time of the client threads in the measured window, ns (sum).
    pub client_run_ns: u64,
    /// On-CPU time of the server threads in the measured window, ns (sum).
    pub server_run_ns: u64,
}

impl Floor {
    /// Client CPU per completed connect, µs; `None` without a connect.
    pub fn client_us_per_conn(&self) -> Option<f64> {
        per_conn_us(self.client_run_ns, self.connections)
    }

    /// Server CPU per completed connect, µs; `None` without a connect.
    pub fn server_us_per_conn(&self) -> Option<f64> {
        per_conn_us(self.server_run_ns, self.connections)
    }
}

fn per_conn_us(ns: u64, n: u64) -> Option<f64> {
    (n > 0).then(|| ns as f64 / 1e3 / n as f64)
}

/// Runs the blocking pair on `server_cpus` / `load_cpus` against `ip`: `warmup` uncounted, then
/// `duration` measured, or until `stop` turns true. Shape: [`Shape::of`] the two sets.
///
/// # Errors
/// [`FloorError`]: a listener cannot be set up, or a client thread panicked.
pub fn run(
    ip: std::net::IpAddr,
    server_cpus: &[usize],
    load_cpus: &[usize],
    warmup: Duration,
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
    // Window state the server threads watch: 0 warm-up, 1 measuring, 2 done.
    let window = Arc::new(AtomicU64::new(0));
    let mut servers = Vec::new();
    for (l, &cpu) in listeners.into_iter().zip(server_cpus) {
        let window = Arc::clone(&window);
        servers.push(std::thread::spawn(move || serve(l, cpu, &window)));
    }
    let t0 = Instant::now();
    let start = t0 + warmup;
    let deadline = start + duration;
    let results: Vec<std::thread::Result<(u64, u64, u64)>> = std::thread::scope(|scope| {
        let clients: Vec<_> = load_cpus
            .iter()
            .map(|&cpu| scope.spawn(move || connect_loop(addr, cpu, start, deadline, stop)))
            .collect();
        // The servers' window opens with the clients' (they read the flag between accepts).
        while Instant::now() < start && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(1).min(start - Instant::now()));
        }
        window.store(1, Ordering::Relaxed);
        clients.into_iter().map(|c| c.join()).collect()
    });
    let secs = Instant::now()
        .saturating_duration_since(start)
        .as_secs_f64();
    window.store(2, Ordering::Relaxed);
    let mut server_run_ns = 0;
    for s in servers {
        server_run_ns += s.join().unwrap_or(0);
    }
    let (mut connections, mut failures, mut client_run_ns) = (0, 0, 0);
    for r in results {
        let (ok, failed, run_ns) = r.map_err(|_| FloorError::Panicked)?;
        connections += ok;
        failures += failed;
        client_run_ns += run_ns;
    }
    Ok(Floor {
        per_sec: if secs > 0.0 {
            connections as f64 / secs
        } else {
            0.0
        },
        connections,
        secs,
        failures,
        shape: Shape::of(server_cpus, load_cpus),
        clients: load_cpus.len(),
        servers: server_cpus.len(),
        client_run_ns,
        server_run_ns,
    })
}

/// One server thread: blocking accept + close until the window is done; returns its CPU time in
/// the measured window (ns).
fn serve(l: TcpListener, cpu: usize, window: &AtomicU64) -> u64 {
    pin(cpu);
    // A short receive timeout lets the loop see the window change when no client connects.
    let s = Socket::from(l);
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    let mut began: Option<ThreadCpu> = None;
    loop {
        match window.load(Ordering::Relaxed) {
            0 => {}
            1 => {
                began.get_or_insert_with(ThreadCpu::now);
            }
            _ => break,
        }
        if let Ok((c, _)) = s.accept() {
            drop(c);
        }
    }
    began.map_or(0, |b| ThreadCpu::now().since(&b).run_ns)
}

/// One client thread: socket, blocking connect, RST close, counted from `start` to `deadline`.
/// Returns (connects, failures, CPU ns in the measured window).
fn connect_loop(
    addr: SocketAddr,
    cpu: usize,
    start: Instant,
    deadline: Instant,
    stop: &AtomicBool,
) -> (u64, u64, u64) {
    pin(cpu);
    let sa: socket2::SockAddr = addr.into();
    let one = || -> bool {
        let Ok(s) = Socket::new(Domain::for_address(addr), Type::STREAM, None) else {
            return false;
        };
        let ok = s.connect(&sa).is_ok();
        let _ = s.set_linger(Some(Duration::ZERO));
        ok
    };
    while Instant::now() < start && !stop.load(Ordering::Relaxed) {
        for _ in 0..16 {
            one();
        }
    }
    let began = ThreadCpu::now();
    let (mut ok, mut failed) = (0u64, 0u64);
    while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
        for _ in 0..64 {
            if one() {
                ok += 1;
            } else {
                failed += 1;
            }
        }
    }
    (ok, failed, ThreadCpu::now().since(&began).run_ns)
}

/// Pins the calling thread when the CPU allows it; the floor runs unpinned otherwise (the
/// benchmark refused unusable CPUs before).
fn pin(cpu: usize) {
    let _ = crate::affinity::pin(cpu);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short floor on loopback completes connects at a plausible rate with no failure, ends
    /// near warm-up + duration, and charges CPU time to both sides.
    #[test]
    fn floor_on_loopback_connects_and_ends_on_time() {
        let stop = AtomicBool::new(false);
        let t0 = Instant::now();
        let f = run(
            std::net::Ipv4Addr::LOCALHOST.into(),
            &[0],
            &[0],
            Duration::from_millis(100),
            Duration::from_millis(300),
            &stop,
        )
        .unwrap();
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        assert!(
            t0.elapsed() >= Duration::from_millis(400),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(f.failures, 0);
        assert!(f.connections >= 64, "{f:?}");
        assert!(f.secs >= 0.3 && f.secs < 4.0, "{f:?}");
        let rate = f.connections as f64 / f.secs;
        assert!((f.per_sec - rate).abs() < 1e-6 * rate, "{f:?}");
        assert_eq!((f.shape, f.clients, f.servers), (Shape::WholeMachine, 1, 1));
        assert!(f.client_run_ns > 0 && f.server_run_ns > 0, "{f:?}");
        // A connect costs the client at least its syscalls: more than 0.1 µs, less than the
        // whole window per connect.
        let c = f.client_us_per_conn().unwrap();
        assert!(c > 0.1 && c < f.secs * 1e6, "{c}");
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
            Duration::from_secs(30),
            &stop,
        )
        .unwrap();
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        assert_eq!((f.connections, f.failures), (0, 0));
        assert_eq!(f.client_us_per_conn(), None);
    }

    /// Overlapping sets are the whole-machine floor: one client and one server per CPU.
    #[test]
    fn overlapping_cpu_sets_are_the_whole_machine_shape() {
        assert_eq!(Shape::of(&[0], &[1]), Shape::Split);
        assert_eq!(Shape::of(&[0, 1], &[0, 1]), Shape::WholeMachine);
        assert_eq!(Shape::of(&[0], &[0, 1]), Shape::WholeMachine);
        let stop = AtomicBool::new(false);
        let f = run(
            std::net::Ipv4Addr::LOCALHOST.into(),
            &[0, 1],
            &[0, 1],
            Duration::ZERO,
            Duration::from_millis(200),
            &stop,
        )
        .unwrap();
        assert_eq!((f.shape, f.clients, f.servers), (Shape::WholeMachine, 2, 2));
        assert!(f.connections > 0 && f.failures == 0, "{f:?}");
    }
}
