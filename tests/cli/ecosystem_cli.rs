//! The ecosystem around the numbers, through the binary: shell completions, man pages,
//! `--version` and the record's `build` section, and the HTML report.
//!
//! Subcommands are discovered from `--help` (the "Commands:" list, at any depth), so a new
//! subcommand without completions or a man page fails here without editing this file.

use crate::shared::exe;
use std::path::Path;
use std::process::{Command, Output};

#[path = "../../build.rs"]
#[allow(dead_code)]
mod build_script;

fn run(args: &[&str]) -> Output {
    Command::new(exe())
        .args(args)
        .output()
        .expect("run connstorm")
}

fn stdout_ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "connstorm {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The subcommand names listed under "Commands:" in `connstorm <path> --help` (clap's own
/// `help` left out).
fn listed_subcommands(path: &[String]) -> Vec<String> {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let help = stdout_ok(&args);
    let Some(start) = help.find("Commands:\n") else {
        return Vec::new();
    };
    help[start + "Commands:\n".len()..]
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   ")) // a wrapped description line
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The example command lines in the "Examples:" block of `connstorm <path> --help`, as typed.
fn help_examples(path: &[String]) -> Vec<String> {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let help = stdout_ok(&args);
    let Some(start) = help.find("\nExamples:\n") else {
        return Vec::new();
    };
    help[start + "\nExamples:\n".len()..]
        .lines()
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .filter(|l| l.starts_with("connstorm"))
        .map(str::to_string)
        .collect()
}

/// Every command path below `connstorm`, depth first: `["bench"]`, ..., `["tune", "check"]`.
fn all_command_paths() -> Vec<Vec<String>> {
    fn walk(path: Vec<String>, out: &mut Vec<Vec<String>>) {
        for name in listed_subcommands(&path) {
            let mut sub = path.clone();
            sub.push(name);
            out.push(sub.clone());
            walk(sub, out);
        }
    }
    let mut out = Vec::new();
    walk(Vec::new(), &mut out);
    out
}

#[test]
fn command_discovery_finds_the_known_commands() {
    let paths = all_command_paths();
    for known in [
        &["bench"][..],
        &["sweep"],
        &["ab"],
        &["report"],
        &["completions"],
        &["man"],
        &["tune", "check"],
    ] {
        assert!(
            paths.iter().any(|p| p == known),
            "{known:?} not found among {paths:?}"
        );
    }
}

#[test]
fn completions_for_bash_zsh_and_fish_name_every_subcommand() {
    let paths = all_command_paths();
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout_ok(&["completions", shell]);
        assert!(
            script.len() > 1000,
            "{shell}: script of {} bytes",
            script.len()
        );
        for path in &paths {
            let name = path.last().unwrap();
            // Each shell names a subcommand as a whole word (bash: `connstorm__tune__check`
            // functions and word lists; zsh: `'check:...'`; fish: `-a "check"`).
            let as_word = script
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                .any(|w| w == name);
            assert!(
                as_word,
                "{shell} completions do not name `{}`",
                path.join(" ")
            );
        }
    }
    // The bash script's option list for `bench` holds its real options.
    let bash = stdout_ok(&["completions", "bash"]);
    assert!(bash.contains("--duration") && bash.contains("--engine"));
}

#[test]
fn completions_refuse_an_unknown_shell_with_exit_2() {
    let out = run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bash"));
}

