//! The bounds of what `bench`, `sweep` and `ab` accept, checked before anything is created (no
//! record, namespace or server exists yet). Each refusal is bad input (exit code 2) naming the
//! option, its limit and how to fix it.

use std::path::Path;
use std::time::Duration;

use crate::bad_input;
use crate::run::Plan;

/// Longest `bench` run accepted (24 h): a benchmark, not a soak test (use `load` for those); its
/// per-second timeline must stay a small record.
pub const MAX_BENCH_DURATION: Duration = Duration::from_secs(24 * 3600);

/// Highest offered rate accepted (10 M connections/s): far above what any Linux host completes
/// (loopback handshakes cost several µs of CPU each), yet finite, so schedules stay bounded.
pub const MAX_RATE_PER_SEC: f64 = 1e7;

/// Most attempts in flight accepted (1 M): each is a socket, and the fd limit bounds them anyway.
pub const MAX_CONCURRENCY: u32 = 1_000_000;

/// Longest per-attempt connect timeout accepted (1 h).
pub const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(3600);

/// Where and how a harness is asked to run, as given (before CPUs are resolved into a
/// [`crate::setup::Setup`]).
#[derive(Debug, Clone, Copy)]
pub struct SetupRequest<'a> {
    /// Closed-loop concurrency of the peak phase, if given.
    pub concurrency: Option<u32>,
    /// Per-attempt connect timeout.
    pub connect_timeout: Duration,
    /// An external target was given (`--target`).
    pub target: bool,
    /// The `--netns` pair was asked for.
    pub netns: bool,
    /// Directory for run records (`--out`).
    pub out: &'a Path,
}

/// Checks a setup request: `--target` with `--netns`, the concurrency against
/// [`MAX_CONCURRENCY`] and the descriptors the load side will have
/// ([`crate::setup::fd_room_after_raise`]), the connect timeout against
/// [`MAX_CONNECT_TIMEOUT`], and that `--out` can take a record
/// ([`crate::record::check_writable_dir`]).
///
/// # Errors
/// Bad input (exit 2) naming the option, its limit and how to fix it.
pub fn check_setup(r: &SetupRequest<'_>) -> anyhow::Result<()> {
    if r.target && r.netns {
        return Err(bad_input("--target and --netns exclude each other: --netns runs connstorm's own server in a private namespace"));
    }
    if r.netns {
        check_netns_privilege(common::uring::UringState::read().cap_sys_admin)?;
    }
    if let Some(c) = r.concurrency {
        check_concurrency(c, crate::setup::fd_room_after_raise())?;
    }
    check_connect_timeout(r.connect_timeout)?;
    crate::record::check_writable_dir(r.out)
}

/// Checks `--connect-timeout` against [`MAX_CONNECT_TIMEOUT`] (`bench`, `sweep`, `ab`, `scale`
/// through [`check_setup`]; `load`, which took `--connect-timeout 2h` and would have waited up
/// to that long in its end-of-run drain).
///
/// # Errors
/// Bad input (exit 2) naming the limit.
pub fn check_connect_timeout(d: Duration) -> anyhow::Result<()> {
    if d > MAX_CONNECT_TIMEOUT {
        return Err(bad_input(format!(
            "--connect-timeout {d:?} is longer than {} s: give a shorter one (a SYN retransmit schedule gives up after ~131 s anyway)",
            MAX_CONNECT_TIMEOUT.as_secs()
        )));
    }
    Ok(())
}

/// `--netns` makes namespaces (`ip netns add`: unshare and mount, CAP_SYS_ADMIN): without it
/// the run is refused up front. Unprivileged, `scale --netns` began its first step and `bench
/// --netns` failed at `ip netns add` with exit 1.
fn check_netns_privilege(cap_sys_admin: bool) -> anyhow::Result<()> {
    if cap_sys_admin {
        return Ok(());
    }
    Err(bad_input(
        "--netns needs CAP_SYS_ADMIN (it creates network namespaces with `ip netns add`) and \
         this process lacks it: run connstorm as root, or drop --netns to run on loopback",
    ))
}

/// Checks `--concurrency c` against [`MAX_CONCURRENCY`] and `room`, the descriptors the load
/// side may hold.
fn check_concurrency(c: u32, room: usize) -> anyhow::Result<()> {
    if c == 0 {
        return Err(bad_input(
            "--concurrency 0: keep at least one attempt in flight, e.g. --concurrency 32",
        ));
    }
    if c > MAX_CONCURRENCY {
        return Err(bad_input(format!(
            "--concurrency {c} is above the most connstorm accepts ({MAX_CONCURRENCY}): each attempt holds a socket; give fewer"
        )));
    }
    if c as usize > room {
        return Err(bad_input(format!(
            "--concurrency {c} needs {c} sockets but the open-file limit leaves the load side {room}: raise it (`ulimit -n`, RLIMIT_NOFILE) or give --concurrency {room} or less"
        )));
    }
    Ok(())
}

