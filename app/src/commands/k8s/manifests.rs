//! The Kubernetes manifests of a multi-host run (`connstorm k8s render`): N load generators as
//! an Indexed Job (segment `i/N` from the job-completion index, one common start time), the
//! accept server as a Deployment + Service (optionally on the host network), and a shared
//! volume for the records — the templates in `deploy/kubernetes/templates/` with their
//! `{{NAME}}` placeholders filled.
//!
//! What every generator's `load` would refuse at run time is refused here, before any file is
//! written ([`check`]).

use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use common::units::{parse_positive_duration, parse_rate};
use loadgen::segment::Segment;

use crate::bad_input;

/// The templates, by output file name.
const TEMPLATES: [(&str, &str); 4] = [
    (
        "namespace.yaml",
        include_str!("../../../../deploy/kubernetes/templates/namespace.yaml"),
    ),
    (
        "records.yaml",
        include_str!("../../../../deploy/kubernetes/templates/records.yaml"),
    ),
    (
        "server.yaml",
        include_str!("../../../../deploy/kubernetes/templates/server.yaml"),
    ),
    (
        "generators.yaml",
        include_str!("../../../../deploy/kubernetes/templates/generators.yaml"),
    ),
];

/// How long after rendering the generators start when no start time is given (time to build,
/// push and apply).
pub const DEFAULT_START_DELAY: Duration = Duration::from_secs(300);

/// What the manifests describe (the options of `connstorm k8s render`, already parsed by the
/// binary's value parsers: durations and the rate are kept as the user wrote them, for the
/// generators' command lines).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Load generators (pods of the Indexed Job), 1 to 10000.
    pub clients: u32,
    /// The server as the generators reach it, `HOST:PORT` ([`parse_host_port`]).
    pub target: String,
    /// Open loop: the whole fleet's rate, e.g. `200k/s`; `None` with no `concurrency` means
    /// `1000/s`.
    pub rate: Option<String>,
    /// Closed loop: the whole fleet's connections in flight (wins over `rate`).
    pub concurrency: Option<u32>,
    /// Measured part of each generator's run, e.g. `60s`.
    pub duration: String,
    /// Warm-up before the measured part, e.g. `5s`.
    pub warmup: String,
    /// Container image.
    pub image: String,
    /// Namespace of every object, a DNS-1123 label ([`dns_label`]).
    pub namespace: String,
    /// The server on the node's network (`hostNetwork: true`).
    pub host_network: bool,
    /// Port the server listens on, 1 to 65535.
    pub port: u16,
    /// Whole CPUs of the server pod (requests = limits).
    pub server_cpus: u32,
    /// Whole CPUs of each generator pod.
    pub load_cpus: u32,
    /// Memory of each pod (requests = limits), a Kubernetes quantity such as `1Gi`.
    pub memory: String,
}

/// The common start time of the generators, RFC 3339 UTC with whole seconds: `start_at` as
/// given (RFC 3339), or [`DEFAULT_START_DELAY`] after `now`.
///
/// # Errors
/// Bad input ([`common::error::BadInput`]) for a time that does not parse or is not after
/// `now`.
pub fn start_time(start_at: Option<&str>, now: SystemTime) -> anyhow::Result<String> {
    let Some(s) = start_at else {
        return Ok(humantime::format_rfc3339_seconds(now + DEFAULT_START_DELAY).to_string());
    };
    let t = humantime::parse_rfc3339_weak(s).map_err(|e| {
        bad_input(format!(
            "invalid --start-at {s:?} ({e}): give an RFC 3339 UTC time like 2026-12-01T07:00:00Z"
        ))
    })?;
    if t <= now {
        return Err(bad_input(format!(
            "--start-at {s} is in the past: give a time after the manifests will be applied"
        )));
    }
    Ok(humantime::format_rfc3339_seconds(t).to_string())
}

/// The fleet's open-loop rate as written: `--rate`, or [`DEFAULT_RATE`] without one.
fn rate_text(o: &Options) -> &str {
    o.rate.as_deref().unwrap_or(DEFAULT_RATE)
}

/// The fleet's rate without `--rate` or `--concurrency`.
pub const DEFAULT_RATE: &str = "1000/s";

