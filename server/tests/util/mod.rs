//! Helpers for the server integration tests: engines to run, configs, test clients.

use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use server::{EngineChoice, Mode, Server, ServerConfig, Steer};
use socket2::{Domain, SockAddr, Socket, Type};

/// The engines to run a test with: epoll always, io_uring when it works here (else the reason is
/// printed, as io-uring-test's `require!` does).
pub fn engines() -> Vec<EngineChoice> {
    let mut v = vec![EngineChoice::Epoll];
    match server::probe::io_uring() {
        Ok(()) => v.push(EngineChoice::IoUring),
        Err(why) => eprintln!("skipping the io_uring variant: {why}"),
    }
    v
}

/// A loopback config on port 0.
pub fn config(engine: EngineChoice, cpus: Vec<usize>, mode: Mode) -> ServerConfig {
    ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        cpus,
        workers: 0,
        engine,
        backlog: 4096,
        mode,
        steer: Steer::None,
        tls: None,
    }
}

/// The first `n` CPUs this process may use; panics (never skips) when there are fewer.
pub fn cpus(n: usize) -> Vec<usize> {
    let all = testkit::allowed_cpus();
    assert!(
        all.len() >= n,
        "this test needs {n} usable CPUs, the process has {all:?}"
    );
    all[..n].to_vec()
}

/// Connects from `127.0.0.<src>` (many sources spread the reuseport hash).
pub fn connect_from(src: u8, to: SocketAddr) -> io::Result<TcpStream> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.bind(&SockAddr::from(SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, src)),
        0,
    )))?;
    s.connect_timeout(&SockAddr::from(to), Duration::from_secs(3))?;
    Ok(s.into())
}

/// Reads to EOF with a timeout; returns the bytes or the error (e.g. ConnectionReset).
pub fn read_all(mut s: &TcpStream) -> io::Result<Vec<u8>> {
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    Ok(buf)
}

/// Waits (bounded by 10 s) until the server's live total reaches `n`; returns the last total.
pub fn wait_accepted(server: &Server, n: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = server.stats().accepted();
        if got >= n || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One non-blocking connection attempt from `127.0.0.<src>` that is reset at once (SO_LINGER 0):
/// the handshake completes inside connect(2) on loopback when the accept queue has room, the
/// server's child is left in its accept queue, and the client keeps no TIME_WAIT. Errors (a full
/// accept queue drops the SYN; the listener is gone) are ignored: the kernel's counters say what
/// happened.
pub fn connect_and_reset(src: u8, to: SocketAddr) {
    let Ok(s) = Socket::new(Domain::IPV4, Type::STREAM.nonblocking(), None) else {
        return;
    };
    let _ = s.set_linger(Some(Duration::ZERO));
    let from = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, src)), 0);
    if s.bind(&SockAddr::from(from)).is_ok() {
        let _ = s.connect(&SockAddr::from(to));
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin(cpu: usize) {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).unwrap();
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).unwrap();
}