/// Checks `--load-workers workers` (given: `Some`) against the load CPUs they are spread over
/// and, in a closed loop, the attempts in flight they share (`closed_in_flight`): at least one
/// worker per load CPU and at most [`loadgen::MAX_WORKERS`] (as `load` refuses them), and no
/// more workers than attempts in flight — the closed loop splits its attempts across the
/// workers, so the rest would hold none (4,096 workers for 100 attempts: 3,996 idle threads
/// that measure nothing). `option` names the workers' option in the message (`--load-workers`,
/// `--load-workers-per-core`), `more` how to raise the attempts (`--concurrency`).
///
/// # Errors
/// Bad input (exit 2) naming the counts and what to give instead.
pub fn check_load_workers(
    workers: Option<usize>,
    cpus: usize,
    closed_in_flight: Option<u64>,
    option: &str,
    more: &str,
) -> anyhow::Result<()> {
    let Some(w) = workers else { return Ok(()) };
    if w < cpus {
        return Err(bad_input(format!(
            "{option}: {w} load workers on {cpus} load CPUs leaves CPUs without a worker: give at least one worker per load CPU ({cpus}), or fewer load CPUs"
        )));
    }
    if w > loadgen::MAX_WORKERS {
        return Err(bad_input(format!(
            "{option}: {w} load workers is above the most one run starts, {}: give fewer",
            loadgen::MAX_WORKERS
        )));
    }
    if let Some(c) = closed_in_flight.filter(|&c| (w as u64) > c) {
        let n = common::numfmt::count;
        return Err(bad_input(format!(
            "{option}: {} load workers share {} attempts in flight (closed loop: each worker keeps its share), so {} workers would be idle: give at most {} workers, or {more} of at least {}",
            n(w as u64),
            n(c),
            n(w as u64 - c),
            n(c),
            n(w as u64)
        )));
    }
    Ok(())
}

/// Checks a `bench` plan's own options: a duration from 1 s to [`MAX_BENCH_DURATION`] (each
/// phase needs whole seconds of load) and a rate from 1/s to [`MAX_RATE_PER_SEC`].
///
/// # Errors
/// Bad input (exit 2) naming the option, its limit and how to fix it.
pub fn check_plan(plan: &Plan) -> anyhow::Result<()> {
    if plan.duration < Duration::from_secs(1) {
        return Err(bad_input(format!(
            "--duration {:?} is too short: give at least 1s (each phase needs whole seconds of load)",
            plan.duration
        )));
    }
    if plan.duration > MAX_BENCH_DURATION {
        return Err(bad_input(format!(
            "--duration {:?} is longer than bench accepts ({} h): give a shorter one, or use `connstorm load` for long runs",
            plan.duration,
            MAX_BENCH_DURATION.as_secs() / 3600
        )));
    }
    if let Some(rate) = plan.rate {
        if !(1.0..=MAX_RATE_PER_SEC).contains(&rate) {
            return Err(bad_input(format!(
                "--rate {rate}/s is outside 1/s..={MAX_RATE_PER_SEC}/s: give a rate a host can be offered, e.g. --rate 20k/s"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_bad_input(r: anyhow::Result<()>, needle: &str) -> bool {
        let e = r.expect_err(needle);
        e.downcast_ref::<common::error::BadInput>().is_some() && e.to_string().contains(needle)
    }

    fn plan(duration: Duration, rate: Option<f64>) -> Plan {
        Plan {
            duration,
            rate,
            rate_from: None,
            concurrency: None,
            baseline: false,
            label: String::new(),
            profile: None,
        }
    }

    #[test]
    fn plans_outside_the_bounds_are_bad_input() {
        assert!(check_plan(&plan(Duration::from_secs(1), Some(1.0))).is_ok());
        assert!(check_plan(&plan(MAX_BENCH_DURATION, Some(MAX_RATE_PER_SEC))).is_ok());
        let short = check_plan(&plan(Duration::from_millis(999), None));
        assert!(is_bad_input(short, "too short"));
        let long = check_plan(&plan(MAX_BENCH_DURATION + Duration::from_secs(1), None));
        assert!(is_bad_input(long, "longer than bench accepts (24 h)"));
        let slow = check_plan(&plan(Duration::from_secs(5), Some(0.5)));
        assert!(is_bad_input(slow, "--rate 0.5/s is outside"));
        let fast = check_plan(&plan(Duration::from_secs(5), Some(1.1e7)));
        assert!(is_bad_input(fast, "outside 1/s..=10000000/s"));
    }

    #[test]
    fn concurrency_is_bounded_by_the_limit_and_the_descriptors() {
        assert!(check_concurrency(64, 64).is_ok());
        assert!(is_bad_input(check_concurrency(0, 64), "--concurrency 0"));
        assert!(is_bad_input(
            check_concurrency(65, 64),
            "leaves the load side 64"
        ));
        let over = check_concurrency(MAX_CONCURRENCY + 1, usize::MAX);
        assert!(is_bad_input(
            over,
            "above the most connstorm accepts (1000000)"
        ));
    }

    #[test]
    fn setup_conflicts_and_long_timeouts_are_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let ok = SetupRequest {
            concurrency: None,
            connect_timeout: MAX_CONNECT_TIMEOUT,
            target: false,
            netns: false,
            out: dir.path(),
        };
        assert!(check_setup(&ok).is_ok());
        let both = SetupRequest {
            target: true,
            netns: true,
            ..ok
        };
        assert!(is_bad_input(check_setup(&both), "exclude each other"));
        let slow = SetupRequest {
            connect_timeout: MAX_CONNECT_TIMEOUT + Duration::from_secs(1),
            ..ok
        };
        assert!(is_bad_input(check_setup(&slow), "--connect-timeout"));
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let not_dir = SetupRequest { out: &file, ..ok };
        assert!(is_bad_input(check_setup(&not_dir), "is not a directory"));
    }

    /// Missing permissions: `--netns` without CAP_SYS_ADMIN is bad input (exit 2) up front,
    /// naming the capability and the fix; with it, nothing is refused.
    #[test]
    fn missing_permissions_netns_without_cap_sys_admin_is_bad_input() {
        assert!(is_bad_input(
            check_netns_privilege(false),
            "--netns needs CAP_SYS_ADMIN"
        ));
        assert!(check_netns_privilege(true).is_ok());
    }
}
