//! `connstorm k8s render`: write the Kubernetes manifests of a multi-host run — N load
//! generators as an Indexed Job (segment `i/N` from the job-completion index, one common start
//! time), the accept server as a Deployment + Service (optionally on the host network), and a
//! shared volume for the records — from the templates in `deploy/kubernetes/templates/`.
//!
//! Exit codes: 0 written; 1 the files cannot be written; 2 bad input (refused before any file is
//! written).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;

use crate::error::bad_input;
use crate::units::{parse_duration, parse_positive_duration, parse_rate};

/// The templates, by output file name.
const TEMPLATES: [(&str, &str); 4] = [
    (
        "namespace.yaml",
        include_str!("../../deploy/kubernetes/templates/namespace.yaml"),
    ),
    (
        "records.yaml",
        include_str!("../../deploy/kubernetes/templates/records.yaml"),
    ),
    (
        "server.yaml",
        include_str!("../../deploy/kubernetes/templates/server.yaml"),
    ),
    (
        "generators.yaml",
        include_str!("../../deploy/kubernetes/templates/generators.yaml"),
    ),
];

/// `connstorm k8s` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Write the manifests of a multi-host run (see deploy/kubernetes/README.md).
    Render(RenderArgs),
}

/// Options of `connstorm k8s render`.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// Load generators (pods of the Indexed Job; pod i runs segment i/N, 0-based), 1 to 10000.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub clients: u32,
    /// The server as the generators reach it, HOST:PORT: the Service
    /// (`connstorm-server.NAMESPACE.svc:9000`), a node address with --host-network, or a server
    /// outside the cluster. The name is resolved in the pods, not here.
    #[arg(long, value_parser = parse_host_port)]
    pub target: String,
    /// Open loop: the whole fleet's rate, e.g. `200k/s` (each generator takes its share).
    #[arg(long, value_parser = rate_text, conflicts_with = "concurrency")]
    pub rate: Option<String>,
    /// Closed loop: the whole fleet's connections in flight (each generator takes its share).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: Option<u32>,
    /// Measured part of the run, e.g. `60s`.
    #[arg(long, default_value = "60s", value_parser = duration_text(true))]
    pub duration: String,
    /// Warm-up before the measured part, e.g. `5s`.
    #[arg(long, default_value = "5s", value_parser = duration_text(false))]
    pub warmup: String,
    /// When every generator starts its schedule: an RFC 3339 UTC time. Default: 5 minutes after
    /// rendering (time to build, push and apply); apply before it passes, or the pods refuse it.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Container image (built from deploy/kubernetes/Dockerfile).
    #[arg(long, default_value = concat!("connstorm:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// Namespace for every object.
    #[arg(long, default_value = "connstorm", value_parser = dns_label)]
    pub namespace: String,
    /// Run the server on the node's network (`hostNetwork: true`): no pod veth, NAT or
    /// conntrack in the path, so it measures the node.
    #[arg(long)]
    pub host_network: bool,
    /// Port the server listens on.
    #[arg(long, default_value_t = 9000, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// Whole CPUs of the server pod (requests = limits: Guaranteed QoS, exclusive cores under
    /// the static CPU-manager policy).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub server_cpus: u32,
    /// Whole CPUs of each generator pod.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub load_cpus: u32,
    /// Memory of each pod (requests = limits), a Kubernetes quantity.
    #[arg(long, default_value = "1Gi")]
    pub memory: String,
    /// Directory to write the manifests into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

fn parse_host_port(s: &str) -> Result<String, String> {
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

fn rate_text(s: &str) -> Result<String, String> {
    parse_rate(s).map(|_| s.trim().to_string())
}

fn duration_text(
    positive: bool,
) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        if positive {
            parse_positive_duration(s)?;
        } else {
            parse_duration(s)?;
        }
        Ok(s.trim().to_string())
    }
}

/// A DNS-1123 label (what a namespace name must be): lower-case alphanumerics and `-`, 1 to 63,
/// starting and ending alphanumeric.
fn dns_label(s: &str) -> Result<String, String> {
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

/// Runs `connstorm k8s`.
///
/// # Errors
/// Bad input (exit 2) for a start time in the past or a memory quantity that is not one;
/// exit 1 when a file cannot be written.
pub fn run(cmd: Command) -> anyhow::Result<i32> {
    match cmd {
        Command::Render(a) => render_cmd(&a),
    }
}

fn render_cmd(a: &RenderArgs) -> anyhow::Result<i32> {
    let now = SystemTime::now();
    let start_at = match &a.start_at {
        Some(s) => {
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
            humantime::format_rfc3339_seconds(t).to_string()
        }
        None => humantime::format_rfc3339_seconds(now + Duration::from_secs(300)).to_string(),
    };
    check_load_share(a)?;
    let memory_ok = a
        .memory
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse::<u64>()
        .is_ok_and(|v| v > 0);
    if !memory_ok {
        return Err(bad_input(format!(
            "invalid --memory {:?}: give a Kubernetes quantity such as 512Mi or 1Gi",
            a.memory
        )));
    }
    let files = render(a, &start_at);
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("creating the manifest directory {}", a.out.display()))?;
    for (name, text) in &files {
        let path = a.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!(
        "connstorm k8s: wrote {} into {}; generators start at {start_at}: apply before then (kubectl apply -f {})",
        files
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", "),
        a.out.display(),
        a.out.display()
    );
    Ok(0)
}