/// Refuses what every generator's `load` would refuse at run time — a measured duration under
/// loadgen's minimum ([`loadgen::config::MIN_DURATION`]), a pod whose share of the rate or the
/// concurrency is empty (checked for every segment `i/N` with the functions `load --segment`
/// uses, [`Segment::nonzero_rate`] and [`Segment::nonzero_count`]: a whole rate of 2/s over 3
/// pods leaves pod 2 nothing), an open-loop share that schedules fewer than one start — and a
/// memory quantity that is not one.
///
/// # Errors
/// Bad input naming the option and a value that works.
pub fn check(o: &Options) -> anyhow::Result<()> {
    let duration = parse_positive_duration(&o.duration).map_err(bad_input)?;
    if duration < loadgen::config::MIN_DURATION {
        return Err(bad_input(format!(
            "--duration {}: each generator's load needs at least {:?} of measured time",
            o.duration,
            loadgen::config::MIN_DURATION
        )));
    }
    // Every pod's share, by the rule its `load --segment i/N` applies.
    let segments = (0..o.clients).map(|index| Segment {
        index,
        count: o.clients,
    });
    let n = o.clients;
    match (o.concurrency, rate_text(o)) {
        (Some(c), _) => {
            for seg in segments {
                seg.nonzero_count(u64::from(c), "connections in flight")
                    .map_err(|_| {
                        bad_input(format!(
                            "--concurrency {c} over {n} generators leaves segment {seg} (pod {}) with no connection in flight (each takes ⌊{c}/{n}⌋ or one more): give --concurrency {n} or more, or fewer --clients",
                            seg.index
                        ))
                    })?;
            }
        }
        (None, rate) => {
            let per_sec = parse_rate(rate).map_err(bad_input)?;
            for seg in segments {
                let share = seg.nonzero_rate(per_sec).map_err(|_| {
                    bad_input(format!(
                        "--rate {rate} over {n} generators leaves segment {seg} (pod {}) with no rate (a whole rate is split into whole connections per second, ⌊rate/{n}⌋ or one more each): give --rate {n}/s or more, or fewer --clients",
                        seg.index
                    ))
                })?;
                if share * duration.as_secs_f64() < 1.0 {
                    return Err(bad_input(format!(
                        "--rate {rate} over {n} generators for {} gives segment {seg} fewer than one start: raise --rate or --duration, or use fewer --clients",
                        o.duration
                    )));
                }
            }
        }
    }
    let memory_ok = o
        .memory
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse::<u64>()
        .is_ok_and(|v| v > 0);
    if !memory_ok {
        return Err(bad_input(format!(
            "invalid --memory {:?}: give a Kubernetes quantity such as 512Mi or 1Gi",
            o.memory
        )));
    }
    Ok(())
}

