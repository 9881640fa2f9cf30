//! How the setups of two trial sets differ: what `compare` lists, and refuses to compare without
//! `--allow-mismatch` when [`SetupDifference::refuses`].

use serde::{Deserialize, Serialize};

use crate::record::RunRecord;

/// One setup fact whose values differ between (or within) the sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupDifference {
    /// What differs: `engine`, `load engine`, `protocol`, `target`, `server CPUs`, `load CPUs`, `client close`,
    /// `server mode`, `netns`, `added RTT`, `durations`, `TLS groups`, `TLS ciphers`,
    /// `TLS resumption`, `spin before due starts`, `kernel`, `connstorm version`.
    pub what: String,
    /// Distinct values on side A, in order of appearance.
    pub a: Vec<String>,
    /// Distinct values on side B.
    pub b: Vec<String>,
    /// A difference that makes the sides different experiments (everything but the spin, the
    /// kernel and connstorm's version: the last two are what a kernel-patch A/B changes on
    /// purpose, the spin changes only the generator's own lag and is said).
    pub refuses: bool,
}

impl SetupDifference {
    /// `engine: A io_uring, B epoll`.
    pub fn describe(&self) -> String {
        // An empty value (a load record has no server engine, no bench durations) read as
        // "engine: A io_uring, B " — a blank where the reader looks for B's setting.
        let side = |v: &[String]| {
            let shown: Vec<&str> = v
                .iter()
                .map(|x| {
                    if x.trim().is_empty() {
                        "none"
                    } else {
                        x.as_str()
                    }
                })
                .collect();
            if shown.is_empty() {
                "none".to_string()
            } else {
                shown.join(" / ")
            }
        };
        format!("{}: A {}, B {}", self.what, side(&self.a), side(&self.b))
    }
}

type Fact = (&'static str, bool, fn(&RunRecord) -> String);

fn cpus(v: &[usize]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        common::cpulist::format(v)
    }
}

/// What a record's connections carried: `TCP` (connect and close), `HTTP GET /` (a request per
/// connection), `TLS`, `TLS + HTTP GET /`, from its phases' HTTP and TLS counts (a server
/// record: its TLS accepts). Phases that differ are joined with ` / `.
fn protocol(r: &RunRecord) -> String {
    per_phase(r, "TCP", |p| {
        let tls = p.tls.is_some() || p.server.as_ref().is_some_and(|s| s.tls_accepted.is_some());
        Some(match (&p.http, tls) {
            (Some(h), true) => format!("TLS + HTTP {}", h.request),
            (Some(h), false) => format!("HTTP {}", h.request),
            (None, true) => "TLS".to_string(),
            (None, false) => "TCP".to_string(),
        })
    })
}

