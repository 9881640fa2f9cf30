//! `bench`'s accept-queue wait: what the harness asks of both sides for a phase, the
//! accept-queue length it samples meanwhile, and the join of the two sides' stamps into the
//! phase's [`AcceptQueue`] and its histogram (`common::acceptwait` holds the shared keys and
//! stamps).
//!
//! - The server stamps each accept ([`server::Server::start_stamping`]), the load generator
//!   each handshake it saw complete ([`loadgen::AcceptStamps`]), each into its own buffer
//!   allocated before the phase: nothing shared is written on either hot path.
//! - [`DepthSampler`]: a real-time thread of its own reads the listeners' accept-queue length
//!   every [`DEPTH_EVERY`] by sock_diag (`tuning::host::ListenQueue`, opened in the server's
//!   namespace: `idiag_rqueue` of each LISTEN socket = its `sk_ack_backlog`, summed over the
//!   SO_REUSEPORT group), a dump of the listening hash only. Where sock_diag is missing it
//!   falls back to `/proc/thread-self/net/tcp{,6}` (rx_queue of a LISTEN line, `get_tcp4_sock`,
//!   net/ipv4/tcp_ipv4.c), which walks the host's whole established hash on every read (1.9 ms
//!   median on the 2-vCPU VM: at 5 ms intervals it took 40% of a CPU and missed samples).
//! - [`finish`]: the join (`common::acceptwait::join`, measured window only), the histogram,
//!   and Little's law beside the sampled length.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use common::acceptwait::{join, Stamps};
use results::record::AcceptQueue;

/// Stamps one buffer holds at most (16 bytes each: 32 MiB reserved, committed as written): per
/// server worker, and over all load workers. An open-loop phase that would start more stamps
/// 1 connection in N ([`plan`]); a closed-loop phase counts what does not fit as lost.
pub const MAX_STAMPS: usize = 1 << 21;

/// How often the accept-queue length is sampled.
pub const DEPTH_EVERY: Duration = Duration::from_millis(5);

/// What both sides keep for a phase: `(every, per load worker, per server worker)`: `every` is
/// 1 unless the phase's planned connections (`planned`, open loop; `None` in closed loop) would
/// not fit [`MAX_STAMPS`].
pub fn plan(planned: Option<f64>, load_workers: usize) -> (u32, usize, usize) {
    let every = planned.map_or(1, |n| (n / MAX_STAMPS as f64).ceil().max(1.0) as u32);
    let per_load = MAX_STAMPS / load_workers.max(1) + 1024;
    (every, per_load, MAX_STAMPS)
}

/// One sample: when (CLOCK_MONOTONIC ns) and the summed accept-queue length.
type Sample = (u64, u64);

/// What a [`DepthSampler`] took: its samples, and whether it ran real-time.
#[derive(Debug, Default)]
pub struct Depths {
    /// The samples, in time order.
    pub samples: Vec<Sample>,
    /// Whether the thread ran SCHED_FIFO ([`DepthSampler::start`]).
    pub realtime: bool,
}

/// The accept-queue length sampler of one phase ([`DepthSampler::start`]).
pub struct DepthSampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Depths>>,
}

