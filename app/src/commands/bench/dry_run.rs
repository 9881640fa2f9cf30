//! `connstorm bench --dry-run`: the plan of a run, printed after every check a real run makes
//! before it starts (so a refusal is the same exit 2), without a server, a socket, a namespace
//! or a record.

use std::fmt::Write as _;

use super::Trial;
use crate::run::{peak_concurrency, split_duration};
use crate::setup::Setup;

fn engine(e: server::EngineChoice) -> &'static str {
    match e {
        server::EngineChoice::Auto => {
            "auto (io_uring if it works here, else epoll; decided at start)"
        }
        server::EngineChoice::IoUring => "io-uring",
        server::EngineChoice::Epoll => "epoll",
    }
}

fn cpus(list: &[usize]) -> String {
    common::cpulist::format(list)
}

fn secs(d: std::time::Duration) -> String {
    format!("{} s", common::numfmt::exact(d.as_secs_f64()))
}

/// The plan of one `bench` run on `setup` with `trial`'s phases, as text (one fact a line):
/// where the server and load run and with how many workers and which engines, the phases with
/// their load, measured time and warm-up, the paired baseline and profile if asked, and what
/// the run would change on the host. `metrics`: the `--metrics` address, if given.
pub(super) fn plan_text(
    setup: &Setup,
    trial: &Trial,
    metrics: Option<std::net::SocketAddr>,
) -> String {
    let mut out = String::new();
    let plan = &trial.plan;
    let _ = writeln!(out, "connstorm bench --dry-run: nothing runs; the plan:");
    match setup.target {
        Some(t) => {
            let _ = writeln!(out, "  server: external target {t} (load side only)");
        }
        None => {
            let n = setup.server_workers.max(setup.server_cpus.len());
            let _ = writeln!(
                out,
                "  server: {n} worker(s) on CPUs [{}]{}, engine {}, mode {}, listen backlog {}",
                cpus(&setup.server_cpus),
                if n > setup.server_cpus.len() {
                    " (round-robin, CPUs shared)"
                } else {
                    ""
                },
                engine(setup.engine),
                setup.mode,
                setup.backlog
            );
        }
    }
    let workers = setup.load_workers.max(setup.load_cpus.len());
    let _ = writeln!(
        out,
        "  load: {workers} worker(s) on CPUs [{}]{}, engine {}, client close {}, port slices {}",
        cpus(&setup.load_cpus),
        if workers > setup.load_cpus.len() {
            " (round-robin, CPUs shared)"
        } else {
            ""
        },
        setup.load_engine.name(),
        setup.close.name(),
        setup.port_slices.name()
    );
    let _ = writeln!(out, "  placement: {}", setup.placement());
    let what = match (setup.tls.is_some(), setup.http) {
        (true, true) => "a TLS handshake and one HTTP/1.1 GET per connection",
        (true, false) => "a TLS handshake per connection",
        (false, true) => "one HTTP/1.1 GET per connection",
        (false, false) => "TCP handshakes only",
    };
    // The same words as the run's first line (seen: a dry run of `--http` or `--insecure` did
    // not say which wire, or that the certificate would not be checked).
    let _ = writeln!(
        out,
        "  protocol: {what}; {}{}",
        common::wire::describe_with_server(
            setup.close.name(),
            setup.http,
            setup.tls.is_some(),
            &if setup.target.is_some() {
                "external".to_string()
            } else {
                setup.mode.to_string()
            }
        ),
        common::tls::unverified_marker(setup.tls.as_ref().is_none_or(|t| t.load.verified()))
    );
    // What the client offers (versions, groups, suites, resumption and its share) and what
    // the run measures beside the handshake: the run records both, and a resumed and a full
    // handshake are different wires (seen: `--tls-resume-share 30%` and `--accept-wait off`
    // left the plan unchanged).
    if let Some(t) = &setup.tls {
        let _ = writeln!(
            out,
            "  tls: {}",
            crate::commands::tls::setup_of(&t.load).line()
        );
    }
    let _ = writeln!(
        out,
        "  measured beside the handshake: accept-queue wait {}; open-loop pacing: spin {} before each start, batches of at most {} starts",
        match (setup.target, setup.accept_wait) {
            (Some(_), _) => "not measured (an external --target's accepts cannot be stamped)",
            (None, true) => "on (bench's own server with the epoll load engine; otherwise the run says why not)",
            (None, false) => "off (--accept-wait off)",
        },
        if setup.pacing.spin_auto {
            "auto (each load CPU's timer wake-up latency, measured at the start: 2µs to 100µs; 2µs on a CPU that holds several load workers)"
                .to_string()
        } else if setup.pacing.spin_ns == loadgen::SPIN_NS
            && super::resolve::spin_shares_the_server(
                setup.target.is_some(),
                &setup.server_cpus,
                &setup.load_cpus,
            )
        {
            "2µs (the load CPUs run the server too: `auto` measures nothing there)".to_string()
        } else {
            format!("{:?}", std::time::Duration::from_nanos(setup.pacing.spin_ns))
        },
        setup.pacing.start_batch
    );
    let (peak, latency, warmup) = split_duration(plan.duration);
    let _ = writeln!(
        out,
        "  phase peak: closed loop, {} attempts in flight, {} measured after {} warm-up{}",
        common::numfmt::count(u64::from(peak_concurrency(
            plan.concurrency,
            setup.load_cpus.len()
        ))),
        secs(peak),
        secs(warmup),
        if plan.profile.is_some() {
            ", with the kernel profile (cpu-clock) of its measured part"
        } else {
            ""
        }
    );
    let rate = match plan.rate {
        Some(r) => format!("{}/s (--rate)", common::numfmt::exact(r)),
        None => "80% of the measured peak".into(),
    };
    let _ = writeln!(
        out,
        "  phase latency: open loop at {rate}, {} measured after {} warm-up",
        secs(latency),
        secs(warmup)
    );
    if plan.baseline {
        let o = trial.baseline.opts;
        let _ = writeln!(
            out,
            "  then: the kernel floor paired with connstorm, {} pair(s) of {} slices in ABBA order",
            o.pairs,
            secs(o.slice)
        );
    }
    if let Some(pairs) = trial.profile_overhead {
        let _ = writeln!(
            out,
            "  then: the profile's cost, {pairs} off/on pair(s) of 2 s closed-loop slices"
        );
    }
    let total = crate::run::planned_seconds(plan.duration);
    let _ = writeln!(
        out,
        "  time: about {} of phases (warm-ups included){}",
        secs(total),
        if plan.baseline || trial.profile_overhead.is_some() {
            ", plus the slices above"
        } else {
            ""
        }
    );
    let host = if setup.netns {
        format!(
            "two network namespaces joined by veth, created for the run and removed after it{}",
            setup
                .rtt
                .map(|r| format!(", netem adding {r:?} of round-trip time"))
                .unwrap_or_default()
        )
    } else {
        "no host setting (loopback in this namespace)".to_string()
    };
    let _ = writeln!(
        out,
        "  host changes: {host}; this process's RLIMIT_NOFILE raised to its hard limit; no sysctl"
    );
    if let Some(addr) = metrics {
        let _ = writeln!(out, "  metrics: would serve http://{addr}/metrics");
    }
    let _ = writeln!(
        out,
        "  record: would be written under {}",
        trial.out.display()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn setup() -> Setup {
        Setup {
            load_cpus: vec![1, 2],
            mode: server::Mode::Rst,
            netns: true,
            rtt: Some(Duration::from_millis(2)),
            load_workers: 8,
            port_slices: loadgen::PortSlices::Off,
            ..Setup::for_test(0, 1, server::EngineChoice::Epoll)
        }
    }

    fn trial() -> Trial {
        Trial {
            plan: crate::run::Plan {
                duration: Duration::from_secs(5),
                rate: Some(20_000.0),
                rate_from: None,
                concurrency: None,
                baseline: true,
                label: String::new(),
                profile: None,
            },
            baseline: crate::baseline::BaselineRun {
                netns: true,
                concurrency: None,
                opts: crate::baseline::Options {
                    pairs: 6,
                    slice: Duration::from_secs(2),
                },
            },
            out: "runs".into(),
            build: (
                crate::record::Build {
                    version: "0",
                    git_commit: "unknown",
                },
                results::record::BuildInfo::default(),
            ),
            profile_overhead: None,
        }
    }

    #[test]
    fn the_plan_names_cpus_workers_engines_phases_and_host_changes() {
        let text = plan_text(&setup(), &trial(), None);
        for want in [
            "server: 1 worker(s) on CPUs [0], engine epoll, mode rst, listen backlog 4096",
            "load: 8 worker(s) on CPUs [1-2] (round-robin, CPUs shared), engine epoll, client close fin, port slices off",
            "placement: split",
            "protocol: TCP handshakes only; wire: TCP, client closes first (FIN) after the handshake, TIME_WAIT on the client\n",
            "phase peak: closed loop, 64 attempts in flight, 2 s measured after 1 s warm-up",
            "phase latency: open loop at 20,000/s (--rate), 3 s measured after 1 s warm-up",
            "then: the kernel floor paired with connstorm, 6 pair(s) of 2 s slices",
            "time: about 7 s of phases",
            "host changes: two network namespaces joined by veth, created for the run and removed after it, netem adding 2ms of round-trip time",
            "record: would be written under runs",
        ] {
            assert!(text.contains(want), "{want:?} in:\n{text}");
        }
    }

    /// Like for like: a dry run names what a TLS client offers (resumption and its share,
    /// groups, suites, version) and whether the accept-queue wait is measured, as the record
    /// will; without --tls it has no TLS line.
    #[test]
    fn dry_run_names_tls_resumption_groups_and_the_accept_wait_as_the_run_will() {
        use loadgen::tls::{Resume, TlsOptions, TlsVersion, Verify};
        let plain = plan_text(&setup(), &trial(), None);
        assert!(!plain.contains("  tls:"), "{plain}");
        assert!(
            plain.contains("accept-queue wait on (bench's own server with the epoll load engine; otherwise the run says why not); open-loop pacing: spin 2µs before each start, batches of at most 64 starts"),
            "{plain}"
        );
        let external = plan_text(
            &Setup {
                target: Some("127.0.0.1:9".parse().unwrap()),
                ..setup()
            },
            &trial(),
            None,
        );
        assert!(
            external.contains(
                "accept-queue wait not measured (an external --target's accepts cannot be stamped)"
            ),
            "{external}"
        );
        let s = Setup {
            accept_wait: false,
            pacing: loadgen::Pacing {
                spin_ns: 500_000,
                start_batch: 8,
                spin_auto: false,
            },
            tls: Some(crate::setup::BenchTls {
                server: None,
                load: TlsOptions {
                    version: TlsVersion::V13,
                    server_name: "localhost".into(),
                    alpn: vec![],
                    resume: Resume::Tickets,
                    verify: Verify::Insecure,
                    ciphers: vec!["TLS13_AES_256_GCM_SHA384".into()],
                    groups: vec!["p384".into()],
                    resume_share_pct: 30,
                },
            }),
            ..setup()
        };
        let text = plan_text(&s, &trial(), None);
        for want in [
            "  tls: TLS offered: version 1.3, SNI localhost, ALPN none; groups secp384r1; ciphers TLS13_AES_256_GCM_SHA384; resumption tickets 30%",
            "accept-queue wait off (--accept-wait off); open-loop pacing: spin 500µs before each start, batches of at most 8 starts",
        ] {
            assert!(text.contains(want), "{want:?} in:\n{text}");
        }
        // `--spin auto` (bench's default) says what it will measure, not a number it has not.
        let s = Setup {
            pacing: crate::commands::load::pacing(crate::commands::load::args::Spin::Auto, 64),
            ..setup()
        };
        let text = plan_text(&s, &trial(), None);
        let want = "open-loop pacing: spin auto (each load CPU's timer wake-up latency, measured at the start: 2µs to 100µs; 2µs on a CPU that holds several load workers) before each start, batches of at most 64 starts";
        assert!(text.contains(want), "{want:?} in:\n{text}");
        // Load CPUs that run the server too: auto stood down (resolve) and the plan says why.
        let s = Setup {
            server_cpus: vec![0, 1],
            load_cpus: vec![0, 1],
            ..setup()
        };
        let text = plan_text(&s, &trial(), None);
        let want = "open-loop pacing: spin 2µs (the load CPUs run the server too: `auto` measures nothing there) before each start";
        assert!(text.contains(want), "{want:?} in:\n{text}");
    }
}