/// A fact read per phase (`None`: the phase has none): its distinct values in phase order,
/// joined with ` / `, or `none` when no phase has one.
fn per_phase(
    r: &RunRecord,
    none: &str,
    f: impl Fn(&crate::record::PhaseRecord) -> Option<String>,
) -> String {
    let mut v: Vec<String> = Vec::new();
    for x in r.phases.iter().filter_map(f) {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    if v.is_empty() {
        none.into()
    } else {
        v.join(" / ")
    }
}

/// A fact a record does not hold (written before it was recorded): it differs from nothing.
const NOT_RECORDED: &str = "not recorded";

/// The facts compared, whether a difference refuses, and how each is read from a record.
const FACTS: [Fact; 20] = [
    ("engine", true, |r| r.run.engine.clone()),
    // The load generator's connect engine: io_uring and epoll load the same server at
    // different rates (32,550 vs 21,160 conn/s here), a different experiment.
    ("load engine", true, |r| {
        r.run
            .load_engine
            .clone()
            .unwrap_or_else(|| NOT_RECORDED.into())
    }),
    ("protocol", true, protocol),
    ("target", true, |r| {
        r.run
            .target
            .clone()
            .unwrap_or_else(|| "own server on loopback".into())
    }),
    ("server CPUs", true, |r| cpus(&r.run.server_cpus)),
    ("load CPUs", true, |r| cpus(&r.run.load_cpus)),
    // How many workers ran on those CPUs (`--server-workers`, `--load-workers`, scale's per-core
    // counts): 32 server workers on one CPU and one are different experiments on the same CPU
    // list (compare gave a verdict across them). Read from the rows every record keeps.
    ("server workers", true, |r| {
        r.phases
            .iter()
            .find_map(|p| p.server.as_ref().map(|s| s.workers.len()))
            .filter(|n| *n > 0)
            .map_or_else(|| NOT_RECORDED.into(), |n| n.to_string())
    }),
    ("load workers", true, |r| {
        r.phases
            .first()
            .map(|p| p.load_workers.len())
            .filter(|n| *n > 0)
            .map_or_else(|| NOT_RECORDED.into(), |n| n.to_string())
    }),
    // Each load worker on its own slice of the ephemeral ports or all sharing the range
    // (`--port-slices`): the connect() cost under port pressure differs (issue 33).
    ("port slices", true, |r| {
        r.config
            .get("setup")
            .and_then(|s| s.get("port_slices"))
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| NOT_RECORDED.into(), str::to_string)
    }),
    ("client close", true, |r| r.run.close_mode.clone()),
    ("server mode", true, |r| r.run.server_mode.clone()),
    ("netns", true, |r| r.run.netns.to_string()),
    ("added RTT", true, |r| {
        r.run
            .rtt_ns
            .map_or_else(|| "none".into(), |n| crate::numfmt::ns(n as f64))
    }),
    ("durations", true, |r| {
        // The configured lengths (the measured ones differ by milliseconds).
        let c = &r.config;
        [
            "duration_secs",
            "peak_secs",
            "latency_secs",
            "warmup_secs",
            "step_secs",
        ]
        .iter()
        .filter_map(|k| {
            c.get(*k)
                .and_then(serde_json::Value::as_f64)
                .map(|v| format!("{k}={v}"))
        })
        .collect::<Vec<_>>()
        .join(" ")
    }),
    // What a `--tls` client offered (issue 36): X25519 and P-256 key exchanges, AES-128 and
    // AES-256 suites, and a mix of full and resumed handshakes cost different CPU per
    // connection, so each is a different experiment. Without TLS (or in an older record) not
    // recorded: the protocol fact says TLS against TCP.
    ("TLS groups", true, |r| {
        r.run
            .tls
            .as_ref()
            .map_or_else(|| NOT_RECORDED.into(), |t| t.groups.join(","))
    }),
    ("TLS ciphers", true, |r| {
        r.run
            .tls
            .as_ref()
            .map_or_else(|| NOT_RECORDED.into(), |t| t.ciphers.join(","))
    }),
    ("TLS resumption", true, |r| {
        r.run
            .tls
            .as_ref()
            .map_or_else(|| NOT_RECORDED.into(), crate::record::TlsSetup::resumption)
    }),
    // The spin before each open-loop start changes the generator's lag, and so the
    // handshake's tail, and the load CPU: not a different experiment, but said.
    ("spin before due starts", false, spin),
    ("kernel", false, |r| {
        r.host
            .kernel_release
            .clone()
            .unwrap_or_else(|| "unknown".into())
    }),
    ("connstorm version", false, |r| {
        format!("{} ({})", r.run.connstorm_version, r.run.git_commit)
    }),
];

/// The open-loop phases' spin: `auto` (measured per load CPU, so its values differ from run to
/// run by design) or the fixed spin; "none" for a run without an open-loop phase.
fn spin(r: &RunRecord) -> String {
    per_phase(r, "none", |p| {
        match (
            p.settings.get("load.spin_auto"),
            p.settings.get("load.spin_ns"),
        ) {
            (Some(1), _) => Some("auto".to_string()),
            (_, Some(&ns)) => Some(crate::numfmt::ns(ns as f64)),
            _ => None,
        }
    })
}

