//! Profiles a blocking loopback connect + accept loop (one CPU, a private network namespace)
//! and prints the profile's text, then the top 30 functions by self share, for comparing with
//! `perf record -a -C CPU -e cpu-clock -g` + `perf report --no-children --sort sym` run at the
//! same time.
//!
//! Run as root: `cargo run --release -p connstorm-tuning --example profile_connect_loop --
//! [SECONDS] [FREQ_HZ]` (defaults 4 s, the default frequency). The loop runs on the last CPU this
//! process may use.

use std::time::{Duration, Instant};

use tuning::profile::{render_text, ProfileConfig, Profiler, SideCpus, DEFAULT_FREQUENCY_HZ};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let secs: f64 = args.first().map_or(4.0, |a| a.parse().expect("SECONDS"));
    let freq: u64 = args
        .get(1)
        .map_or(DEFAULT_FREQUENCY_HZ, |a| a.parse().expect("FREQ_HZ"));
    let cpu = *testkit::allowed_cpus().last().unwrap();
    let mut config = ProfileConfig::new(vec![SideCpus {
        side: "load".into(),
        cpus: vec![cpu],
    }]);
    config.frequency_hz = freq;
    let limit = Duration::from_secs_f64(secs);
    let (connects, profile) = testkit::NetNs::run(move |_| {
        let mut mask = nix::sched::CpuSet::new();
        mask.set(cpu).unwrap();
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &mask).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let profiler = Profiler::start(&config).unwrap_or_else(|e| panic!("{e}"));
        let started = Instant::now();
        let mut n = 0u64;
        while n < 10_000_000 && started.elapsed() < limit {
            let c = std::net::TcpStream::connect(addr).unwrap();
            let (s, _) = listener.accept().unwrap();
            socket2::SockRef::from(&c)
                .set_linger(Some(Duration::ZERO))
                .unwrap();
            drop(c);
            drop(s);
            n += 1;
        }
        (n, profiler.stop().unwrap())
    });
    println!("{connects} connects on CPU {cpu} in {secs} s\n");
    print!("{}", render_text(&profile));
    println!("\ntop 30 by self share (of busy samples):");
    for f in profile.sides[0].functions.iter().take(30) {
        println!("{:>6.2}%  {}", f.self_share * 100.0, f.name);
    }
    println!("\nuser functions kept, by inclusive share:");
    for f in profile.sides[0]
        .functions
        .iter()
        .filter(|f| f.space == tuning::profile::Space::User)
    {
        println!("{:>6.2}%  {}", f.inclusive_share * 100.0, f.name);
    }
}
