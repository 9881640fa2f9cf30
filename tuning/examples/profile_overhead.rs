//! What a kernel profile costs the CPU it samples: a bounded blocking connect loop on loopback,
//! pinned to one CPU in a private network namespace, run with the profile off and on in
//! interleaved pairs (the order alternates pair to pair), at several sampling frequencies.
//!
//! Prints per frequency the median over pairs of on/off ratios of conn/s and of the loop
//! thread's CPU µs per connect (CLOCK_THREAD_CPUTIME_ID, which includes the sampling interrupts
//! when the kernel has no CONFIG_IRQ_TIME_ACCOUNTING), plus samples taken and lost.
//!
//! Run as root (network namespace, CPU-wide perf events):
//! `cargo build --release -p connstorm-tuning --example profile_overhead &&
//! chrt -f 10 target/release/examples/profile_overhead [PAIRS] [SECONDS] [MODE,MODE,...]`
//! (defaults: 8 pairs, 1 s per run, modes 499,997,1999,3989). A mode is a frequency in Hz for
//! `tuning::profile`, `perf:HZ` for `perf record -a -C CPU -e cpu-clock -g -F HZ` as the
//! reference, or `0` for off vs off (the noise floor of the pairing). The loop runs on the last
//! CPU this process may use, the collector on the first. On a host shared with other work, run
//! it SCHED_FIFO (`chrt -f 10`) as above: otherwise the loop's share of its CPU (printed) moves
//! with the other tasks by ±20% and hides a 3% effect.

use std::time::{Duration, Instant};

use tuning::profile::{ProfileConfig, Profiler, SideCpus};

/// One run's figures.
#[derive(Debug, Clone, Copy)]
struct Run {
    connects: u64,
    wall_ns: u64,
    cpu_ns: u64,
    samples: u64,
    lost: u64,
    /// Busy and steal time of the loop's CPU (all tasks), from /proc/stat.
    cpu_busy_ns: u64,
    steal_ns: u64,
    /// Voluntary and involuntary context switches of the loop thread.
    switches: (u64, u64),
}

/// (voluntary, involuntary) context switches of the calling thread (proc(5) status).
fn switches() -> (u64, u64) {
    let t = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    let get = |k: &str| {
        t.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (
        get("voluntary_ctxt_switches:"),
        get("nonvoluntary_ctxt_switches:"),
    )
}

impl Run {
    fn rate_per_sec(&self) -> f64 {
        self.connects as f64 * 1e9 / self.wall_ns as f64
    }
    fn cpu_us_per_connect(&self) -> f64 {
        self.cpu_ns as f64 / 1e3 / self.connects as f64
    }
}

fn thread_cpu_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).unwrap();
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// How a run is profiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    /// `tuning::profile` at this frequency.
    Profile(u64),
    /// `perf record -C CPU -e cpu-clock -F FREQ -g` (the reference), started before and
    /// stopped (SIGINT) after the loop.
    Perf(u64),
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mode::Off => write!(f, "off"),
            Mode::Profile(hz) => write!(f, "{hz}"),
            Mode::Perf(hz) => write!(f, "perf:{hz}"),
        }
    }
}

