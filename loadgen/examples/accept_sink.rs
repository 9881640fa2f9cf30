//! A trivial accept loop for measuring the load generator by hand: accepts on ADDR (default
//! 127.0.0.1:9000) with a 4096 backlog, pinned to CPU (default 0), and closes every connection at
//! once. Runs until killed or for SECS seconds (default 60).
//!
//! `cargo run --release -p connstorm-loadgen --example accept_sink -- 127.0.0.1:9000 0 60`

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = args
        .next()
        .unwrap_or_else(|| "127.0.0.1:9000".into())
        .parse()
        .expect("ADDR");
    let cpu: usize = args.next().map(|s| s.parse().expect("CPU")).unwrap_or(0);
    let secs: u64 = args.next().map(|s| s.parse().expect("SECS")).unwrap_or(60);
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).expect("cpu");
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).expect("pin");
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(4096)?;
    s.set_read_timeout(Some(Duration::from_millis(200)))?;
    let end = Instant::now() + Duration::from_secs(secs);
    let mut n = 0u64;
    while Instant::now() < end {
        if s.accept().is_ok() {
            n += 1;
        }
    }
    eprintln!("accept_sink: accepted {n}");
    Ok(())
}