#[test]
fn man_pages_exist_for_every_subcommand_and_render() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("man1");
    stdout_ok(&["man", "--out", out_dir.to_str().unwrap()]);
    let man = testkit::require_tool("man", "man-db");
    let mut pages = vec![vec![]];
    pages.extend(all_command_paths());
    for path in pages {
        let page_name = std::iter::once("connstorm".to_string())
            .chain(path.iter().cloned())
            .collect::<Vec<_>>()
            .join("-");
        let file = out_dir.join(format!("{page_name}.1"));
        let roff = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("no man page {}: {e}", file.display()));
        assert!(roff.contains("\n.TH "), "{page_name}: no .TH title line");
        for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS"] {
            assert!(roff.contains(section), "{page_name}: no {section}");
        }
        let rendered = Command::new(&man)
            .arg("-l")
            .arg(&file)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .env("LC_ALL", "C.UTF-8")
            .output()
            .expect("run man");
        let text = String::from_utf8_lossy(&rendered.stdout);
        let stderr = String::from_utf8_lossy(&rendered.stderr);
        assert!(rendered.status.success(), "man -l {page_name}: {stderr}");
        assert!(
            stderr.trim().is_empty(),
            "man -l {page_name} complained: {stderr}"
        );
        assert!(
            text.contains("NAME") && text.contains("SYNOPSIS"),
            "{page_name}: {text}"
        );
        // The synopsis names the command as typed: `connstorm tune check`.
        let typed = std::iter::once("connstorm")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let squeezed = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            squeezed.contains(&typed),
            "{page_name}: synopsis lacks `{typed}`"
        );
        // An EXAMPLES section with every example of the command's `--help`, each line as
        // typed (groff may print `-` as a hyphen or a minus sign).
        assert!(
            roff.contains("\n.SH EXAMPLES\n"),
            "{page_name}: no .SH EXAMPLES"
        );
        let (_, section) = text
            .split_once("\nEXAMPLES\n")
            .unwrap_or_else(|| panic!("{page_name}: no EXAMPLES section in\n{text}"));
        let section: String = section
            .chars()
            .map(|c| match c {
                '\u{2010}' | '\u{2011}' | '\u{2212}' => '-',
                c => c,
            })
            .collect();
        let examples = help_examples(&path);
        assert!(
            examples.len() >= 2,
            "{page_name}: `--help` shows {} examples",
            examples.len()
        );
        for example in &examples {
            assert!(
                section.lines().any(|l| l.trim() == example),
                "{page_name}: EXAMPLES lacks `{example}`:\n{section}"
            );
        }
    }
    // No page for clap's `help` pseudo-command.
    assert!(!out_dir.join("connstorm-help.1").exists());
}

#[test]
fn man_without_out_prints_the_top_page_and_a_file_as_out_is_refused() {
    let top = stdout_ok(&["man"]);
    assert!(top.contains(".SH NAME") && top.contains("connstorm"));
    let file = tempfile::NamedTempFile::new().unwrap();
    let out = run(&["man", "--out", file.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));
}

fn version_field<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no `{key}` line in {text}"))
        .trim()
}

#[test]
fn version_shows_crate_version_commit_and_engines() {
    let text = stdout_ok(&["--version"]);
    assert!(
        text.starts_with(&format!("connstorm {}\n", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    let commit = version_field(&text, "commit:");
    // The test binary is built from the same tree as connstorm: the same commit.
    let here = build_script::git_commit(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert_eq!(
        commit.trim_end_matches("-dirty"),
        here.trim_end_matches("-dirty"),
        "--version commit vs this tree"
    );
    assert_eq!(version_field(&text, "engines:"), "io_uring, epoll");
    assert!(!version_field(&text, "features:").is_empty());
    assert!(version_field(&text, "target:").contains("linux"));
    // `-V` is the one-line form.
    let short = stdout_ok(&["-V"]);
    assert_eq!(
        short.trim(),
        format!("connstorm {} ({commit})", env!("CARGO_PKG_VERSION"))
    );
}

/// `--help` and `--version` to a full stdout: exit 1 with one line on stderr, never 0.
#[test]
fn help_and_version_to_a_full_stdout_exit_1() {
    for args in [
        &["--version"][..],
        &["--help"],
        &["load", "--help"],
        &["-V"],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_connstorm"))
            .args(args)
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("No space left on device"), "{args:?}: {err}");
    }
}

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new(testkit::require_tool("git", "git"))
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&st.stderr)
    );
}