impl Drop for DepthSampler {
    /// A phase that ended early (an error) stops its sampler too.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl DepthSampler {
    /// Starts sampling the LISTEN sockets of `port` from `source` (opened by the caller in the
    /// server's namespace, [`open_source`]) every [`DEPTH_EVERY`], until
    /// [`DepthSampler::finish`].
    ///
    /// The samples are taken on a fixed grid of absolute times (clock_nanosleep TIMER_ABSTIME),
    /// by a SCHED_FIFO thread where the process may make one: a mean of samples is the
    /// phase's time average only when the sampling instants do not depend on the queue
    /// (PASTA). An ordinary thread on the busy benchmark CPUs runs when they are free, which is
    /// when the server has emptied its queue: on the 2-vCPU VM it took 26 of 160 samples in
    /// 0.8 s and read a mean of 6.9 waiting beside Little's law's 44.6. A grid point missed
    /// (the thread ran late) is skipped, not made up, and the count shows it
    /// (`AcceptQueue::depth_samples_expected`).
    pub fn start(source: DepthSource, port: u16) -> DepthSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let realtime = realtime().is_ok();
            let mut source = source;
            let mut samples = Vec::with_capacity(4096);
            let mut line = String::new();
            let every = DEPTH_EVERY.as_nanos() as u64;
            let mut next = now_ns();
            while !flag.load(Ordering::Relaxed) {
                let t = now_ns();
                if let Some(n) = source.length(port, &mut line) {
                    samples.push((t, n));
                }
                // The next grid point after now (those passed while held off are skipped).
                let now = now_ns();
                next += every * ((now.saturating_sub(next)) / every + 1);
                common::threadcpu::sleep_until_ns(next);
            }
            Depths { samples, realtime }
        });
        DepthSampler {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops sampling; the samples taken.
    pub fn finish(mut self) -> Depths {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

/// Makes the calling thread SCHED_FIFO at the lowest real-time priority (1): it then runs when
/// its timer fires, ahead of every ordinary thread, for the few µs a sample takes (one read of
/// the listeners' lines per table, every [`DEPTH_EVERY`]: well under 1% of a CPU).
fn realtime() -> Result<(), i32> {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: pthread_self() names the calling thread, which is alive; `param` is a valid
    // sched_param that outlives the call, which only reads it.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(rc)
    }
}

/// Where a [`DepthSampler`] reads the listeners' accept-queue length.
pub enum DepthSource {
    /// sock_diag, LISTEN sockets only.
    Diag(tuning::host::ListenQueue),
    /// `/proc/thread-self/net/tcp` and `tcp6` (sock_diag missing).
    Proc(Vec<BufReader<File>>),
}

impl DepthSource {
    /// The summed accept-queue length of `port`'s listeners; `None` when it cannot be read.
    fn length(&mut self, port: u16, line: &mut String) -> Option<u64> {
        match self {
            DepthSource::Diag(q) => q.length(port).ok(),
            DepthSource::Proc(readers) => {
                let mut sum = Some(0u64);
                for r in readers {
                    sum = sum.zip(listen_queue(r, port, line)).map(|(a, b)| a + b);
                }
                sum
            }
        }
    }
}

/// Opens the accept-queue length's source in the calling thread's network namespace:
/// sock_diag, else `/proc/thread-self/net/tcp` and `tcp6` (a file missing, e.g. without IPv6,
/// is left out).
pub fn open_source() -> DepthSource {
    match tuning::host::ListenQueue::open() {
        Ok(q) => DepthSource::Diag(q),
        Err(_) => DepthSource::Proc(
            ["/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"]
                .iter()
                .filter_map(|p| File::open(p).ok())
                .map(BufReader::new)
                .collect(),
        ),
    }
}

/// The summed rx_queue (accept-queue length) of the LISTEN sockets of `port` in the table `r`
/// reads, from its start; `None` when it cannot be read.
fn listen_queue(r: &mut BufReader<File>, port: u16, line: &mut String) -> Option<u64> {
    r.rewind().ok()?;
    let mut sum = 0;
    line.clear();
    // The header.
    r.read_line(line).ok()?;
    loop {
        line.clear();
        if r.read_line(line).ok()? == 0 {
            return Some(sum);
        }
        match parse_listen(line) {
            Some((p, q)) if p == port => sum += q,
            Some(_) => {}
            // Listening sockets come first: the rest are other states.
            None => return Some(sum),
        }
    }
}

/// A `/proc/net/tcp` line of a LISTEN socket (state `0A`): its local port and rx_queue; `None`
/// for any other line.
fn parse_listen(line: &str) -> Option<(u16, u64)> {
    let mut f = line.split_whitespace();
    let local = f.nth(1)?;
    let state = f.nth(1)?;
    if state != "0A" {
        return None;
    }
    let queues = f.next()?;
    let port = u16::from_str_radix(local.rsplit(':').next()?, 16).ok()?;
    let rx = u64::from_str_radix(queues.split(':').nth(1)?, 16).ok()?;
    Some((port, rx))
}

/// Now on CLOCK_MONOTONIC, ns (both sides' stamp clock).
fn now_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("clock_gettime(CLOCK_MONOTONIC)");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// What was measured of one phase, to join.
pub struct Sides {
    /// The server's stamps (every worker's).
    pub server: Stamps,
    /// The load generator's stamps.
    pub client: Stamps,
    /// The measured window, CLOCK_MONOTONIC ns: from, length.
    pub window: (u64, u64),
    /// The 1-in-N rule both applied.
    pub every: u32,
    /// The phase's accept rate, per second (its successes over its measured seconds).
    pub accept_rate_per_sec: f64,
    /// The accept-queue length samples.
    pub depth: Depths,
    /// Why Little's law cannot be held against the listeners' length here
    /// (`AcceptQueue::not_comparable`), if so.
    pub not_comparable: Option<String>,
}

/// Joins the two sides into the phase's [`AcceptQueue`] and the encoded histogram of the waits.
pub fn finish(s: Sides) -> (AcceptQueue, String) {
    let full = s.server.full + s.client.full;
    let mut client = s.client.into_stamps();
    let mut server = s.server.into_stamps();
    let j = join(&mut client, &mut server, s.window.0);
    let mut h = results::record::new_latency_histogram();
    let mut sum = 0u128;
    for &w in &j.waits_ns {
        h.saturating_record(w.max(1));
        sum += u128::from(w);
    }
    let joined = j.waits_ns.len() as u64;
    let mean_wait_ns = if joined > 0 {
        sum as f64 / joined as f64
    } else {
        0.0
    };
    let end = s.window.0.saturating_add(s.window.1);
    let inside: Vec<Sample> = s
        .depth
        .samples
        .iter()
        .copied()
        .filter(|(t, _)| (s.window.0..end).contains(t))
        .collect();
    let sampled_depth = time_mean(&inside);
    let q = AcceptQueue {
        not_measured: None,
        sample_every: s.every,
        joined,
        accepted_first: j.accepted_first,
        unmatched_client: j.unmatched_client,
        unmatched_server: j.unmatched_server,
        stamps_full: full,
        mean_wait_ns,
        accept_rate_per_sec: s.accept_rate_per_sec,
        littles_law_depth: s.accept_rate_per_sec * mean_wait_ns / 1e9,
        sampled_depth,
        sampled_depth_max: inside.iter().map(|s| s.1).max().unwrap_or(0),
        depth_samples: inside.len() as u64,
        depth_every_us: DEPTH_EVERY.as_micros() as u64,
        depth_samples_expected: s.window.1 / DEPTH_EVERY.as_nanos() as u64,
        depth_sampler_realtime: s.depth.realtime,
        not_comparable: s.not_comparable,
    };
    (q, results::record::encode_histogram(&h))
}

/// The time-weighted mean of samples (`(t_ns, value)`, in time order): the trapezoid integral
/// over their span, divided by it; the one value when there is one. A sampler thread that
/// the scheduler kept off the CPU samples unevenly, and equal weights would then favour the
/// times it ran. `None` without samples.
fn time_mean(samples: &[Sample]) -> Option<f64> {
    let (first, last) = (samples.first()?, samples.last()?);
    let span = last.0.saturating_sub(first.0);
    if span == 0 {
        return Some(samples.iter().map(|s| s.1 as f64).sum::<f64>() / samples.len() as f64);
    }
    let area: f64 = samples
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) as f64 * (w[0].1 + w[1].1) as f64 / 2.0)
        .sum();
    Some(area / span as f64)
}

