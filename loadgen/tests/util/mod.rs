//! Test helpers: a small accept-loop server on a thread, and a config builder.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use loadgen::{Arrival, CloseMode, LoadConfig, Pattern};

/// What the test server does with each accepted connection.
#[derive(Debug, Clone, Copy)]
pub enum ServerMode {
    /// Close at once.
    Close,
    /// Keep every connection open until the server stops.
    Hold,
    /// Write `n` bytes, then close.
    Greet(usize),
    /// Close each connection this long after accepting it.
    CloseAfter(Duration),
    /// Write these bytes, then stream without end (64 KiB writes from a thread per connection)
    /// until the client goes, the server stops, or [`STREAM_CAP`] passed: a target that sends
    /// faster than a worker reads.
    Stream(&'static [u8]),
}

/// The longest one connection of [`ServerMode::Stream`] streams (a bound on every test that
/// uses it, whatever the client does).
pub const STREAM_CAP: Duration = Duration::from_secs(15);

/// An accept loop on its own thread (std TcpListener, non-blocking accept with short naps).
pub struct TestServer {
    pub addr: SocketAddr,
    pub accepted: Arc<AtomicU64>,
    /// Distinct peer (client source) addresses seen.
    pub peers: Arc<std::sync::Mutex<std::collections::BTreeSet<std::net::IpAddr>>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Binds 127.0.0.1:0 in the calling thread's namespace and starts accepting.
    pub fn start(mode: ServerMode) -> TestServer {
        // A deep accept queue, so a briefly starved accept thread on a loaded CI machine does not
        // make the kernel drop SYNs (which would add 1 s retransmissions to the measurements).
        let sock =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        sock.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .expect("bind test server");
        sock.listen(4096).unwrap();
        let l: TcpListener = sock.into();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let peers = Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
        let (s, a, p) = (stop.clone(), accepted.clone(), peers.clone());
        let handle = std::thread::spawn(move || {
            let mut held: Vec<TcpStream> = Vec::new();
            let mut streams: Vec<JoinHandle<()>> = Vec::new();
            let mut timed: std::collections::VecDeque<(Instant, TcpStream)> = Default::default();
            while !s.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((mut c, peer)) => {
                        a.fetch_add(1, Ordering::Relaxed);
                        p.lock().unwrap().insert(peer.ip());
                        match mode {
                            ServerMode::Close => drop(c),
                            ServerMode::Hold => held.push(c),
                            ServerMode::Greet(n) => {
                                let _ = c.write_all(&vec![b'g'; n]);
                            }
                            ServerMode::CloseAfter(d) => timed.push_back((Instant::now() + d, c)),
                            ServerMode::Stream(head) => {
                                let s = s.clone();
                                streams.push(std::thread::spawn(move || stream(c, head, &s)));
                            }
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_micros(200))
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
                while timed.front().is_some_and(|(t, _)| *t <= Instant::now()) {
                    timed.pop_front();
                }
            }
            for h in streams {
                let _ = h.join();
            }
        });
        TestServer {
            addr,
            accepted,
            peers,
            stop,
            handle: Some(handle),
        }
    }
}

/// Writes `head`, then 64 KiB at a time to `c` until a write fails, `stop` is set, or
/// [`STREAM_CAP`] passed.
fn stream(mut c: TcpStream, head: &[u8], stop: &AtomicBool) {
    let until = Instant::now() + STREAM_CAP;
    let _ = c.set_write_timeout(Some(Duration::from_millis(100)));
    if c.write_all(head).is_err() {
        return;
    }
    let chunk = vec![b's'; 64 * 1024];
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        match c.write(&chunk) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// An open-loop config against `target` on the first allowed CPU.
pub fn open(target: SocketAddr, rate_per_sec: f64, duration: Duration) -> LoadConfig {
    LoadConfig {
        targets: vec![target],
        pattern: Pattern::Open {
            rate_per_sec,
            arrival: Arrival::Uniform,
        },
        duration,
        warmup: Duration::ZERO,
        cpus: vec![testkit::allowed_cpus()[0]],
        workers: 0,
        port_slices: loadgen::PortSlices::On,
        close: CloseMode::Rst,
        sources: vec![],
        connect_timeout: Duration::from_secs(3),
        expect_bytes: None,
        max_in_flight: 1000,
        late_threshold: Duration::from_millis(1),
        http: None,
        tls: None,
        // The epoll engine's tests; the io_uring ones say so (`on_uring`).
        engine: loadgen::LoadEngine::Epoll,
        pacing: loadgen::Pacing::default(),
        accept_stamps: None,
    }
}

/// Runs a config without a stop and with the timeline discarded.
pub fn run(cfg: &LoadConfig) -> loadgen::LoadReport {
    let stop = AtomicBool::new(false);
    loadgen::run(cfg, &stop, &mut |_| {}).expect("load run")
}

/// A port on 127.0.0.1 where nothing listens (bound, then closed).
/// A listener on 127.0.0.1:0 with `backlog` that never accepts (keep the socket alive): its
/// accept queue fills, then the kernel drops SYNs (TcpExt.ListenOverflows).
pub fn deaf_listener(backlog: i32) -> (socket2::Socket, SocketAddr) {
    let l = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    l.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    l.listen(backlog).unwrap();
    let addr = l.local_addr().unwrap().as_socket().unwrap();
    (l, addr)
}

pub fn closed_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// `cfg` on the io_uring engine (always `Some`; the `Option` keeps the callers' shape).
///
/// # Panics
/// When this kernel cannot run the engine (io_uring disabled, or older than 5.19): a test
/// never skips itself.
pub fn on_uring(mut cfg: LoadConfig) -> Option<LoadConfig> {
    if let Err(why) = loadgen::engine::probe_io_uring() {
        panic!("the io_uring connect engine cannot run here: {why} (this machine kind has io_uring with IORING_OP_SOCKET, Linux >= 5.19; check kernel.io_uring_disabled)");
    }
    cfg.engine = loadgen::LoadEngine::IoUring;
    Some(cfg)
}

/// Client-side TIME_WAIT sockets to `port` in the calling thread's network namespace
/// (`ss -tanH state time-wait dport = :PORT`).
pub fn time_wait_sockets(port: u16) -> usize {
    let o = std::process::Command::new(testkit::require_tool("ss", "iproute2"))
        .args([
            "-tanH",
            "state",
            "time-wait",
            "dport",
            "=",
            &format!(":{port}"),
        ])
        .output()
        .expect("run ss");
    assert!(o.status.success(), "ss failed");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

/// Client-side sockets to `port` in any state (`ss -tanH dport = :PORT`) in the calling
/// thread's network namespace, as (local address, local port).
pub fn client_sockets(port: u16) -> Vec<(std::net::IpAddr, u16)> {
    let o = std::process::Command::new(testkit::require_tool("ss", "iproute2"))
        .args(["-tanH", "dport", "=", &format!(":{port}")])
        .output()
        .expect("run ss");
    assert!(o.status.success(), "ss failed");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            // State Recv-Q Send-Q Local:Port Peer:Port
            let local = l.split_whitespace().nth(3)?;
            let a: SocketAddr = local.parse().ok()?;
            Some((a.ip(), a.port()))
        })
        .collect()
}