#[test]
fn build_commit_is_the_checkouts_and_unknown_from_a_tarball() {
    let tmp = tempfile::tempdir().unwrap();
    // A tarball unpacked on its own: no .git anywhere above it (tempdir is outside the tree).
    let tarball = tmp.path().join("connstorm-0.1.0");
    std::fs::create_dir_all(&tarball).unwrap();
    std::fs::write(tarball.join("Cargo.toml"), "[package]\n").unwrap();
    assert_eq!(build_script::git_commit(&tarball), "unknown");

    // A clean clone: 12 hex digits, the commit's own.
    let clone = tmp.path().join("clone");
    std::fs::create_dir_all(&clone).unwrap();
    git(&clone, &["init", "-q"]);
    std::fs::write(clone.join("Cargo.toml"), "[package]\n").unwrap();
    git(&clone, &["add", "Cargo.toml"]);
    git(&clone, &["commit", "-q", "-m", "x"]);
    let c = build_script::git_commit(&clone);
    assert_eq!(c.len(), 12, "{c}");
    assert!(c.chars().all(|ch| ch.is_ascii_hexdigit()), "{c}");

    // Tracked changes: `-dirty`; an untracked file does not count.
    std::fs::write(clone.join("untracked.rs"), "").unwrap();
    assert_eq!(build_script::git_commit(&clone), c);
    std::fs::write(clone.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    assert_eq!(build_script::git_commit(&clone), format!("{c}-dirty"));

    // A tarball unpacked inside another checkout is not that checkout's commit.
    let nested = clone.join("vendor").join("connstorm-0.1.0");
    std::fs::create_dir_all(&nested).unwrap();
    assert_eq!(build_script::git_commit(&nested), "unknown");
}

fn json_records(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

/// A real `bench` record carries this binary's build facts, and `report --format html` turns
/// it into one page with every section and inline SVG plots that fetches nothing.
#[test]
fn bench_record_carries_the_build_and_renders_as_one_html_page() {
    let _one_at_a_time = testkit::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "bench",
        "--netns",
        // 4 s: 2 s a phase after its warm-up, so each has per-second timeline rows to plot.
        "--duration",
        "4s",
        "--label",
        "html",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = json_records(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let rec = results::RunRecord::read(&files[0]).unwrap();

    let version = stdout_ok(&["--version"]);
    assert_eq!(rec.build.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(rec.build.git_commit, version_field(&version, "commit:"));
    assert_eq!(rec.build.engines, ["io_uring", "epoll"]);
    assert!(
        version.contains(&format!(
            "target:   {} ({})",
            rec.build.target, rec.build.profile
        )),
        "{version} vs {:?}",
        rec.build
    );
    assert!(
        rec.build.engines.contains(&rec.run.engine),
        "{}",
        rec.run.engine
    );

    let html_path = dir.path().join("report.html");
    let out = run(&[
        "report",
        "--format",
        "html",
        "-o",
        html_path.to_str().unwrap(),
        files[0].to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    for id in results::render::HTML_SECTIONS {
        assert!(
            html.contains(&format!("<section id=\"{id}\">")),
            "no section {id}"
        );
    }
    for fig in ["plot-spectrum", "plot-timeline", "plot-workers"] {
        let start = html
            .find(&format!("<figure id=\"{fig}\">"))
            .unwrap_or_else(|| panic!("no {fig}"));
        let end = start + html[start..].find("</figure>").unwrap();
        assert!(
            html[start..end].contains("<svg"),
            "{fig} without inline SVG"
        );
    }
    for banned in [
        "<script", "<link", "<img", "src=", "href=", "url(", "@import",
    ] {
        assert!(!html.contains(banned), "{banned} in the page");
    }
    // The summary shows each phase's achieved rate as the JSON report computes it.
    let json = stdout_ok(&["report", "--format", "json", files[0].to_str().unwrap()]);
    let reports: serde_json::Value = serde_json::from_str(&json).unwrap();
    for p in reports[0]["phases"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        assert!(
            html.contains(&format!("<td>{name}</td>")),
            "phase {name} not in the summary"
        );
        let successes = p["successes"].as_u64().unwrap();
        if successes > 0 {
            let rate = results::numfmt::fixed(p["achieved_per_sec"].as_f64().unwrap(), 0);
            assert!(
                html.contains(&format!("<td>{rate}</td>")),
                "{name}: {rate} conn/s missing"
            );
        }
    }
}

/// Runs connstorm with `args` under a pseudo-terminal (util-linux `script`), stdout and stderr
/// together: what a person at a terminal sees, escape codes included.
fn run_on_a_terminal(args: &[&str]) -> (bool, String) {
    let script = testkit::require_tool("script", "util-linux");
    let cmd = std::iter::once(exe().to_string())
        .chain(args.iter().map(|a| format!("'{a}'")))
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new(script)
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run script");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn sweep_args(dir: &Path) -> Vec<String> {
    [
        "sweep",
        "--netns",
        "--steps",
        "2",
        "--from",
        "5%",
        "--to",
        "10%",
        "--step-duration",
        "2s",
        "--probe-duration",
        "1s",
        "--slo",
        "p50<1s",
        "--out",
        dir.to_str().unwrap(),
    ]
    .map(str::to_string)
    .to_vec()
}

/// On a terminal, `bench`, `sweep` and `ab` draw a bar naming the command, the trial k of n
/// (`ab`), the phase, seconds done of planned and the ETA; the plain per-second lines are not
/// printed there.
#[test]
fn bench_sweep_and_ab_show_a_progress_bar_on_a_terminal() {
    let _one_at_a_time = testkit::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (ok, screen) = run_on_a_terminal(&["bench", "--netns", "--duration", "3s", "--out", d]);
    assert!(ok, "bench on a terminal failed: {screen}");
    assert!(screen.contains("bench ["), "no bench bar: {screen}");
    assert!(
        screen.contains("ETA") && screen.contains("phase peak"),
        "{screen}"
    );
    assert!(
        !screen.contains("[peak] "),
        "plain per-second lines on a terminal: {screen}"
    );

    let args = sweep_args(dir.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, screen) = run_on_a_terminal(&args);
    assert!(ok, "sweep on a terminal failed: {screen}");
    assert!(
        screen.contains("sweep [") && screen.contains("phase step-"),
        "{screen}"
    );

    let (ok, screen) = run_on_a_terminal(&[
        "ab",
        "--netns",
        "--trials",
        "1",
        "--a-setup",
        "true",
        "--b-setup",
        ":",
        "--duration",
        "1s",
        "--out",
        d,
    ]);
    assert!(ok, "ab on a terminal failed: {screen}");
    for side in ["A", "B"] {
        assert!(
            screen.contains(&format!("ab trial 1/1 {side}")),
            "no trial {side}: {screen}"
        );
    }
}

/// Without a terminal the same commands print one plain line per second of each phase and no
/// bar.
#[test]
fn sweep_prints_plain_per_second_lines_without_a_terminal() {
    let _one_at_a_time = testkit::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let args = sweep_args(dir.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains("ETA") && !err.contains('\u{1b}'),
        "a bar without a terminal: {err}"
    );
    // 2 s steps: at least one line per measured second of each step.
    for step in ["step-1", "step-2"] {
        let lines = err
            .lines()
            .filter(|l| l.starts_with(&format!("[{step}] ")))
            .count();
        assert!(lines >= 2, "{step}: {lines} per-second lines in {err}");
    }
}

/// The pod templates (`spec` of a Pod, `spec.template.spec` of a Deployment or Job) of every
/// document in the files `connstorm k8s render` wrote into `dir`, by `kind/name`, and the
/// Namespace documents.
fn rendered_manifests(
    dir: &Path,
) -> (Vec<(String, serde_norway::Value)>, Vec<serde_norway::Value>) {
    use serde::Deserialize;
    let (mut pods, mut namespaces) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for doc in serde_norway::Deserializer::from_str(&text) {
            let v = serde_norway::Value::deserialize(doc).expect("rendered YAML parses");
            let kind = v["kind"].as_str().unwrap_or_default().to_string();
            let name = format!("{kind}/{}", v["metadata"]["name"].as_str().unwrap_or("?"));
            match kind.as_str() {
                "Pod" => pods.push((name, v["spec"].clone())),
                "Deployment" | "Job" => pods.push((name, v["spec"]["template"]["spec"].clone())),
                "Namespace" => namespaces.push(v),
                _ => {}
            }
        }
    }
    (pods, namespaces)
}

/// Every rule of the restricted Pod Security Standard (kubernetes.io/docs/concepts/security/
/// pod-security-standards, "Restricted", and the baseline rules it includes) that a pod spec
/// can break, plus a read-only root filesystem; `host_network_allowed` lets hostNetwork be true
/// (`--host-network`, the documented exception). Returns each broken rule.
fn restricted_violations(
    name: &str,
    spec: &serde_norway::Value,
    host_network_allowed: bool,
) -> Vec<String> {
    let mut bad = Vec::new();
    let pod_sc = &spec["securityContext"];
    for key in ["hostPID", "hostIPC"] {
        if spec[key].as_bool() == Some(true) {
            bad.push(format!("{name}: {key} is true"));
        }
    }
    if spec["hostNetwork"].as_bool() == Some(true) && !host_network_allowed {
        bad.push(format!("{name}: hostNetwork is true"));
    }
    for vol in spec["volumes"].as_sequence().into_iter().flatten() {
        let allowed = [
            "configMap",
            "csi",
            "downwardAPI",
            "emptyDir",
            "ephemeral",
            "persistentVolumeClaim",
            "projected",
            "secret",
        ];
        let types: Vec<&str> = vol
            .as_mapping()
            .unwrap()
            .keys()
            .filter_map(|k| k.as_str())
            .filter(|k| *k != "name")
            .collect();
        if !types.iter().all(|t| allowed.contains(t)) {
            bad.push(format!("{name}: volume type {types:?} is not allowed"));
        }
    }
    let containers: Vec<&serde_norway::Value> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| spec[*k].as_sequence().into_iter().flatten())
        .collect();
    assert!(!containers.is_empty(), "{name}: no containers");
    for c in containers {
        let cname = format!("{name} container {}", c["name"].as_str().unwrap_or("?"));
        let sc = &c["securityContext"];
        // A key the API does not know (a mis-indented `add:` beside `capabilities`) makes the
        // manifest invalid: the container SecurityContext's fields, as of Kubernetes 1.37.
        let known = [
            "allowPrivilegeEscalation",
            "appArmorProfile",
            "capabilities",
            "privileged",
            "procMount",
            "readOnlyRootFilesystem",
            "runAsGroup",
            "runAsNonRoot",
            "runAsUser",
            "seLinuxOptions",
            "seccompProfile",
            "windowsOptions",
        ];
        for key in sc.as_mapping().into_iter().flat_map(|m| m.keys()) {
            let key = key.as_str().unwrap_or("?");
            if !known.contains(&key) {
                bad.push(format!("{cname}: securityContext has unknown key {key:?}"));
            }
        }
        for key in sc["capabilities"]
            .as_mapping()
            .into_iter()
            .flat_map(|m| m.keys())
        {
            let key = key.as_str().unwrap_or("?");
            if key != "add" && key != "drop" {
                bad.push(format!("{cname}: capabilities has unknown key {key:?}"));
            }
        }
        let either = |key: &str| {
            if sc[key].is_null() {
                &pod_sc[key]
            } else {
                &sc[key]
            }
        };
        if sc["privileged"].as_bool() == Some(true) {
            bad.push(format!("{cname}: privileged"));
        }
        if sc["allowPrivilegeEscalation"].as_bool() != Some(false) {
            bad.push(format!("{cname}: allowPrivilegeEscalation is not false"));
        }
        if either("runAsNonRoot").as_bool() != Some(true) {
            bad.push(format!("{cname}: runAsNonRoot is not true"));
        }
        if either("runAsUser").as_u64() == Some(0) {
            bad.push(format!("{cname}: runAsUser is 0"));
        }
        let seccomp = either("seccompProfile")["type"].as_str().unwrap_or("");
        if seccomp != "RuntimeDefault" && seccomp != "Localhost" {
            bad.push(format!("{cname}: seccompProfile.type is {seccomp:?}"));
        }
        let caps = &sc["capabilities"];
        let drop: Vec<&str> = caps["drop"]
            .as_sequence()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .collect();
        if !drop.contains(&"ALL") {
            bad.push(format!("{cname}: capabilities.drop lacks ALL"));
        }
        for add in caps["add"].as_sequence().into_iter().flatten() {
            if add.as_str() != Some("NET_BIND_SERVICE") {
                bad.push(format!("{cname}: capabilities.add has {add:?}"));
            }
        }
        if sc["readOnlyRootFilesystem"].as_bool() != Some(true) {
            bad.push(format!("{cname}: readOnlyRootFilesystem is not true"));
        }
        if c["ports"]
            .as_sequence()
            .into_iter()
            .flatten()
            .any(|p| !p["hostPort"].is_null())
        {
            bad.push(format!("{cname}: hostPort set"));
        }
    }
    bad
}

/// `connstorm k8s render` writes manifests that meet the restricted Pod Security Standard in
/// both shapes (the pod network; `--host-network`, where only the server's hostNetwork departs
/// from it and its namespace says so), and the image they run is built as a non-root user with
/// the toolchain of the workspace's declared rust-version.
#[test]
fn k8s_manifests_meet_the_restricted_pod_security_standard() {
    let tmp = tempfile::tempdir().unwrap();
    for (shape, extra) in [
        ("pod", &[][..]),
        ("host", &["--host-network"][..]),
        ("low-port", &["--port", "443"][..]),
    ] {
        let dir = tmp.path().join(shape);
        let mut args = vec![
            "k8s",
            "render",
            "--clients",
            "4",
            "--target",
            "connstorm-server.connstorm.svc:9000",
            "--rate",
            "20k/s",
            "--out",
            dir.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        stdout_ok(&args);
        let host = shape == "host";
        let (pods, namespaces) = rendered_manifests(&dir);
        assert_eq!(
            pods.len(),
            3,
            "{shape}: the server, the generators and the records pod: {pods:?}"
        );
        let mut bad = Vec::new();
        for (name, spec) in &pods {
            bad.extend(restricted_violations(
                name,
                spec,
                host && name.starts_with("Deployment/"),
            ));
            if name.starts_with("Deployment/") {
                assert_eq!(spec["hostNetwork"].as_bool(), Some(host), "{shape}: {name}");
                let add = &spec["containers"][0]["securityContext"]["capabilities"]["add"];
                let want: &[&str] = if shape == "low-port" {
                    &["NET_BIND_SERVICE"]
                } else {
                    &[]
                };
                let got: Vec<&str> = add
                    .as_sequence()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str())
                    .collect();
                assert_eq!(got, want, "{shape}: {name} capabilities.add");
            }
        }
        assert!(bad.is_empty(), "{shape}: {bad:#?}");
        let labels = &namespaces[0]["metadata"]["labels"];
        assert_eq!(
            labels["pod-security.kubernetes.io/enforce"].as_str(),
            Some(if host { "privileged" } else { "restricted" }),
            "{shape}: {labels:?}"
        );
        assert_eq!(
            labels["pod-security.kubernetes.io/warn"].as_str(),
            Some("restricted")
        );
    }
    // A restricted violation is found (the checker can fail): a spec without any context.
    let bare: serde_norway::Value =
        serde_norway::from_str("containers: [{name: x, image: y}]").unwrap();
    assert!(restricted_violations("Pod/bare", &bare, false).len() >= 5);
    // ... and so is the mis-indented capability that once left `add` beside `capabilities`.
    let misplaced: serde_norway::Value = serde_norway::from_str(
        "containers: [{name: x, securityContext: {capabilities: {drop: [ALL]}, add: [NET_BIND_SERVICE]}}]",
    )
    .unwrap();
    assert!(restricted_violations("Pod/misplaced", &misplaced, false)
        .iter()
        .any(|v| v.contains("unknown key \"add\"")));

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dockerfile = std::fs::read_to_string(root.join("deploy/kubernetes/Dockerfile")).unwrap();
    let user = dockerfile
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("the image sets a USER");
    assert!(
        !user.starts_with("root") && !user.starts_with("0"),
        "USER {user}"
    );
    assert!(
        user.starts_with("10001"),
        "the manifests' runAsUser is 10001: USER {user}"
    );
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let rust_version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("the workspace declares rust-version");
    assert!(
        dockerfile.contains(&format!("FROM rust:{rust_version}-")),
        "the image builds with rust:{rust_version} (Cargo.toml's rust-version)"
    );
}