/// The manifests, by file name (`namespace.yaml`, `records.yaml`, `server.yaml`,
/// `generators.yaml`), with every placeholder filled; `start_at` as [`start_time`] returns it.
pub fn render(o: &Options, start_at: &str) -> Vec<(&'static str, String)> {
    let mut load: Vec<String> = ["load", "--target", o.target.as_str()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    match o.concurrency {
        Some(c) => load.extend(["--concurrency".into(), c.to_string()]),
        None => load.extend(["--rate".into(), rate_text(o).to_string()]),
    }
    let segment = format!("$(SEGMENT_INDEX)/{}", o.clients);
    load.extend(
        [
            "--duration",
            o.duration.as_str(),
            "--warmup",
            o.warmup.as_str(),
            "--segment",
            segment.as_str(),
            "--start-at",
            start_at,
            "--out",
            "/records",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let server = vec![
        "server".to_string(),
        "--listen".into(),
        format!("0.0.0.0:{}", o.port),
        // The server closes with RST: no orphaned FIN_WAIT2 state for a reused client port to
        // meet (docs/methodology.md, "Close modes, TIME_WAIT and FIN_WAIT2").
        "--mode".into(),
        "rst".into(),
        "--out".into(),
        "/records".into(),
    ];
    let json = |v: &[String]| serde_json::to_string(v).expect("strings serialize");
    // The restricted Pod Security Standard holds for every pod but a `--host-network` server
    // (host namespaces are outside even the baseline standard): its namespace then enforces
    // nothing and warns at restricted, so the cluster names that one difference.
    let (pod_security, pod_security_why) = if o.host_network {
        (
            "privileged",
            "--host-network: the server pod shares the node's network namespace, which the baseline and restricted standards forbid; every other setting meets restricted",
        )
    } else {
        ("restricted", "every pod meets the restricted standard")
    };
    // A port below 1024 needs NET_BIND_SERVICE, the one capability the restricted standard
    // allows to add; none otherwise.
    let server_caps_add = if o.port < 1024 {
        r#"["NET_BIND_SERVICE"]"#
    } else {
        "[]"
    };
    let vars: [(&str, String); 15] = [
        ("POD_SECURITY", pod_security.to_string()),
        ("POD_SECURITY_WHY", pod_security_why.to_string()),
        ("SERVER_CAPS_ADD", server_caps_add.to_string()),
        ("NAMESPACE", o.namespace.clone()),
        // A YAML double-quoted scalar (JSON's string syntax is one): `#` or quotes in the
        // name stay part of it.
        (
            "IMAGE",
            serde_json::to_string(&o.image).expect("a string serializes"),
        ),
        ("CLIENTS", o.clients.to_string()),
        ("START_AT", start_at.to_string()),
        ("HOST_NETWORK", o.host_network.to_string()),
        (
            "DNS_POLICY",
            if o.host_network {
                "ClusterFirstWithHostNet"
            } else {
                "ClusterFirst"
            }
            .to_string(),
        ),
        ("PORT", o.port.to_string()),
        ("SERVER_CPUS", o.server_cpus.to_string()),
        ("LOAD_CPUS", o.load_cpus.to_string()),
        ("MEMORY", o.memory.clone()),
        ("LOAD_ARGS", json(&load)),
        ("SERVER_ARGS", json(&server)),
    ];
    TEMPLATES
        .iter()
        .map(|(name, t)| {
            let mut text = t.to_string();
            for (k, v) in &vars {
                text = text.replace(&format!("{{{{{k}}}}}"), v);
            }
            debug_assert!(!text.contains("{{"), "{name}: unfilled placeholder");
            (*name, text)
        })
        .collect()
}

/// Writes the rendered files into `dir` (created if missing).
///
/// # Errors
/// When the directory cannot be created or a file cannot be written (the path in the message).
pub fn write(files: &[(&str, String)], dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the manifest directory {}", dir.display()))?;
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// The `value_parser` of `--target`: `HOST:PORT` with a port of 1 to 65535 and a host of
/// letters, digits, `.`, `-` or a bracketed IPv6 address (resolved in the pods, not here).
///
/// # Errors
/// A message with an example of each form.
pub fn parse_host_port(s: &str) -> Result<String, String> {
    let bad = || {
        format!("invalid --target {s:?}: write HOST:PORT, e.g. connstorm-server.connstorm.svc:9000 or [fd00::1]:9000")
    };
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-[]:".contains(c));
    if port == 0 || !host_ok {
        return Err(bad());
    }
    Ok(s.to_string())
}

/// The `value_parser` of `--namespace`: a DNS-1123 label (what a namespace name must be):
/// lower-case alphanumerics and `-`, 1 to 63, starting and ending alphanumeric.
///
/// # Errors
/// A message saying what is allowed, with an example.
pub fn dns_label(s: &str) -> Result<String, String> {
    let ok = (1..=63).contains(&s.len())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("invalid namespace {s:?}: lower-case letters, digits and '-', at most 63, e.g. connstorm"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binary's defaults with 4 clients against `srv.connstorm.svc:9000`.
    fn options() -> Options {
        Options {
            clients: 4,
            target: "srv.connstorm.svc:9000".into(),
            rate: None,
            concurrency: None,
            duration: "60s".into(),
            warmup: "5s".into(),
            image: "connstorm:0.1.0".into(),
            namespace: "connstorm".into(),
            host_network: false,
            port: 9000,
            server_cpus: 2,
            load_cpus: 2,
            memory: "1Gi".into(),
        }
    }

    fn rate(r: &str, duration: &str) -> Options {
        Options {
            rate: Some(r.into()),
            duration: duration.into(),
            ..options()
        }
    }

    #[test]
    fn every_placeholder_is_filled_and_the_job_is_indexed() {
        let o = Options {
            host_network: true,
            ..rate("200k/s", "60s")
        };
        let files = render(&o, "2026-12-01T07:00:00Z");
        assert_eq!(files.len(), 4);
        for (name, text) in &files {
            assert!(!text.contains("{{"), "{name}: {text}");
        }
        let job = &files.iter().find(|f| f.0 == "generators.yaml").unwrap().1;
        for want in [
            "completionMode: Indexed",
            "completions: 4",
            "parallelism: 4",
            "\"--segment\",\"$(SEGMENT_INDEX)/4\"",
            "\"--start-at\",\"2026-12-01T07:00:00Z\"",
            "\"--rate\",\"200k/s\"",
            "batch.kubernetes.io/job-completion-index",
        ] {
            assert!(job.contains(want), "{want} not in {job}");
        }
        let server = &files.iter().find(|f| f.0 == "server.yaml").unwrap().1;
        assert!(server.contains("hostNetwork: true") && server.contains("ClusterFirstWithHostNet"));
        // Guaranteed QoS: requests equal limits.
        assert_eq!(server.matches("cpu: \"2\"").count(), 2);
    }

    /// The image name is one quoted YAML scalar; the server writes its record beside the
    /// generators' and closes with RST.
    #[test]
    fn the_image_is_quoted_and_the_server_writes_a_record() {
        let o = Options {
            image: "reg/x:1 #not-a-comment".into(),
            ..rate("200k/s", "60s")
        };
        let files = render(&o, "2026-12-01T07:00:00Z");
        let server = &files.iter().find(|f| f.0 == "server.yaml").unwrap().1;
        assert!(
            server.contains("image: \"reg/x:1 #not-a-comment\""),
            "{server}"
        );
        assert!(
            server.contains("\"--mode\",\"rst\",\"--out\",\"/records\"")
                && server.contains("claimName: connstorm-records"),
            "{server}"
        );
    }

    /// What each generator's `load` would refuse is refused when rendering.
    #[test]
    fn a_share_load_would_refuse_is_refused_at_render() {
        let too_short = check(&rate("1k/s", "1ns"));
        assert!(too_short
            .unwrap_err()
            .to_string()
            .contains("--duration 1ns"));
        let too_few = check(&rate("10/s", "100ms"));
        assert!(too_few
            .unwrap_err()
            .to_string()
            .contains("fewer than one start"));
        assert!(check(&rate("40/s", "100ms")).is_ok());
        let closed = |c: u32| Options {
            concurrency: Some(c),
            ..rate("40/s", "60s")
        };
        let too_few = check(&closed(3)).unwrap_err().to_string();
        assert!(
            too_few.contains("--concurrency 3 over 4 generators")
                && too_few.contains("give --concurrency 4 or more"),
            "{too_few}"
        );
        assert!(check(&closed(4)).is_ok());
        let no_quantity = Options {
            memory: "lots".into(),
            ..options()
        };
        assert!(check(&no_quantity)
            .unwrap_err()
            .to_string()
            .contains("invalid --memory \"lots\""));
    }

    /// Finding: `--clients 3 --rate 2/s` rendered, and pod 2's `load --segment 2/3` then
    /// refused "segment 2/3 gets no rate". Every pod's share is checked by the load's rule.
    #[test]
    fn a_rate_that_leaves_a_pod_without_a_share_is_refused_at_render() {
        let three = |r: Option<&str>| Options {
            clients: 3,
            rate: r.map(str::to_string),
            ..options()
        };
        let e = check(&three(Some("2/s"))).unwrap_err();
        assert!(e.downcast_ref::<common::error::BadInput>().is_some());
        assert_eq!(
            e.to_string(),
            "--rate 2/s over 3 generators leaves segment 2/3 (pod 2) with no rate (a whole rate is split into whole connections per second, ⌊rate/3⌋ or one more each): give --rate 3/s or more, or fewer --clients"
        );
        assert!(check(&three(Some("3/s"))).is_ok());
        // A fractional rate is split evenly: every pod has a share.
        assert!(check(&three(Some("2.5/s"))).is_ok());
        // Without --rate the default rate is checked the same way.
        let many = Options {
            clients: 1001,
            ..options()
        };
        assert!(check(&many)
            .unwrap_err()
            .to_string()
            .contains("leaves segment 1000/1001 (pod 1000) with no rate"));
    }

    #[test]
    fn a_start_time_in_the_past_or_unparsable_is_refused() {
        let now = humantime::parse_rfc3339("2026-12-01T07:00:00Z").unwrap();
        assert_eq!(start_time(None, now).unwrap(), "2026-12-01T07:05:00Z");
        assert_eq!(
            start_time(Some("2026-12-01T08:00:00Z"), now).unwrap(),
            "2026-12-01T08:00:00Z"
        );
        let past = start_time(Some("2026-12-01T07:00:00Z"), now).unwrap_err();
        assert!(past.to_string().contains("in the past"), "{past}");
        let bad = start_time(Some("tomorrow"), now).unwrap_err();
        assert!(bad.to_string().contains("invalid --start-at"), "{bad}");
    }

    #[test]
    fn bad_targets_and_namespaces_are_refused() {
        assert!(parse_host_port("srv:0").is_err());
        assert!(parse_host_port("srv").is_err());
        assert!(parse_host_port("a b:9000").is_err());
        assert!(parse_host_port("[fd00::1]:9000").is_ok());
        assert!(dns_label("Conn").is_err());
        assert!(dns_label("-x").is_err());
        assert!(dns_label("connstorm-1").is_ok());
    }
}