fn distinct(recs: &[RunRecord], f: fn(&RunRecord) -> String) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in recs {
        let x = f(r);
        if x != NOT_RECORDED && !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// The setup facts that differ between `a` and `b`, or within a side.
pub(crate) fn setup_differences(a: &[RunRecord], b: &[RunRecord]) -> Vec<SetupDifference> {
    FACTS
        .iter()
        .filter_map(|(what, refuses, f)| {
            let (va, vb) = (distinct(a, *f), distinct(b, *f));
            let mut all = va.clone();
            all.extend(vb.iter().filter(|x| !va.contains(x)).cloned());
            (all.len() > 1).then(|| SetupDifference {
                what: (*what).to_string(),
                a: va,
                b: vb,
                refuses: *refuses,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_external_target_differ_and_refuse_kernel_does_not() {
        let a = vec![RunRecord::example()];
        let mut ext = RunRecord::example();
        ext.run.target = Some("10.0.0.2:8080".into());
        ext.host.kernel_release = Some("6.13.0-patched".into());
        let d = setup_differences(&a, &[ext]);
        let target = d.iter().find(|d| d.what == "target").unwrap();
        assert!(target.refuses);
        assert_eq!(target.a, ["own server on loopback"]);
        assert_eq!(target.b, ["10.0.0.2:8080"]);
        let kernel = d.iter().find(|d| d.what == "kernel").unwrap();
        assert!(!kernel.refuses);
        assert!(
            kernel.describe().contains("B 6.13.0-patched"),
            "{}",
            kernel.describe()
        );
        assert!(setup_differences(&a, &a).is_empty());
        // The spin: auto against a fixed one is said, and does not refuse.
        let mut auto = a[0].clone();
        let mut fixed = a[0].clone();
        for (r, auto_on) in [(&mut auto, true), (&mut fixed, false)] {
            let s = &mut r.phases[0].settings;
            s.insert("load.spin_ns".into(), if auto_on { 47_000 } else { 2_000 });
            if auto_on {
                s.insert("load.spin_auto".into(), 1);
            }
        }
        let d = setup_differences(std::slice::from_ref(&auto), std::slice::from_ref(&fixed));
        let spin = d
            .iter()
            .find(|d| d.what == "spin before due starts")
            .unwrap();
        assert!(!spin.refuses);
        assert_eq!(spin.describe(), "spin before due starts: A auto, B 2.0 µs");
        // Two auto runs measured different spins: the same setup.
        let mut auto2 = auto.clone();
        auto2.phases[0]
            .settings
            .insert("load.spin_ns".into(), 65_000);
        assert!(setup_differences(&[auto], &[auto2]).is_empty());
    }

    /// Mixed setups compared: the same CPUs with another number of server or load workers, or
    /// port slices on against off, are different experiments and refuse; a record without the
    /// fact (no rows, no setup) differs from nothing.
    #[test]
    fn worker_counts_and_port_slices_differ_and_refuse() {
        let a = RunRecord::example();
        let mut b = a.clone();
        for p in &mut b.phases {
            let s = p.server.as_mut().unwrap();
            let w = s.workers[0];
            s.workers = vec![w; 32];
            let l = p.load_workers[0];
            p.load_workers = vec![l; 8];
        }
        let d = setup_differences(std::slice::from_ref(&a), std::slice::from_ref(&b));
        for (what, want) in [
            ("server workers", "server workers: A 1, B 32"),
            ("load workers", "load workers: A 1, B 8"),
        ] {
            let e = d.iter().find(|d| d.what == what).expect(what);
            assert!(e.refuses, "{what}");
            assert_eq!(e.describe(), want);
        }
        let mut on = a.clone();
        on.config["setup"] = serde_json::json!({"port_slices": "on"});
        let mut off = a.clone();
        off.config["setup"] = serde_json::json!({"port_slices": "off"});
        let d = setup_differences(std::slice::from_ref(&on), std::slice::from_ref(&off));
        let e = d
            .iter()
            .find(|d| d.what == "port slices")
            .expect("port slices");
        assert!(e.refuses);
        assert_eq!(e.describe(), "port slices: A on, B off");
        // An older record without the setup differs from neither.
        assert!(setup_differences(std::slice::from_ref(&a), &[on]).is_empty());
        let mut none = a.clone();
        for p in &mut none.phases {
            p.server = None;
            p.load_workers.clear();
        }
        assert!(setup_differences(&[a], &[none])
            .iter()
            .all(|d| d.what != "server workers" && d.what != "load workers"));
    }

    /// io_uring and epoll load generators are different experiments (compare set 32,550
    /// against 21,160 conn/s without a word); a record that does not say (older) differs from
    /// neither.
    #[test]
    fn load_engines_differ_and_refuse_unless_one_is_not_recorded() {
        let mut a = RunRecord::example();
        a.run.load_engine = Some("io_uring".into());
        let mut b = a.clone();
        b.run.load_engine = Some("epoll".into());
        let d = setup_differences(std::slice::from_ref(&a), std::slice::from_ref(&b));
        let e = d
            .iter()
            .find(|d| d.what == "load engine")
            .expect("load engine");
        assert!(e.refuses);
        assert_eq!(e.describe(), "load engine: A io_uring, B epoll");
        b.run.load_engine = None;
        assert!(setup_differences(&[a], &[b]).is_empty());
    }

    /// Statistics, kind "mixed setups compared": plain TCP against TLS + HTTP is a different
    /// experiment, listed and refused (it used to pass as a −95% "regression").
    #[test]
    fn plain_and_tls_http_runs_differ_in_protocol_and_refuse() {
        let a = vec![RunRecord::example()];
        let mut b = RunRecord::example();
        for p in &mut b.phases {
            p.http = Some(crate::record::HttpCounts {
                request: "GET /".into(),
                ..Default::default()
            });
            p.tls = Some(crate::record::TlsCounts::default());
        }
        let d = setup_differences(&a, &[b]);
        let proto = d.iter().find(|d| d.what == "protocol").expect("protocol");
        assert!(proto.refuses);
        assert_eq!(proto.a, ["TCP"]);
        assert_eq!(proto.b, ["TLS + HTTP GET /"]);
    }

    /// Issue 36 item 5: a different key exchange group, cipher suite list or resumption share
    /// is a different experiment, listed and refused; a record without the TLS setup (older,
    /// or plain TCP) differs from neither.
    #[test]
    fn tls_groups_ciphers_and_resume_share_differ_and_refuse() {
        let tls = |g: &str, c: &str, share: Option<u8>| crate::record::TlsSetup {
            version: "auto".into(),
            server_name: "localhost".into(),
            alpn: vec![],
            groups: vec![g.into()],
            ciphers: vec![c.into()],
            resume: if share.is_some() { "tickets" } else { "off" }.into(),
            resume_share_pct: share,
            verified: true,
        };
        let mut a = RunRecord::example();
        a.run.tls = Some(tls("X25519", "TLS13_AES_128_GCM_SHA256", Some(100)));
        let mut b = a.clone();
        b.run.tls = Some(tls("secp256r1", "TLS13_AES_256_GCM_SHA384", Some(30)));
        let d = setup_differences(std::slice::from_ref(&a), std::slice::from_ref(&b));
        let find = |w: &str| {
            d.iter()
                .find(|d| d.what == w)
                .unwrap_or_else(|| panic!("{w}: {d:?}"))
        };
        assert!(find("TLS groups").refuses);
        assert_eq!(
            find("TLS groups").describe(),
            "TLS groups: A X25519, B secp256r1"
        );
        assert!(find("TLS ciphers").refuses);
        assert_eq!(
            find("TLS resumption").describe(),
            "TLS resumption: A tickets 100%, B tickets 30%"
        );
        assert!(setup_differences(std::slice::from_ref(&a), std::slice::from_ref(&a)).is_empty());
        b.run.tls = None;
        assert!(setup_differences(&[a], &[b]).is_empty());
    }

    /// Mixed setups compared: a bench record against a load record (no own server, no bench
    /// durations) named B's settings as blanks ("engine: A io_uring, B "); they read "none".
    #[test]
    fn statistics_a_setting_one_side_lacks_reads_none_not_a_blank() {
        let d = SetupDifference {
            what: "engine".into(),
            a: vec!["io_uring".into()],
            b: vec![String::new()],
            refuses: true,
        };
        assert_eq!(d.describe(), "engine: A io_uring, B none");
        let d = SetupDifference {
            what: "durations".into(),
            a: vec!["duration_secs=2".into()],
            b: vec![],
            refuses: true,
        };
        assert_eq!(d.describe(), "durations: A duration_secs=2, B none");
    }
}