/// The connect loop (bounded by `limit` and 2M connections), profiled as `mode` says.
fn run(cpu: usize, limit: Duration, mode: Mode) -> Run {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let perf = match mode {
        Mode::Perf(hz) => {
            let child = std::process::Command::new("perf")
                .args([
                    "record",
                    "-q",
                    "-e",
                    "cpu-clock",
                    "-g",
                    "-o",
                    "/tmp/profile_overhead.perf.data",
                ])
                .args(["-C", &cpu.to_string(), "-F", &hz.to_string()])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("run perf (apt-get install linux-perf)");
            // perf opens its events within a few ms; give it time so the loop is covered.
            std::thread::sleep(Duration::from_millis(300));
            Some(child)
        }
        _ => None,
    };
    let freq = match mode {
        Mode::Profile(hz) => Some(hz),
        _ => None,
    };
    let profiler = freq.map(|f| {
        let mut c = ProfileConfig::new(vec![SideCpus {
            side: "load".into(),
            cpus: vec![cpu],
        }]);
        c.frequency_hz = f;
        Profiler::start(&c).unwrap_or_else(|e| panic!("profile refused: {e}"))
    });
    let stat0 = tuning::host::read_cpu_times();
    let sw0 = switches();
    let cpu0 = thread_cpu_ns();
    let started = Instant::now();
    let mut n = 0u64;
    while n < 2_000_000 && started.elapsed() < limit {
        let c = std::net::TcpStream::connect(addr).unwrap();
        let (s, _) = listener.accept().unwrap();
        socket2::SockRef::from(&c)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        drop(c);
        drop(s);
        n += 1;
    }
    let wall_ns = started.elapsed().as_nanos() as u64;
    let cpu_ns = thread_cpu_ns() - cpu0;
    let sw1 = switches();
    let t = tuning::host::cpu_time_delta(&stat0, &tuning::host::read_cpu_times(), &[cpu]);
    let (samples, lost) = match profiler {
        Some(p) => {
            let p = p.stop().unwrap();
            (p.sides[0].samples, p.sides[0].lost_samples)
        }
        None => (0, 0),
    };
    if let Some(mut child) = perf {
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        child.wait().unwrap();
    }
    Run {
        connects: n,
        wall_ns,
        cpu_ns,
        samples,
        lost,
        cpu_busy_ns: t.busy_ns,
        steal_ns: t.steal_ns,
        switches: (sw1.0 - sw0.0, sw1.1 - sw0.1),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pairs: usize = args.first().map_or(8, |a| a.parse().expect("PAIRS"));
    let secs: f64 = args.get(1).map_or(1.0, |a| a.parse().expect("SECONDS"));
    let freqs: Vec<Mode> = args.get(2).map_or(
        vec![
            Mode::Profile(499),
            Mode::Profile(997),
            Mode::Profile(1999),
            Mode::Profile(3989),
        ],
        |a| {
            a.split(',')
                .map(|f| match f.strip_prefix("perf:") {
                    Some(hz) => Mode::Perf(hz.parse().expect("perf:FREQ")),
                    // 0: both runs off, the noise floor of the pairing.
                    None if f == "0" => Mode::Off,
                    None => Mode::Profile(f.parse().expect("FREQ")),
                })
                .collect()
        },
    );
    let cpus = testkit::allowed_cpus();
    let cpu = *cpus.last().unwrap();
    let limit = Duration::from_secs_f64(secs);
    println!(
        "profile overhead: blocking loopback connect+accept loop on CPU {cpu}, {secs} s per run, \
         {pairs} interleaved off/on pairs per frequency"
    );
    let results = testkit::NetNs::run(move |_| {
        let mut mask = nix::sched::CpuSet::new();
        mask.set(cpu).unwrap();
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &mask).unwrap();
        // Warm-up: socket caches, page faults.
        run(cpu, Duration::from_millis(300), Mode::Off);
        let mut results: Vec<(Mode, Vec<(Run, Run)>)> =
            freqs.iter().map(|&f| (f, Vec::new())).collect();
        for pair in 0..pairs {
            for (f, v) in &mut results {
                let (off, on) = if pair % 2 == 0 {
                    let off = run(cpu, limit, Mode::Off);
                    (off, run(cpu, limit, *f))
                } else {
                    let on = run(cpu, limit, *f);
                    (run(cpu, limit, Mode::Off), on)
                };
                v.push((off, on));
            }
        }
        results
    });
    println!(
        "{:>8}  {:>12}  {:>12}  {:>14}  {:>14}  {:>10}  {:>6}  conn/s ratio per pair",
        "mode",
        "off_conn/s",
        "on/off_rate",
        "off_cpu_us/conn",
        "on/off_cpu_us",
        "samples/s",
        "lost"
    );
    for (f, v) in &results {
        let rate: Vec<f64> = v
            .iter()
            .map(|(a, b)| b.rate_per_sec() / a.rate_per_sec())
            .collect();
        let cpu_ratio: Vec<f64> = v
            .iter()
            .map(|(a, b)| b.cpu_us_per_connect() / a.cpu_us_per_connect())
            .collect();
        let off_rate = median(v.iter().map(|(a, _)| a.rate_per_sec()).collect());
        let off_cpu = median(v.iter().map(|(a, _)| a.cpu_us_per_connect()).collect());
        let samples_per_sec = median(
            v.iter()
                .map(|(_, b)| b.samples as f64 * 1e9 / b.wall_ns as f64)
                .collect(),
        );
        let lost: u64 = v.iter().map(|(_, b)| b.lost).sum();
        let share = |r: &Run| r.cpu_ns as f64 / r.wall_ns as f64;
        let pct = |x: u64, r: &Run| x as f64 * 100.0 / r.wall_ns as f64;
        println!(
            "  {f}: loop's share of its CPU off {:.1}% on {:.1}%; CPU busy off {:.0}% on {:.0}%; \
             steal off {:.1}% on {:.1}%",
            median(v.iter().map(|(a, _)| share(a) * 100.0).collect()),
            median(v.iter().map(|(_, b)| share(b) * 100.0).collect()),
            median(v.iter().map(|(a, _)| pct(a.cpu_busy_ns, a)).collect()),
            median(v.iter().map(|(_, b)| pct(b.cpu_busy_ns, b)).collect()),
            median(v.iter().map(|(a, _)| pct(a.steal_ns, a)).collect()),
            median(v.iter().map(|(_, b)| pct(b.steal_ns, b)).collect()),
        );
        println!(
            "  {f}: loop thread context switches per s, voluntary off {:.0} on {:.0}, \
             involuntary off {:.0} on {:.0}",
            median(
                v.iter()
                    .map(|(a, _)| a.switches.0 as f64 * 1e9 / a.wall_ns as f64)
                    .collect()
            ),
            median(
                v.iter()
                    .map(|(_, b)| b.switches.0 as f64 * 1e9 / b.wall_ns as f64)
                    .collect()
            ),
            median(
                v.iter()
                    .map(|(a, _)| a.switches.1 as f64 * 1e9 / a.wall_ns as f64)
                    .collect()
            ),
            median(
                v.iter()
                    .map(|(_, b)| b.switches.1 as f64 * 1e9 / b.wall_ns as f64)
                    .collect()
            ),
        );
        let each: Vec<String> = rate.iter().map(|r| format!("{r:.3}")).collect();
        println!(
            "{:>8}  {off_rate:>12.0}  {:>12.4}  {off_cpu:>14.2}  {:>14.4}  {samples_per_sec:>10.0}  \
             {lost:>6}  {}",
            f.to_string(),
            median(rate.clone()),
            median(cpu_ratio),
            each.join(" ")
        );
    }
}