/// Refuses what every generator's `load` would refuse at run time: a measured duration under
/// loadgen's minimum, or an open-loop share that schedules fewer than one start.
///
/// # Errors
/// Bad input (exit 2) naming the option and a value that works.
fn check_load_share(a: &RenderArgs) -> anyhow::Result<()> {
    let duration = parse_positive_duration(&a.duration).map_err(bad_input)?;
    if duration < loadgen::config::MIN_DURATION {
        return Err(bad_input(format!(
            "--duration {}: each generator's load needs at least {:?} of measured time",
            a.duration,
            loadgen::config::MIN_DURATION
        )));
    }
    if let Some(rate) = &a.rate {
        let per_sec = parse_rate(rate).map_err(bad_input)?;
        let share = per_sec / f64::from(a.clients);
        if share * duration.as_secs_f64() < 1.0 {
            return Err(bad_input(format!(
                "--rate {rate} over {} generators for {} gives each fewer than one start: raise --rate or --duration, or use fewer --clients",
                a.clients, a.duration
            )));
        }
    }
    Ok(())
}

/// The manifests, by file name, with every placeholder filled.
fn render(a: &RenderArgs, start_at: &str) -> Vec<(&'static str, String)> {
    let mut load: Vec<String> = ["load", "--target", a.target.as_str()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    match (&a.rate, a.concurrency) {
        (_, Some(c)) => load.extend(["--concurrency".into(), c.to_string()]),
        (rate, None) => load.extend([
            "--rate".into(),
            rate.clone().unwrap_or_else(|| "1000/s".into()),
        ]),
    }
    let segment = format!("$(SEGMENT_INDEX)/{}", a.clients);
    load.extend(
        [
            "--duration",
            a.duration.as_str(),
            "--warmup",
            a.warmup.as_str(),
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
        format!("0.0.0.0:{}", a.port),
        // The server closes with RST: no orphaned FIN_WAIT2 state for a reused client port to
        // meet (README, TIME_WAIT and FIN_WAIT2).
        "--mode".into(),
        "rst".into(),
        "--out".into(),
        "/records".into(),
    ];
    let json = |v: &[String]| serde_json::to_string(v).expect("strings serialize");
    let vars: [(&str, String); 12] = [
        ("NAMESPACE", a.namespace.clone()),
        // A YAML double-quoted scalar (JSON's string syntax is one): `#` or quotes in the
        // name stay part of it.
        (
            "IMAGE",
            serde_json::to_string(&a.image).expect("a string serializes"),
        ),
        ("CLIENTS", a.clients.to_string()),
        ("START_AT", start_at.to_string()),
        ("HOST_NETWORK", a.host_network.to_string()),
        (
            "DNS_POLICY",
            if a.host_network {
                "ClusterFirstWithHostNet"
            } else {
                "ClusterFirst"
            }
            .to_string(),
        ),
        ("PORT", a.port.to_string()),
        ("SERVER_CPUS", a.server_cpus.to_string()),
        ("LOAD_CPUS", a.load_cpus.to_string()),
        ("MEMORY", a.memory.clone()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    fn args(extra: &[&str]) -> RenderArgs {
        #[derive(clap::Parser)]
        struct T {
            #[command(flatten)]
            a: RenderArgs,
        }
        let mut v = vec![
            "t",
            "--clients",
            "4",
            "--target",
            "srv.connstorm.svc:9000",
            "--out",
            "/x",
        ];
        v.extend(extra);
        T::try_parse_from(v).unwrap().a
    }

    #[test]
    fn every_placeholder_is_filled_and_the_job_is_indexed() {
        let files = render(
            &args(&["--rate", "200k/s", "--host-network"]),
            "2026-12-01T07:00:00Z",
        );
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
        let files = render(
            &args(&["--rate", "200k/s", "--image", "reg/x:1 #not-a-comment"]),
            "2026-12-01T07:00:00Z",
        );
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
        let too_short = check_load_share(&args(&["--rate", "1k/s", "--duration", "1ns"]));
        assert!(too_short
            .unwrap_err()
            .to_string()
            .contains("--duration 1ns"));
        let too_few = check_load_share(&args(&["--rate", "10/s", "--duration", "100ms"]));
        assert!(too_few
            .unwrap_err()
            .to_string()
            .contains("fewer than one start"));
        assert!(check_load_share(&args(&["--rate", "40/s", "--duration", "100ms"])).is_ok());
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