/// The [`AcceptQueue`] of a phase whose wait could not be measured, and why.
pub fn not_measured(why: impl Into<String>) -> AcceptQueue {
    AcceptQueue {
        not_measured: Some(why.into()),
        ..AcceptQueue::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listen_line_gives_its_port_and_accept_queue() {
        let listen = "   0: 0100007F:9C40 00000000:0000 0A 00000000:0000002A 00:00000000 00000000     0        0 1234 1 0000000000000000 100 0 0 10 4096";
        assert_eq!(parse_listen(listen), Some((0x9c40, 42)));
        let est = "   1: 0100007F:9C40 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 1235 1 0000000000000000 20 4 30 10 -1";
        assert_eq!(parse_listen(est), None);
        assert_eq!(
            parse_listen("  sl  local_address rem_address   st tx_queue rx_queue"),
            None
        );
    }

    #[test]
    fn an_open_loop_phase_too_large_for_the_buffers_is_sampled_one_in_n() {
        assert_eq!(plan(None, 2).0, 1);
        assert_eq!(plan(Some(1_000.0), 2).0, 1);
        assert_eq!(plan(Some(MAX_STAMPS as f64 * 2.5), 2).0, 3);
        assert!(plan(Some(1e9), 4).1 >= MAX_STAMPS / 4);
    }

    /// Little's law from the joined waits: 1,000/s × a mean wait of 2 ms = 2 waiting; samples
    /// outside the measured window are left out; the sampled length is a time-weighted mean.
    #[test]
    fn littles_law_is_the_rate_times_the_mean_wait() {
        let mut server = Stamps::with_capacity(8, 1);
        let mut client = Stamps::with_capacity(8, 1);
        for (k, (c, s)) in [
            (1_000, 1_000 + 1_000_000),
            (2_000, 2_000 + 3_000_000),
            (10, 20),
        ]
        .into_iter()
        .enumerate()
        {
            client.push(k as u64 + 1, c);
            server.push(k as u64 + 1, s);
        }
        let (q, h) = finish(Sides {
            server,
            client,
            window: (1_000, 10_000_000),
            every: 1,
            accept_rate_per_sec: 1_000.0,
            depth: Depths {
                samples: vec![(500, 99), (2_000, 1), (3_000, 3), (20_000_000, 99)],
                realtime: true,
            },
            not_comparable: None,
        });
        assert_eq!(q.joined, 2, "the stamp before the window is warm-up");
        assert!((q.mean_wait_ns - 2_000_000.0).abs() < 1.0, "{q:?}");
        assert!((q.littles_law_depth - 2.0).abs() < 1e-9, "{q:?}");
        assert_eq!(
            (q.sampled_depth, q.sampled_depth_max, q.depth_samples),
            (Some(2.0), 3, 2)
        );
        let h = results::record::decode_histogram(&h).unwrap();
        assert_eq!(h.len(), 2);
        assert!((h.max() as f64 - 3e6).abs() < 3e6 * 0.001, "{}", h.max());
        // Nothing stamped, nothing sampled: no mean, no length (not zeros).
        let (q, _) = finish(Sides {
            server: Stamps::default(),
            client: Stamps::default(),
            window: (1_000, 10_000_000),
            every: 1,
            accept_rate_per_sec: 1_000.0,
            depth: Depths::default(),
            not_comparable: None,
        });
        assert_eq!((q.joined, q.sampled_depth), (0, None));
    }

    /// Unevenly spaced samples weigh by the time they stand for: 0 for 1 µs, then 10 for 9 µs
    /// (a sampler held off the CPU meanwhile), then 0.
    #[test]
    fn the_sampled_length_is_a_time_weighted_mean() {
        let samples = [(0, 0), (1_000, 0), (1_000, 10), (10_000, 10), (10_000, 0)];
        assert_eq!(time_mean(&samples), Some(9.0));
        assert_eq!(time_mean(&[(5, 4)]), Some(4.0));
        assert_eq!(time_mean(&[]), None);
    }

    /// `bench`'s harness on loopback, open loop at 2,000/s, with the server's accept loop
    /// paused for 700 ms inside the measured window (1,400 connections queued): the longest accept-queue wait
    /// is that pause (within 10%), and Little's law (accept rate × mean wait) agrees with the
    /// sampled accept-queue length within 20%. Both server engines (io_uring when it runs here).
    #[test]
    fn a_paused_server_shows_its_pause_and_littles_law_holds() {
        const PAUSE: Duration = Duration::from_millis(700);
        let cpus = common::cpulist::usable();
        let (srv, load) = (cpus[0], *cpus.get(1).unwrap_or(&cpus[0]));
        let mut engines = vec![server::EngineChoice::Epoll];
        match server::probe::io_uring() {
            Ok(()) => engines.push(server::EngineChoice::IoUring),
            Err(why) => eprintln!("skipping the io_uring server: {why}"),
        }
        for engine in engines {
            let setup = crate::setup::Setup::for_test(srv, load, engine);
            let mut h = crate::harness::Harness::start(setup).unwrap();
            let spec = crate::setup::PhaseSpec {
                name: "latency".into(),
                pattern: loadgen::Pattern::Open {
                    rate_per_sec: 2_000.0,
                    arrival: loadgen::Arrival::Uniform,
                },
                duration: Duration::from_millis(1_500),
                warmup: Duration::from_millis(200),
            };
            let staller = h.server().unwrap().staller();
            // The pause begins 0.4 s into the measured window and ends 0.4 s before its end.
            let pauser = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(600));
                staller.stall(PAUSE)
            });
            let stop = AtomicBool::new(false);
            let out = h.run_phase(&spec, &stop, &mut |_| {}).unwrap();
            assert!(
                pauser.join().unwrap(),
                "{engine:?}: the worker never paused"
            );
            h.finish();
            let p = &out.record;
            let q = p.accept_queue.as_ref().unwrap();
            assert_eq!(q.not_measured, None, "{engine:?}");
            let hist = results::record::decode_histogram(
                p.histograms.accept_queue_wait.as_deref().unwrap(),
            )
            .unwrap();
            eprintln!(
                "{engine:?}: {q:?}; wait p50 {} ns, max {} ns, {} samples; {} successes",
                hist.value_at_quantile(0.5),
                hist.max(),
                hist.len(),
                p.successes
            );
            assert_eq!(hist.len(), q.joined);
            // Nearly every measured connection is joined (a few at the window's edges may not).
            assert!(
                q.joined as f64 >= 0.95 * p.successes as f64,
                "{engine:?}: {q:?}"
            );
            let pause = PAUSE.as_nanos() as f64;
            assert!(
                (hist.max() as f64 - pause).abs() <= 0.1 * pause,
                "{engine:?}: longest wait {} ns, the pause {pause} ns",
                hist.max()
            );
            let sampled = q.sampled_depth.unwrap();
            assert!(
                (q.littles_law_depth - sampled).abs() <= 0.2 * sampled,
                "{engine:?}: Little's law {:.1} waiting, sampled {sampled:.1}",
                q.littles_law_depth
            );
        }
    }

    /// A steady queue: `bench`'s harness on loopback with the epoll server, open loop at
    /// 2,000/s for 2 s, while the accept loop is slowed for the whole measured window (it
    /// stalls 20–40 ms, runs 10 ms, over and over, the stalls' lengths varied so the 5 ms
    /// sampling grid does not alias with them): a queue of tens of connections stands, and
    /// Little's law (accept rate × mean wait) agrees with the listener's sampled accept-queue
    /// length within 20% (issue 35), the cross-check says so, and the real-time sampler took
    /// at least 80% of its samples.
    #[test]
    fn a_steady_queue_agrees_with_littles_law() {
        // The cross-check refuses to compare when the load worker saw too many handshakes
        // late (its CPU busy: a contended test host, not the case under test); such a run is
        // made again, up to three runs.
        for attempt in 1..=3 {
            let (turns, out) = steady_queue_phase();
            let q = out.record.accept_queue.as_ref().unwrap();
            if attempt < 3
                && matches!(
                    q.littles_law_check(),
                    results::record::LittleCheck::NotCompared(_)
                )
                && q.accepted_first as f64 > results::record::LITTLE_LATE_CLIENT * q.joined as f64
            {
                eprintln!("run {attempt}: the load worker ran late ({q:?}); again");
                continue;
            }
            return steady_queue_checks(turns, &out);
        }
    }

    /// One phase of [`a_steady_queue_agrees_with_littles_law`]: the slowed turns and the phase.
    fn steady_queue_phase() -> (u32, crate::phase::PhaseOutcome) {
        let cpus = common::cpulist::usable();
        let (srv, load) = (cpus[0], *cpus.get(1).unwrap_or(&cpus[0]));
        let setup = crate::setup::Setup::for_test(srv, load, server::EngineChoice::Epoll);
        let mut h = crate::harness::Harness::start(setup).unwrap();
        let spec = crate::setup::PhaseSpec {
            name: "latency".into(),
            pattern: loadgen::Pattern::Open {
                rate_per_sec: 2_000.0,
                arrival: loadgen::Arrival::Uniform,
            },
            duration: Duration::from_secs(2),
            warmup: Duration::from_millis(300),
        };
        let staller = h.server().unwrap().staller();
        let slowing = Arc::new(AtomicBool::new(true));
        let slow = Arc::clone(&slowing);
        // Bounded: at most 3 s of 30-50 ms turns, and it ends when the phase does.
        let slower = std::thread::spawn(move || {
            let until = std::time::Instant::now() + Duration::from_secs(3);
            let mut turns = 0u32;
            for k in 0u64.. {
                if !slow.load(Ordering::Relaxed) || std::time::Instant::now() >= until {
                    break;
                }
                let stall = Duration::from_millis(20 + (k * 7) % 21);
                if staller.stall(stall) {
                    turns += 1;
                }
                std::thread::sleep(stall + Duration::from_millis(10));
            }
            turns
        });
        let stop = AtomicBool::new(false);
        let out = h.run_phase(&spec, &stop, &mut |_| {}).unwrap();
        slowing.store(false, Ordering::Relaxed);
        let turns = slower.join().unwrap();
        h.finish();
        (turns, out)
    }

    fn steady_queue_checks(turns: u32, out: &crate::phase::PhaseOutcome) {
        let p = &out.record;
        let q = p.accept_queue.as_ref().unwrap();
        eprintln!("{turns} slowed turns; {q:?}; {} successes", p.successes);
        assert_eq!(q.not_measured, None);
        assert!(turns >= 20, "the accept loop was slowed only {turns} times");
        assert!(q.depth_sampler_realtime, "{q:?}");
        assert!(
            q.depth_samples as f64 >= 0.8 * q.depth_samples_expected as f64,
            "{q:?}"
        );
        let sampled = q.sampled_depth.unwrap();
        assert!(sampled >= 5.0, "no steady queue formed: {q:?}");
        assert!(
            (q.littles_law_depth - sampled).abs() <= 0.2 * sampled,
            "Little's law {:.1} waiting, sampled {sampled:.1}",
            q.littles_law_depth
        );
        assert_eq!(
            q.littles_law_check(),
            results::record::LittleCheck::Agree,
            "{q:?}"
        );
    }
}
