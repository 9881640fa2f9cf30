//! `connstorm tune` end to end: runs the binary. Anything that changes sysctls runs inside a
//! network namespace created for the test (`unshare -n`), with per-netns keys only, and a
//! `--state-dir` in a tempdir.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_connstorm");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run connstorm")
}

/// Runs a shell script in a fresh network namespace; `$BIN` is the connstorm binary.
fn in_netns(script: &str) -> Output {
    let out = Command::new(testkit::require_tool("unshare", "util-linux"))
        .args(["-n", "sh", "-c", script])
        .env("BIN", BIN)
        .output()
        .expect("run unshare (root is needed to create a network namespace)");
    out
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tuning/tests/fixtures")
}

#[test]
fn check_prints_a_table_for_a_builtin_preset() {
    let o = run(&["tune", "check", "--preset", "c1m-server"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("current") && t.contains("recommended") && t.contains("status"),
        "{t}"
    );
    assert!(
        t.contains("net.core.somaxconn") && t.contains("listen() backlogs"),
        "{t}"
    );
}

#[test]
fn shipped_presets_do_not_contradict_the_rules_table() {
    // A preset that connstorm ships must pass connstorm's own contradiction rules
    // (tuning::rules): e.g. tcp_max_syn_backlog does nothing while tcp_syncookies=1.
    for preset in ["c1m-server", "loadgen-client", "low-latency", "throughput"] {
        let o = run(&["tune", "check", "--preset", preset]);
        let t = text(&o);
        assert!(!t.contains("contradiction:"), "{preset}: {t}");
    }
}

#[test]
fn unknown_preset_and_bad_files_are_bad_input() {
    let o = run(&["tune", "check", "--preset", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("c1m-server"), "{}", text(&o));
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\n[[sysctl]]\nkey = \"net.core.somaxconn\"\nvalue = [1]\nreason = \"r\"\nsource = \"s\"\n").unwrap();
    let o = run(&["tune", "check", "--file", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("bad.toml:4:"), "{}", text(&o));
    let conf = d.path().join("x.conf");
    std::fs::write(&conf, "net.core.somaxconn = 1\n../etc/passwd = 1\n").unwrap();
    let o = run(&["tune", "check", "--file", conf.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("x.conf:2:"), "{}", text(&o));
}

#[test]
fn strict_check_exits_4_when_something_is_off() {
    let d = tempfile::tempdir().unwrap();
    let conf = d.path().join("off.conf");
    std::fs::write(&conf, "net.ipv4.tcp_fin_timeout = 17\n").unwrap();
    let o = in_netns(&format!(
        "\"$BIN\" tune check --file {} --strict",
        conf.display()
    ));
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert!(text(&o).contains("change"));
}

#[test]
fn apply_revert_cycle_in_a_fresh_netns() {
    let d = tempfile::tempdir().unwrap();
    let conf = d.path().join("netns.conf");
    std::fs::write(&conf, "net.ipv4.tcp_fin_timeout = 17\nnet.ipv4.ip_local_port_range = 20000 30000\nnet.core.netdev_max_backlog = 5000\n").unwrap();
    let state = d.path().join("state");
    let script = format!(
        r#"set -e
f=/proc/sys/net/ipv4/tcp_fin_timeout
echo "before $(cat $f)"
"$BIN" tune apply --file {conf} --state-dir {state}
echo "noyes $(cat $f)"
"$BIN" tune apply --file {conf} --state-dir {state} --yes
echo "applied $(cat $f)"
"$BIN" tune revert --state-dir {state}
echo "reverted $(cat $f)"
"$BIN" tune revert --state-dir {state}
echo "again $(cat $f)"
"#,
        conf = conf.display(),
        state = state.display()
    );
    let o = in_netns(&script);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let val = |tag: &str| {
        t.lines()
            .find_map(|l| l.strip_prefix(&format!("{tag} ")))
            .unwrap_or_else(|| panic!("{tag} in {t}"))
            .to_string()
    };
    let before = val("before");
    assert_ne!(before, "17");
    assert_eq!(val("noyes"), before, "without --yes nothing changes");
    assert_eq!(val("applied"), "17");
    assert_eq!(val("reverted"), before);
    assert_eq!(val("again"), before);
    assert!(
        t.contains("refused (global)"),
        "netdev_max_backlog must be refused in a child netns: {t}"
    );
    assert!(
        t.contains("0 restored, 2 already at the saved value"),
        "second revert is a no-op: {t}"
    );
    let snaps: Vec<_> = std::fs::read_dir(&state).unwrap().collect();
    assert_eq!(snaps.len(), 1);
}

#[test]
fn revert_refuses_a_snapshot_from_another_boot_without_force() {
    let d = tempfile::tempdir().unwrap();
    let snap = d.path().join("snapshot-old.json");
    std::fs::write(
        &snap,
        r#"{"format":1,"created_unix_secs":1,"boot_id":"00000000-0000-0000-0000-000000000000","netns":null,"what":"t",
            "saved":[{"kind":"sysctl","key":"net.ipv4.tcp_fin_timeout","value":"42"}]}"#,
    )
    .unwrap();
    let o = in_netns(&format!("\"$BIN\" tune revert {}", snap.display()));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--force"));
    let o = in_netns(&format!(
        "\"$BIN\" tune revert --force {} && cat /proc/sys/net/ipv4/tcp_fin_timeout",
        snap.display()
    ));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).lines().last() == Some("42"),
        "{}",
        text(&o)
    );
}

#[test]
fn export_forms() {
    let o = run(&[
        "tune",
        "export",
        "--preset",
        "loadgen-client",
        "--as",
        "sysctl-d",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let body = String::from_utf8_lossy(&o.stdout).to_string();
    let back = tuning::sysctl::Preset::parse_sysctl_conf(&body, "export.conf").unwrap();
    assert!(back
        .sysctls
        .iter()
        .any(|e| e.key.as_str() == "net.ipv4.ip_local_port_range" && e.value == "1024 65535"));
    let o = run(&["tune", "export", "--preset", "low-latency", "--as", "tuned"]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("[sysctl]") && t.contains("[bootloader]") && t.contains("skew_tick=1"),
        "{t}"
    );
    let o = run(&[
        "tune",
        "export",
        "--preset",
        "low-latency",
        "--as",
        "cmdline",
    ]);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("skew_tick=1 "));
}

#[test]
fn kernel_audit_on_fixture_configs() {
    let k = fixtures().join("kconfig");
    let o = run(&[
        "tune",
        "kernel",
        "--profile",
        "server",
        "--config",
        k.join("server.config").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("CONFIG_HZ") && text(&o).contains("tick 4.0 ms"));
    let o = run(&[
        "tune",
        "kernel",
        "--profile",
        "rt",
        "--strict",
        "--config",
        k.join("server.config").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let o = run(&["tune", "kernel", "--config", "/nonexistent/config"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn doctor_on_a_fixture_root_and_irq_on_a_device_without_queues() {
    let o = run(&[
        "tune",
        "check",
        "--root",
        fixtures().join("vm").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("RLIMIT_NOFILE soft 1,024 hard 20,000"), "{t}");
    assert!(t.contains("ephemeral ports 32768-60999"), "{t}");
    let o = run(&[
        "tune",
        "check",
        "--strict",
        "--root",
        fixtures().join("vm").to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(4),
        "fd limit 1024 is a warning: {}",
        text(&o)
    );
    let o = run(&["tune", "irq", "--dev", "lo", "--plan", "spread"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("no queue IRQs"), "{}", text(&o));
}

/// Finding: `tune irq --cpus 0-1` panicked ("Mismatch between definition and access of
/// `cpus`"): clap took `Option<Vec<usize>>` for one CPU per value while the parser returns the
/// whole list. It must parse and reach the plan (here refused: `lo` has no queue IRQs).
#[test]
fn irq_takes_a_cpu_list_for_per_queue_without_panicking() {
    let o = run(&[
        "tune",
        "irq",
        "--dev",
        "lo",
        "--plan",
        "per-queue",
        "--cpus",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no queue IRQs"), "{}", text(&o));
}

/// A named network namespace (`ip netns add`) for one test, deleted when dropped (also when an
/// assertion fails).
struct NamedNetns(String);

impl NamedNetns {
    fn add(prefix: &str) -> NamedNetns {
        let name = format!("{prefix}-{}", std::process::id());
        let add = Command::new(testkit::require_tool("ip", "iproute2"))
            .args(["netns", "add", &name])
            .output()
            .expect("run ip netns add");
        assert!(add.status.success(), "ip netns add: {}", text(&add));
        NamedNetns(name)
    }

    /// `cat PATH` inside the namespace, trimmed.
    fn read(&self, path: &str) -> String {
        let o = Command::new("ip")
            .args(["netns", "exec", &self.0, "cat", path])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }
}

impl Drop for NamedNetns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.0])
            .output();
    }
}

#[test]
fn apply_and_revert_with_netns_name() {
    let ns = NamedNetns::add("connstorm-test");
    let name = ns.0.clone();
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    let read = || ns.read("/proc/sys/net/ipv4/tcp_fin_timeout");
    let before = read();
    let o = run(&[
        "tune",
        "apply",
        "--preset",
        "loadgen-client",
        "--netns",
        &name,
        "--state-dir",
        state.to_str().unwrap(),
        "--yes",
    ]);
    let applied = read();
    let r = run(&[
        "tune",
        "revert",
        "--netns",
        &name,
        "--state-dir",
        state.to_str().unwrap(),
    ]);
    let after = read();
    let host_fin = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_fin_timeout").unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("plan for ")
            && text(&o)
                .contains(" in a child network namespace (global keys are refused there):\n")
            && text(&o).contains("3 change(s) applied"),
        "{}",
        text(&o)
    );
    let fin: i64 = applied.parse().unwrap();
    assert!(
        fin <= 15,
        "tcp_fin_timeout at most 15 after apply, got {applied}"
    );
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    assert_eq!(after, before);
    assert_eq!(
        host_fin.trim(),
        before,
        "the host namespace was not touched (both at their default)"
    );
    let bad = run(&[
        "tune",
        "apply",
        "--preset",
        "loadgen-client",
        "--netns",
        "../x",
        "--yes",
    ]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn check_json_is_machine_readable() {
    let o = run(&[
        "tune",
        "check",
        "--preset",
        "throughput",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert!(v["prediction"]["writes"].is_array(), "{v}");
    assert!(rows
        .iter()
        .any(|r| r["entry"]["key"] == "net.ipv4.tcp_rmem" && r["status"].is_string()));
    let o = run(&[
        "tune",
        "check",
        "--format",
        "json",
        "--root",
        fixtures().join("vm").to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["topic"] == "limits" && f["severity"] == "warn"));
}

#[test]
fn export_never_lowers_an_at_least_limit_on_a_fixture_root() {
    let vm = fixtures().join("vm");
    let current = std::fs::read_to_string(vm.join("proc/sys/fs/file-max")).unwrap();
    let current = current.trim();
    let o = run(&[
        "tune",
        "export",
        "--preset",
        "c1m-server",
        "--as",
        "sysctl-d",
        "--root",
        vm.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let body = String::from_utf8_lossy(&o.stdout).to_string();
    let back = tuning::sysctl::Preset::parse_sysctl_conf(&body, "export.conf").unwrap();
    let value = |k: &str| {
        back.sysctls
            .iter()
            .find(|e| e.key.as_str() == k)
            .map(|e| e.value.clone())
            .unwrap_or_else(|| panic!("{k} missing from {body}"))
    };
    assert_eq!(value("fs.file-max"), current, "{body}");
    assert!(
        body.contains(&format!("this host has {current}")),
        "the file says why: {body}"
    );
    // Below the recommendation (somaxconn 4096 in the fixture): the preset's value.
    assert_eq!(value("net.core.somaxconn"), "65535");
    let o = run(&[
        "tune",
        "export",
        "--preset",
        "c1m-server",
        "--as",
        "tuned",
        "--root",
        vm.to_str().unwrap(),
    ]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("\nfs.file-max=>2097152\n"),
        "{}",
        text(&o)
    );
}

#[test]
fn export_comments_out_rt_throttling_off() {
    let vm = fixtures().join("vm");
    for (form, line) in [
        ("sysctl-d", "# kernel.sched_rt_runtime_us = -1"),
        ("tuned", "# kernel.sched_rt_runtime_us=-1"),
    ] {
        let o = run(&[
            "tune",
            "export",
            "--preset",
            "low-latency",
            "--as",
            form,
            "--root",
            vm.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let body = String::from_utf8_lossy(&o.stdout);
        assert!(body.lines().any(|l| l == line), "{form}: {body}");
        assert!(
            !body
                .lines()
                .any(|l| !l.starts_with('#') && l.contains("sched_rt_runtime_us")),
            "{form}: {body}"
        );
    }
    let o = run(&[
        "tune",
        "check",
        "--preset",
        "low-latency",
        "--root",
        vm.to_str().unwrap(),
    ]);
    let t = text(&o);
    let row = t
        .lines()
        .find(|l| l.starts_with("kernel.sched_rt_runtime_us"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(row.contains("manual (not applied)"), "{row}");
}

/// Each header's column and the columns of the values under it: every header must start where
/// its values start.
fn assert_headers_over_values(table: &str, headers: &[&str]) {
    let mut lines = table.lines();
    let header = lines.next().unwrap();
    let starts: Vec<usize> = headers
        .iter()
        .map(|h| {
            header
                .find(h)
                .unwrap_or_else(|| panic!("{h:?} not in header {header:?}"))
        })
        .collect();
    let rows: Vec<&str> = lines.collect();
    assert!(!rows.is_empty(), "{table}");
    for row in rows {
        let chars: Vec<char> = row.chars().collect();
        for (h, &s) in headers.iter().zip(&starts).skip(1) {
            let col = header[..s].chars().count();
            assert!(
                chars.get(col).is_some_and(|c| !c.is_whitespace())
                    && chars
                        .get(col - 2..col)
                        .is_some_and(|gap| gap.iter().all(|c| *c == ' ')),
                "column {h:?} (at {col}) does not start a value in {row:?}\n{table}"
            );
        }
    }
}

#[test]
fn kernel_table_headers_sit_over_their_values() {
    let k = fixtures().join("kconfig");
    let o = run(&[
        "tune",
        "kernel",
        "--profile",
        "rt",
        "--config",
        k.join("server.config").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let table: String = out
        .lines()
        .skip(1)
        .take_while(|l| {
            !["info ", "warn ", "error "]
                .iter()
                .any(|s| l.starts_with(s))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_headers_over_values(&table, &["item", "current", "recommended", "status", "why"]);
    let status_col = table.lines().next().unwrap().find("status").unwrap();
    assert!(
        table.lines().skip(1).all(|l| {
            let s: String = l.chars().skip(status_col).take(3).collect();
            s == "ok " || s == "off"
        }),
        "{table}"
    );
}

fn sysctld() -> PathBuf {
    fixtures().join("sysctld")
}

#[test]
fn presets_are_listed_one_line_each() {
    let o = run(&["tune", "presets"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    for (l, name) in lines
        .iter()
        .zip(["c1m-server", "loadgen-client", "low-latency", "throughput"])
    {
        assert!(l.starts_with(name) && l.contains("sysctl(s)"), "{l}");
    }
    let alias = run(&["tune", "list"]);
    assert_eq!(alias.stdout, o.stdout);
}

#[test]
fn no_internal_rust_names_in_output() {
    let k = fixtures().join("kconfig");
    let o = run(&[
        "tune",
        "kernel",
        "--profile",
        "server",
        "--config",
        k.join("server.config").to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(t.contains("for profile server:"), "{t}");
    assert!(!t.contains("Server") && !t.contains("Rt"), "{t}");
}

#[test]
fn system_config_names_the_file_and_line_of_each_value() {
    let host = sysctld().join("host");
    let o = run(&[
        "tune",
        "check",
        "--system",
        "--root",
        host.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    let row = t
        .lines()
        .find(|l| l.starts_with("net.core.somaxconn"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(
        row.contains("32768") && row.contains("usr/lib/sysctl.d/90-cni.conf:2"),
        "{row}"
    );
    assert!(
        row.contains("etc/sysctl.d/50-default.conf:5 (16384)"),
        "{row}"
    );
    assert!(t.contains("is masked"), "{t}");
    assert!(
        t.contains("run/sysctl.d/50-default.conf is shadowed"),
        "{t}"
    );
}

#[test]
fn dry_run_says_what_yes_will_do_including_refusals() {
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    let strict = sysctld().join("02-status-key-strict.conf");
    let dash = sysctld().join("02-status-key.conf");
    // A status key without `-` fails EACCES when written, which systemd-sysctl ignores: plain
    // apply skips it with one line and applies the rest; --strict refuses the whole plan.
    let script = format!(
        r#"f=/proc/sys/net/ipv4/tcp_fin_timeout
echo "before $(cat $f)"
"$BIN" tune apply --file {strict} --state-dir {state} --strict
echo "strict-dry $?"
"$BIN" tune apply --file {strict} --state-dir {state} --strict --yes
echo "strict-yes $? $(cat $f)"
"$BIN" tune apply --file {strict} --state-dir {state} --yes
echo "plain-yes $? $(cat $f)"
"$BIN" tune revert --state-dir {state} >/dev/null
"$BIN" tune apply --file {dash} --state-dir {state}
echo "dash-dry $?"
"$BIN" tune apply --file {dash} --state-dir {state} --yes
echo "dash-yes $? $(cat $f)"
"#,
        strict = strict.display(),
        dash = dash.display(),
        state = state.display()
    );
    let o = in_netns(&script);
    let t = text(&o);
    let val = |tag: &str| {
        t.lines()
            .find_map(|l| l.strip_prefix(&format!("{tag} ")))
            .unwrap_or_else(|| panic!("{tag} in {t}"))
            .to_string()
    };
    let before = val("before");
    assert_ne!(before, "17");
    // Without `-`: the dry run says --yes refuses (exit 2), and --yes does refuse, changing nothing.
    assert_eq!(val("strict-dry"), "2", "{t}");
    assert!(
        t.contains(&format!(
            "`connstorm tune apply --file {} --strict --yes` would refuse the whole plan and change nothing",
            strict.display()
        )),
        "{t}"
    );
    assert_eq!(val("strict-yes"), format!("2 {before}"), "{t}");
    assert_eq!(val("plain-yes"), "0 17", "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("skipped net.netfilter.nf_conntrack_count: ")),
        "{t}"
    );
    // With `-`: the status key is skipped with a note, and --yes writes the other key.
    assert_eq!(val("dash-dry"), "0", "{t}");
    assert!(
        t.contains(&format!(
            "`connstorm tune apply --file {} --yes` would set 1 key(s) (net.ipv4.tcp_fin_timeout = 17)",
            dash.display()
        )),
        "{t}"
    );
    assert_eq!(val("dash-yes"), "0 17", "{t}");
    assert!(t.contains("net.netfilter.nf_conntrack_count"), "{t}");
}

#[test]
fn the_printed_undo_command_works_as_printed() {
    let ns = NamedNetns::add("connstorm-undo");
    let name = ns.0.clone();
    let d = tempfile::tempdir().unwrap();
    let conf = d.path().join("u.conf");
    std::fs::write(&conf, "net.ipv4.tcp_fin_timeout = 23\n").unwrap();
    let state = d.path().join("state");
    let read = || ns.read("/proc/sys/net/ipv4/tcp_fin_timeout");
    let before = read();
    let o = run(&[
        "tune",
        "apply",
        "--file",
        conf.to_str().unwrap(),
        "--netns",
        &name,
        "--state-dir",
        state.to_str().unwrap(),
        "--yes",
    ]);
    let applied = read();
    let t = text(&o);
    let undo = t
        .split("(undo: ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .unwrap_or_else(|| panic!("no undo command in {t}"))
        .to_string();
    let words: Vec<&str> = undo.split_whitespace().collect();
    assert_eq!(&words[..2], ["connstorm", "tune"], "{undo}");
    let r = Command::new(BIN).args(&words[1..]).output().unwrap();
    let after = read();
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert_eq!(applied, "23");
    assert!(undo.contains(&format!("--netns {name}")), "{undo}");
    assert_eq!(r.status.code(), Some(0), "{undo}: {}", text(&r));
    assert_eq!(after, before);
}

#[test]
fn import_turns_a_script_into_a_sysctl_d_file() {
    let o = run(&[
        "tune",
        "import",
        sysctld().join("08-tune.sh").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let body = String::from_utf8_lossy(&o.stdout).to_string();
    let p = tuning::sysctl::Preset::parse_sysctl_conf(&body, "imported.conf").unwrap();
    assert_eq!(p.sysctls.len(), 6, "{body}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("08-tune.sh:9 not imported: ulimit -n 1048576"),
        "{err}"
    );
    assert!(err.contains("6 sysctl write(s) imported"), "{err}");
    let d = tempfile::tempdir().unwrap();
    let none = d.path().join("none.sh");
    std::fs::write(&none, "ulimit -n 4096\n").unwrap();
    let o = run(&["tune", "import", none.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "nothing imported: {}", text(&o));
}

#[test]
fn doctor_reports_capabilities_probed_in_this_process() {
    let o = run(&["tune", "check"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    let line = |name: &str| {
        t.lines()
            .find(|l| l.contains("probe") && l.contains(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no probe line for {name} in {t}"))
            .to_string()
    };
    assert!(line("SO_REUSEPORT").contains("available"));
    assert!(line("SO_INCOMING_CPU").contains("read back CPU"), "{t}");
    let uring = line("io_uring");
    assert!(uring.contains("io_uring_setup"), "{uring}");
}

#[test]
fn rules_table_lists_every_kind_with_a_source() {
    let o = run(&["tune", "rules"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    for kind in [
        "alias ", "legacy ", "status ", "module ", "range ", "harmful ", "needs ",
    ] {
        assert!(t.lines().any(|l| l.starts_with(kind)), "{kind}: {t}");
    }
    assert!(
        t.contains("net.ipv4.tcp_tw_reuse") && t.contains("tcp_twsk_unique"),
        "{t}"
    );
}

/// `--netns NAME` with a glob: the glob expands over the keys of that namespace (its own
/// interfaces), not the caller's; the printed undo command restores them as printed.
#[test]
fn apply_netns_expands_globs_over_the_namespaces_own_interfaces() {
    let ns = NamedNetns::add("connstorm-glob");
    let name = ns.0.clone();
    let d = tempfile::tempdir().unwrap();
    let conf = d.path().join("g.conf");
    std::fs::write(&conf, "net.ipv4.conf.*.rp_filter = 2\n").unwrap();
    let state = d.path().join("state");
    let lo = || ns.read("/proc/sys/net/ipv4/conf/lo/rp_filter");
    let before = lo();
    let o = run(&[
        "tune",
        "apply",
        "--file",
        conf.to_str().unwrap(),
        "--netns",
        &name,
        "--state-dir",
        state.to_str().unwrap(),
        "--yes",
    ]);
    let t = text(&o);
    let applied = lo();
    assert_eq!(o.status.code(), Some(0), "{t}");
    let set: Vec<&str> = t.lines().filter(|l| l.starts_with("set ")).collect();
    // A fresh namespace has only lo: all, default and lo, whatever the caller's interfaces.
    assert_eq!(
        set,
        [
            format!("set net.ipv4.conf.all.rp_filter: {before} -> 2"),
            format!("set net.ipv4.conf.default.rp_filter: {before} -> 2"),
            format!("set net.ipv4.conf.lo.rp_filter: {before} -> 2"),
        ],
        "{t}"
    );
    assert_eq!(applied, "2");
    let undo = t
        .split("(undo: ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .unwrap_or_else(|| panic!("no undo command in {t}"))
        .to_string();
    let words: Vec<&str> = undo.split_whitespace().collect();
    let r = Command::new(BIN).args(&words[1..]).output().unwrap();
    assert_eq!(r.status.code(), Some(0), "{undo}: {}", text(&r));
    assert_eq!(lo(), before);
}

/// Files people pass by mistake: a directory, a FIFO (a plain read would block), a binary
/// file. Each is bad input (exit 2) naming the file (and the line), at once.
#[test]
fn check_refuses_a_directory_a_fifo_and_a_binary_file_naming_them() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("p.conf");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let bin = d.path().join("b.conf");
    std::fs::write(
        &bin,
        b"net.core.somaxconn = 8192\n\x7fELF\x02\x01\x01\xff\n",
    )
    .unwrap();
    for (f, want) in [
        (d.path().to_path_buf(), "is a directory".to_string()),
        (fifo.clone(), "is a FIFO".to_string()),
        (bin.clone(), format!("{}:2: byte 0xff", bin.display())),
    ] {
        let start = std::time::Instant::now();
        let o = run(&["tune", "check", "--file", f.to_str().unwrap()]);
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(&want), "{want}: {}", text(&o));
    }
}

/// Finding: in a child network namespace `tune check` called keys that exist nowhere "refused
/// (global) — global key: not visible in this network namespace", where the host says
/// "missing". Only a key the initial namespace has is global there.
#[test]
fn a_key_missing_everywhere_is_missing_in_a_child_network_namespace_too() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("b.conf");
    std::fs::write(
        &file,
        "net.does.not.exist = 5\nkernel.this_is_bogus = 1\nnet.core.netdev_max_backlog = 5000\n",
    )
    .unwrap();
    let row = |t: &str, key: &str| -> String {
        t.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no row {key} in {t}"))
            .to_string()
    };
    let child = in_netns(&format!("$BIN tune check --file {}", file.display()));
    let t = text(&child);
    assert_eq!(child.status.code(), Some(0), "{t}");
    for key in ["net.does.not.exist", "kernel.this_is_bogus"] {
        let r = row(&t, key);
        assert!(r.contains(" missing ") && !r.contains("global key"), "{r}");
    }
    let r = row(&t, "net.core.netdev_max_backlog");
    assert!(
        r.contains("refused (global)") && r.contains("the initial one has it"),
        "{r}"
    );
    let host = run(&["tune", "check", "--file", file.to_str().unwrap()]);
    let t = text(&host);
    for key in ["net.does.not.exist", "kernel.this_is_bogus"] {
        assert!(row(&t, key).contains(" missing "), "{t}");
    }
}

/// Finding: a line setting a value apply will not write was quoted with the host's current
/// value: "net.ipv4.tcp_max_syn_backlog = 2048 (sd/a.conf:20) has no effect".
#[test]
fn a_contradiction_quotes_the_line_value_not_the_current_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.conf");
    let mut text_of_file: String = (1..20).map(|i| format!("# line {i}\n")).collect();
    text_of_file.push_str("net.ipv4.tcp_max_syn_backlog = 99999999999999999999\n");
    std::fs::write(&file, text_of_file).unwrap();
    // A fresh namespace has SYN cookies on (tcp_syncookies = 1, the kernel default).
    let o = in_netns(&format!(
        "echo 1 > /proc/sys/net/ipv4/tcp_syncookies; echo 2048 > /proc/sys/net/ipv4/tcp_max_syn_backlog; $BIN tune check --file {}",
        file.display()
    ));
    let t = text(&o);
    let line = t
        .lines()
        .find(|l| l.starts_with("contradiction:"))
        .unwrap_or_else(|| panic!("no contradiction in {t}"));
    let origin = format!("{}:20", file.display());
    assert!(
        line.starts_with(&format!(
            "contradiction: net.ipv4.tcp_max_syn_backlog = 99999999999999999999 ({origin}, not applied: rejected; this host keeps 2048) has no effect: it needs net.ipv4.tcp_syncookies = 0, which is 1 (this host);"
        )),
        "{line}"
    );
}

/// The corpus of files people bring (issue 34), as fixtures.
fn corpus() -> PathBuf {
    fixtures().join("sysctld/corpus")
}

/// Every readable file under `/proc/sys/net` of the calling thread's namespace, normalized.
fn net_sysctls() -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let mut dirs = vec![PathBuf::from("/proc/sys/net")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(p);
            } else if let Ok(v) = std::fs::read_to_string(&p) {
                let key = p.strip_prefix("/proc/sys").unwrap().display().to_string();
                out.insert(key, v.split_whitespace().collect::<Vec<_>>().join(" "));
            }
        }
    }
    out
}

/// Runs the command `make` builds in a fresh network namespace **and** a private mount
/// namespace in which every /proc/sys directory but `net` is bind-mounted read-only (so nothing
/// global can change: writes there fail EROFS), and returns its exit code, its output and the
/// `/proc/sys/net` keys whose value it changed (old, new).
#[allow(clippy::type_complexity)]
fn isolated(
    make: impl FnOnce() -> Command + Send + 'static,
) -> (
    Option<i32>,
    String,
    std::collections::BTreeMap<String, (String, String)>,
) {
    std::thread::spawn(move || {
        use nix::mount::{mount, MsFlags};
        use nix::sched::{unshare, CloneFlags};
        unshare(CloneFlags::CLONE_NEWNET | CloneFlags::CLONE_NEWNS)
            .expect("unshare(CLONE_NEWNET | CLONE_NEWNS): run the tests as root");
        // Nothing mounted here propagates to the host.
        mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        )
        .expect("make / private in the test's mount namespace");
        for e in std::fs::read_dir("/proc/sys").unwrap().flatten() {
            if e.file_name() == "net" || !e.file_type().unwrap().is_dir() {
                continue;
            }
            let p = e.path();
            mount(Some(&p), &p, None::<&str>, MsFlags::MS_BIND, None::<&str>).unwrap();
            mount(
                None::<&str>,
                &p,
                None::<&str>,
                MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
                None::<&str>,
            )
            .unwrap();
            let ro = nix::sys::statvfs::statvfs(&p)
                .unwrap()
                .flags()
                .contains(nix::sys::statvfs::FsFlags::ST_RDONLY);
            assert!(ro, "{} must be read-only before anything runs", p.display());
        }
        // A write of the value it has already: refused (EROFS) by the read-only mount.
        let pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
        let e = std::fs::write("/proc/sys/kernel/pid_max", pid_max.trim()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(30), "EROFS: {e}");
        let before = net_sysctls();
        let out = make().output().expect("run the command");
        let after = net_sysctls();
        let changed = after
            .into_iter()
            .filter_map(|(k, v)| {
                let old = before.get(&k)?;
                (*old != v).then(|| (k, (old.clone(), v)))
            })
            .collect();
        (out.status.code(), text(&out), changed)
    })
    .join()
    .unwrap()
}

/// Done-when of issue 34: `tune apply` matches `systemd-sysctl` on the corpus of files people
/// bring. Each file is applied by both, each in its own fresh network namespace and private
/// mount namespace whose /proc/sys (but net) is read-only; for each file the keys written
/// (every /proc/sys/net value that changed, kernel side effects included) and the exit status
/// agree. Expected differences, each documented in docs/tuning.md ("Apply rules"):
/// - connstorm is given `--allow-decrease` (systemd-sysctl lowers limits without asking);
/// - a value the kernel rejects (EINVAL, tw-reuse-3.conf): connstorm refuses the plan before
///   writing anything (exit 2, bad input), systemd-sysctl writes the other lines and exits 1.
#[test]
fn tune_apply_matches_systemd_sysctl_on_the_corpus() {
    let sd = testkit::require_tool("systemd-sysctl", "systemd");
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "conf"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "{files:?}");
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let (sd_path, file) = (sd.clone(), f.clone());
        let (sd_code, sd_out, sd_changed) = isolated(move || {
            let mut c = Command::new(sd_path);
            c.arg(file);
            c
        });
        let state = tempfile::tempdir().unwrap();
        let (state_dir, file) = (state.path().to_path_buf(), f.clone());
        let (cs_code, cs_out, cs_changed) = isolated(move || {
            let mut c = Command::new(BIN);
            c.args(["tune", "apply", "--file"])
                .arg(file)
                .args(["--yes", "--allow-decrease", "--state-dir"])
                .arg(state_dir);
            c
        });
        let both = format!(
            "{name}\nsystemd-sysctl exit {sd_code:?}: {sd_out}\nwrote {sd_changed:#?}\nconnstorm exit {cs_code:?}: {cs_out}\nwrote {cs_changed:#?}"
        );
        if name == "tw-reuse-3.conf" {
            assert_eq!(sd_code, Some(1), "{both}");
            assert_eq!(cs_code, Some(2), "{both}");
            assert!(cs_changed.is_empty(), "{both}");
            assert_eq!(
                sd_changed.keys().collect::<Vec<_>>(),
                ["net/ipv4/tcp_fin_timeout"],
                "{both}"
            );
            continue;
        }
        assert_eq!(sd_code, Some(0), "{both}");
        assert_eq!(cs_code, Some(0), "{both}");
        assert_eq!(sd_changed, cs_changed, "{both}");
        assert!(!cs_changed.is_empty(), "each file writes something: {both}");
    }
}

/// A read-only status key (`fs.file-nr` copied from `sysctl -a`) gets one reason, the same on
/// the host and in a child namespace: it cannot be set, drop the line or prefix it with `-`.
/// Plain apply skips it and the rest applies (systemd-sysctl ignores the EACCES); --strict
/// refuses the plan, and a refused plan no longer also says "1 change(s) planned".
#[test]
fn a_read_only_status_key_has_one_reason_in_every_mode() {
    let f = corpus().join("file-nr.conf");
    let reason = "status key: it reports state and cannot be set (Documentation/admin-guide/sysctl/fs.rst (read-only)): drop the line or prefix it with `-`";
    let row = |t: &str| -> String {
        t.lines()
            .find(|l| l.starts_with("fs.file-nr"))
            .unwrap_or_else(|| panic!("no fs.file-nr row in {t}"))
            .to_string()
    };
    // On the host: a plan only (no --yes), nothing is written.
    let host = run(&["tune", "apply", "--file", f.to_str().unwrap()]);
    let t = text(&host);
    assert_eq!(host.status.code(), Some(0), "{t}");
    assert!(row(&t).contains(reason), "{t}");
    let child = in_netns(&format!(
        "\"$BIN\" tune apply --file {f}; echo \"plain $?\"; \"$BIN\" tune apply --file {f} --strict; echo \"strict $?\"",
        f = f.display()
    ));
    let t = text(&child);
    let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("fs.file-nr")).collect();
    assert_eq!(rows.len(), 2, "{t}");
    assert!(rows.iter().all(|r| r.contains(reason)), "{t}");
    assert!(!t.contains("would affect the whole host"), "{t}");
    assert!(t.contains("plain 0") && t.contains("strict 2"), "{t}");
    assert!(
        t.contains("nothing changed: --yes would refuse this plan because of 1 line(s) above"),
        "{t}"
    );
    assert_eq!(
        t.matches("change(s) planned").count(),
        1,
        "only the plain plan: {t}"
    );
}

/// `tune export --as sysctl-d` of systemd's 50-default.conf keeps the `net.ipv4.conf.*.X` globs
/// and the `-net.ipv4.conf.all.X` exclusions as written (they became this host's interfaces,
/// and the exclusions were dropped).
#[test]
fn export_keeps_the_file_globs_and_exclusions_as_written() {
    let f = corpus().join("50-default.conf");
    let o = run(&[
        "tune",
        "export",
        "--file",
        f.to_str().unwrap(),
        "--as",
        "sysctl-d",
    ]);
    let t = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for line in [
        "net.ipv4.conf.*.rp_filter = 2",
        "-net.ipv4.conf.all.rp_filter",
        "net.ipv4.conf.*.accept_source_route = 0",
        "-net.ipv4.conf.all.accept_source_route",
        "-net.core.default_qdisc = fq_codel",
    ] {
        assert!(t.lines().any(|l| l == line), "{line}: {t}");
    }
    assert!(!t.contains("net.ipv4.conf.lo.rp_filter"), "{t}");
}

/// Explanations that blame the wrong thing: a one-key apply whose only write fails (a value the
/// plan cannot predict the kernel refuses) says "nothing was changed"; it said "restored 1
/// key(s) already changed".
#[test]
fn explanations_that_blame_the_wrong_thing_a_failed_only_write_changed_nothing() {
    let d = tempfile::tempdir().unwrap();
    let conf = d.path().join("r.conf");
    std::fs::write(&conf, "net.ipv4.ip_local_reserved_ports = 70000\n").unwrap();
    let o = in_netns(&format!(
        "\"$BIN\" tune apply --file {} --state-dir {} --yes",
        conf.display(),
        d.path().join("state").display()
    ));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("writing net.ipv4.ip_local_reserved_ports failed: ")
            && t.contains("nothing was changed (no earlier write of this apply to undo)"),
        "{t}"
    );
    assert!(!t.contains("restored 1"), "{t}");
}

/// A child namespace refuses what the host allows, end to end: `tcp_congestion_control` set to
/// an algorithm available but not in the namespace's allowed list is "denied (EPERM)" in the
/// plan with how to allow it; plain apply skips it (exit 0), --strict refuses (exit 2).
#[test]
fn a_child_namespace_refuses_what_the_host_allows_in_the_plan() {
    let allowed = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
        .unwrap_or_default();
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default();
    let Some(algo) = available
        .split_whitespace()
        .find(|a| !allowed.split_whitespace().any(|b| b == *a))
    else {
        eprintln!(
            "skipping: every available algorithm ({available:?}) is allowed ({allowed:?}) here"
        );
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let conf = d.path().join("cc.conf");
    std::fs::write(&conf, format!("net.ipv4.tcp_congestion_control = {algo}\n")).unwrap();
    let o = in_netns(&format!(
        "\"$BIN\" tune apply --file {f} --state-dir {s} --yes; echo \"plain $?\"; \"$BIN\" tune apply --file {f} --strict; echo \"strict $?\"",
        f = conf.display(),
        s = d.path().join("state").display()
    ));
    let t = text(&o);
    assert!(t.contains("denied (EPERM)"), "{t}");
    assert!(
        t.contains(&format!(
            "`{algo}` is not in this namespace's net.ipv4.tcp_allowed_congestion_control ({})",
            allowed.trim()
        )),
        "{t}"
    );
    assert!(t.contains("plain 0") && t.contains("strict 2"), "{t}");
    assert!(
        !t.contains("CAP_SYS_ADMIN"),
        "the EPERM is not a missing privilege: {t}"
    );
}

/// The boot command line against the host: a line written for a 192-CPU machine on a 2-CPU
/// host (a fixture root) gives one line per list naming CPUs the host lacks and one per
/// isolation asked for but not in effect; it gave only the CONFIG_NO_HZ_FULL error.
#[test]
fn the_boot_command_line_against_the_host_is_checked_list_by_list() {
    let d = tempfile::tempdir().unwrap();
    let put = |rel: &str, body: &str| {
        let p = d.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    };
    put(
        "proc/cmdline",
        "BOOT_IMAGE=/vmlinuz isolcpus=managed_irq,domain,1,3-191 nohz_full=1,3-191 rcu_nocbs=1,3-191 irqaffinity=0,2\n",
    );
    put("sys/devices/system/cpu/possible", "0-1\n");
    put("sys/devices/system/cpu/online", "0-1\n");
    put("sys/devices/system/cpu/isolated", "\n");
    put("sys/devices/system/cpu/nohz_full", "(null)\n");
    put("proc/irq/default_smp_affinity", "3\n");
    let config = fixtures().join("kconfig/rt.config");
    let o = run(&[
        "tune",
        "kernel",
        "--profile",
        "rt",
        "--config",
        config.to_str().unwrap(),
        "--root",
        d.path().to_str().unwrap(),
    ]);
    let t = text(&o);
    for want in [
        "isolcpus=1,3-191 names CPU(s) 3-191 that this host does not have (possible CPUs 0-1",
        "nohz_full=1,3-191 names CPU(s) 3-191 that this host does not have",
        "rcu_nocbs=1,3-191 names CPU(s) 3-191 that this host does not have",
        "irqaffinity=0,2 names CPU(s) 2 that this host does not have",
        "isolcpus= asks for CPU(s) 1,3-191 but /sys/devices/system/cpu/isolated does not list them: not in effect",
        "nohz_full= asks for CPU(s) 1,3-191 but /sys/devices/system/cpu/nohz_full does not list them",
    ] {
        assert_eq!(
            t.lines().filter(|l| l.contains(want)).count(),
            1,
            "one line for {want:?}: {t}"
        );
    }
}

/// The boot command line against the host, in the doctor (`tune check --root`, no kernel config
/// to audit): the same line for a 192-CPU machine on the 2-CPU fixture host gives one line per
/// list naming CPUs the host lacks and one per isolation not in effect.
#[test]
fn the_boot_command_line_against_the_host_is_checked_by_the_doctor() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("vm");
    let cp = Command::new("cp")
        .arg("-r")
        .arg(fixtures().join("vm"))
        .arg(&root)
        .status()
        .unwrap();
    assert!(cp.success());
    let put = |rel: &str, body: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    };
    put(
        "proc/cmdline",
        "BOOT_IMAGE=/vmlinuz isolcpus=managed_irq,domain,1,3-191 nohz_full=1,3-191 rcu_nocbs=1,3-191 irqaffinity=0,2\n",
    );
    put("sys/devices/system/cpu/isolated", "\n");
    put("sys/devices/system/cpu/nohz_full", "(null)\n");
    put("proc/irq/default_smp_affinity", "3\n");
    let o = run(&["tune", "check", "--root", root.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    for want in [
        "isolcpus=1,3-191 names CPU(s) 3-191 that this host does not have (possible CPUs 0-1",
        "nohz_full=1,3-191 names CPU(s) 3-191 that this host does not have",
        "rcu_nocbs=1,3-191 names CPU(s) 3-191 that this host does not have",
        "irqaffinity=0,2 names CPU(s) 2 that this host does not have",
        "isolcpus= asks for CPU(s) 1,3-191 but /sys/devices/system/cpu/isolated does not list them: not in effect",
        "nohz_full= asks for CPU(s) 1,3-191 but /sys/devices/system/cpu/nohz_full does not list them",
    ] {
        assert_eq!(
            t.lines().filter(|l| l.contains(want)).count(),
            1,
            "one line for {want:?}: {t}"
        );
    }
}

/// Per-namespace keys called global, end to end: Kubernetes' k8s.conf applied with `--netns`
/// writes `net.bridge.bridge-nf-call-iptables` (and ip6tables) in the namespace, where the
/// kernel keeps a copy of its own; the host keeps its value. It was "refused (global)": "would
/// affect the whole host".
#[test]
fn per_namespace_keys_called_global_are_applied_with_netns() {
    let path = "/proc/sys/net/bridge/bridge-nf-call-iptables";
    let path6 = "/proc/sys/net/bridge/bridge-nf-call-ip6tables";
    if !Path::new(path).exists() {
        eprintln!("skipping: module br_netfilter is not loaded here ({path} is absent); this test loads no module");
        return;
    }
    let host = || [path, path6].map(|p| std::fs::read_to_string(p).unwrap().trim().to_string());
    let host_before = host();
    let ns = NamedNetns::add("connstorm-k8s");
    let zero = Command::new("ip")
        .args(["netns", "exec", &ns.0, "sh", "-c"])
        .arg(format!("echo 0 > {path} && echo 0 > {path6}"))
        .output()
        .unwrap();
    assert!(zero.status.success(), "{}", text(&zero));
    let d = tempfile::tempdir().unwrap();
    let f = corpus().join("k8s.conf");
    let o = run(&[
        "tune",
        "apply",
        "--file",
        f.to_str().unwrap(),
        "--netns",
        &ns.0,
        "--state-dir",
        d.path().join("state").to_str().unwrap(),
        "--yes",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        !t.contains("whole host") && !t.contains("refused (global)"),
        "{t}"
    );
    assert_eq!(ns.read(path), "1", "{t}");
    assert_eq!(ns.read(path6), "1", "{t}");
    assert_eq!(host(), host_before, "the host kept its values: {t}");
}

/// A sysfs/procfs tree of 2 sockets × 48 cores × 2 threads (siblings adjacent: CPUs 2k and 2k+1
/// share a core), one NUMA node per socket, CPUs 1 and 3-191 isolated: only 0 and 2 keep house.
fn two_socket_192(root: &Path) {
    let put = |rel: &str, text: String| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    for cpu in 0..192usize {
        let core = cpu / 2;
        let base = format!("sys/devices/system/cpu/cpu{cpu}/topology");
        put(&format!("{base}/core_id"), format!("{}\n", core % 48));
        put(
            &format!("{base}/physical_package_id"),
            format!("{}\n", core / 48),
        );
        put(
            &format!("{base}/thread_siblings_list"),
            format!("{}-{}\n", core * 2, core * 2 + 1),
        );
    }
    put("sys/devices/system/cpu/online", "0-191\n".into());
    put("sys/devices/system/cpu/isolated", "1,3-191\n".into());
    put("sys/devices/system/node/node0/cpulist", "0-95\n".into());
    put("sys/devices/system/node/node1/cpulist", "96-191\n".into());
    put(
        "proc/cmdline",
        "BOOT_IMAGE=/vmlinuz isolcpus=managed_irq,domain,1,3-191 irqaffinity=0,2\n".into(),
    );
    put(
        "proc/self/status",
        "Name:\tx\nCpus_allowed_list:\t0-191\n".into(),
    );
}

/// EDGES, CPU lists (offline CPUs, CPUs outside the allowed set): an isolated list naming only
/// CPUs a worker cannot use (offline, or outside this process's cpuset) is nothing isolated, as
/// the planner and `scale` count it: `tune placement` on such a 2-usable-CPU host plans with no
/// housekeeping core (as with nothing isolated), where it refused (exit 2, without the
/// --housekeeping-cores 0 fix).
#[test]
fn tune_placement_counts_only_usable_cpus_as_isolated() {
    for (online, isolated, allowed) in [
        ("0-1", "5\n", "0-1"),
        ("0-3", "2-3\n", "0-1"),
        ("0-1", "", "0-1"),
    ] {
        let d = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: String| {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        for cpu in 0..4usize {
            let base = format!("sys/devices/system/cpu/cpu{cpu}/topology");
            put(&format!("{base}/core_id"), format!("{cpu}\n"));
            put(&format!("{base}/physical_package_id"), "0\n".into());
            put(&format!("{base}/thread_siblings_list"), format!("{cpu}\n"));
        }
        put("sys/devices/system/cpu/online", format!("{online}\n"));
        put("sys/devices/system/cpu/isolated", isolated.into());
        put("sys/devices/system/node/node0/cpulist", "0-3\n".into());
        put(
            "proc/self/status",
            format!("Name:\tx\nCpus_allowed_list:\t{allowed}\n"),
        );
        let o = run(&["tune", "placement", "--root", d.path().to_str().unwrap()]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "isolated {isolated:?}: {t}");
        assert!(
            t.contains("0 housekeeping core(s) set aside instead of 1"),
            "isolated {isolated:?}: {t}"
        );
    }
}

/// `tune placement` on a fake 2×96-core layout, as a new user would try it: which CPUs serve,
/// load and keep house, per node and SMT sibling set, and why; the JSON form has every CPU's
/// role; `scale --dry-run` on the same tree prints each step's CPUs, node 0 first.
#[test]
fn tune_placement_shows_a_two_socket_layout_before_running() {
    let d = tempfile::tempdir().unwrap();
    two_socket_192(d.path());
    let root = d.path().to_str().unwrap();
    let o = run(&[
        "tune",
        "placement",
        "--root",
        root,
        "--server-workers",
        "16",
        "--load-workers",
        "32",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("machine: 192 online CPU(s)"), "{t}");
    assert!(t.contains("asked: 16 server + 32 load worker(s)"), "{t}");
    assert!(t.contains("housekeeping"), "{t}");
    assert!(t.contains("node 0 (CPUs 0-95)"), "per node: {t}");
    assert!(t.contains("node 1 (CPUs 96-191)"), "per node: {t}");
    assert!(
        t.contains("SMT sibling sets in use:"),
        "per sibling set: {t}"
    );
    assert!(t.contains("\nwhy:"), "{t}");
    let o = run(&[
        "tune",
        "placement",
        "--root",
        root,
        "--server-workers",
        "16",
        "--load-workers",
        "32",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids = |v: &serde_json::Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    let (server, load, hk) = (
        ids(&j["placement"]["server"]),
        ids(&j["placement"]["load"]),
        ids(&j["placement"]["housekeeping"]),
    );
    assert_eq!((server.len(), load.len()), (16, 32));
    assert_eq!(hk, [0, 2], "the CPUs nothing isolates keep house");
    assert!(server.iter().all(|c| !load.contains(c) && !hk.contains(c)));
    // One worker per physical core: no two workers on one sibling pair.
    let mut cores: Vec<u64> = server.iter().chain(&load).map(|c| c / 2).collect();
    cores.sort_unstable();
    cores.dedup();
    assert_eq!(cores.len(), 48);
    let roles = j["cpus"].as_array().unwrap();
    assert_eq!(roles.len(), 192);
    for r in roles {
        let cpu = r["cpu"].as_u64().unwrap();
        let want = if server.contains(&cpu) {
            "server"
        } else if load.contains(&cpu) {
            "load"
        } else if hk.contains(&cpu) {
            "housekeeping"
        } else {
            r["role"].as_str().unwrap()
        };
        assert_eq!(r["role"], want, "{r}");
        assert!(!r["why"].as_str().unwrap().is_empty(), "{r}");
        assert_eq!(r["node"].as_u64().unwrap(), cpu / 96, "{r}");
    }
    // The scale plan of the same machine, before running anything.
    let o = run(&["scale", "--dry-run", "--root", root, "--shape", "together"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("housekeeping: 0,2"), "{t}");
    assert!(t.contains("server CPUs") && t.contains("load CPUs"), "{t}");
    // Too many workers: the error names what it had and wanted, and options that exist.
    let o = run(&[
        "tune",
        "placement",
        "--root",
        root,
        "--server-workers",
        "100",
        "--load-workers",
        "100",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("200 worker CPU(s) wanted"), "{t}");
    assert!(
        t.contains("fewer --server-workers or --load-workers"),
        "{t}"
    );
    assert!(t.contains("--smt"), "SMT is on and not allowed yet: {t}");
}

/// `tune snapshot-topology` on this host, read back with `--root`: the same placement as this
/// host's own.
#[test]
fn a_topology_snapshot_reads_back_as_the_same_placement() {
    let d = tempfile::tempdir().unwrap();
    let snap = d.path().join("snap");
    let o = run(&["tune", "snapshot-topology", "--out", snap.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("tune placement --root"), "{}", text(&o));
    let here = run(&[
        "tune",
        "placement",
        "--format",
        "json",
        "--housekeeping-cores",
        "0",
    ]);
    let there = run(&[
        "tune",
        "placement",
        "--format",
        "json",
        "--housekeeping-cores",
        "0",
        "--root",
        snap.to_str().unwrap(),
    ]);
    assert_eq!(here.status.code(), Some(0), "{}", text(&here));
    assert_eq!(there.status.code(), Some(0), "{}", text(&there));
    assert_eq!(
        String::from_utf8_lossy(&here.stdout),
        String::from_utf8_lossy(&there.stdout)
    );
    // A second snapshot into the same directory is refused, the first kept.
    let o = run(&["tune", "snapshot-topology", "--out", snap.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// Absurd sizes and bad values on `scale --dry-run` and `tune placement` (EDGES: absurd
/// sizes; refused up front, exit 2, never a panic), on the fake 2×96-core tree:
/// - `scale --shape fixed-server --server-cores 0` planned "server CPUs none" and exited 0
///   (a real run then failed once its first step had begun);
/// - `--dry-run` said yes to a `--plot` and `--label` the real run refuses;
/// - a huge `--server-cores` suggested "--server-cores 18446744073709551613 or fewer";
/// - `tune placement --server-workers 18446744073709551615 --load-workers 1` panicked
///   (the sum wrapped).
#[test]
fn absurd_sizes_in_scale_and_placement_are_bad_input() {
    let d = tempfile::tempdir().unwrap();
    two_socket_192(d.path());
    let root = d.path().to_str().unwrap();
    let dry = ["scale", "--dry-run", "--root", root];
    let refused = |extra: &[&str], want: &str| {
        let args: Vec<&str> = dry.iter().chain(extra).copied().collect();
        let o = run(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains(want), "{args:?}: {t}");
        assert!(!t.contains("panicked"), "{args:?}: {t}");
    };
    refused(
        &["--shape", "fixed-server", "--server-cores", "0"],
        "--server-cores 0: the fixed server needs at least one core",
    );
    refused(
        &["--shape", "together", "--plot", "x.gif"],
        "name the picture FILE.svg or FILE.png",
    );
    refused(
        &["--shape", "together", "--label", "a\u{7}b"],
        "control character",
    );
    let o = run(&[
        "scale",
        "--dry-run",
        "--root",
        root,
        "--shape",
        "fixed-server",
        "--server-cores",
        "18446744073709551615",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(!t.contains("18446744073709551613"), "{t}");
    // 96 worker CPUs (one per physical core, the plan lists them), less two load steps.
    assert!(t.contains("give --server-cores 94 or fewer"), "{t}");
    let o = run(&[
        "tune",
        "placement",
        "--root",
        root,
        "--server-workers",
        "18446744073709551615",
        "--load-workers",
        "1",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(!t.contains("panicked"), "{t}");
    assert!(t.contains("worker CPU(s) wanted"), "{t}");
}

/// Missing permissions: `scale --netns` and `bench --netns` as an unprivileged user (nobody,
/// via setpriv) are refused before anything runs (exit 2, naming CAP_SYS_ADMIN); they exited 1
/// from `ip netns add`, `scale` after its first step had begun.
#[test]
fn missing_permissions_netns_as_nobody_is_refused_up_front() {
    let setpriv = testkit::require_tool("setpriv", "util-linux");
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: setpriv --reuid needs root");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    for args in [
        &[
            "scale", "--netns", "--shape", "together", "--pairs", "shared",
        ][..],
        &["bench", "--netns", "--duration", "1s"],
    ] {
        let o = Command::new(&setpriv)
            .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_connstorm"))
            .args(args)
            .arg("--out")
            .arg(d.path())
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains("--netns needs CAP_SYS_ADMIN"), "{args:?}: {t}");
        assert!(!t.contains("[scale]"), "no step began: {t}");
    }
}

/// EDGES: `tune placement --server-workers 0` is a load-only host (as `bench --target
/// HOST:PORT --load-cpus auto` places its workers): exit 0 with a note that says so; both
/// sides at 0 place nothing and are refused with exit 2.
#[test]
fn a_placement_with_no_server_workers_is_a_load_only_host_and_none_at_all_is_refused() {
    let d = tempfile::tempdir().unwrap();
    two_socket_192(d.path());
    let root = d.path().to_str().unwrap();
    let o = run(&[
        "tune",
        "placement",
        "--root",
        root,
        "--server-workers",
        "0",
        "--load-workers",
        "8",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("placement: server none · load "), "{t}");
    assert!(t.contains("asked: 0 server + 8 load worker(s)"), "{t}");
    assert!(
        t.contains("note: --server-workers 0: a load-only host (as `bench --target HOST:PORT --load-cpus auto` places it"),
        "{t}"
    );
    let o = run(&[
        "tune",
        "placement",
        "--root",
        root,
        "--server-workers",
        "0",
        "--load-workers",
        "0",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        err.contains("--server-workers 0 and --load-workers 0: nothing to place"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

/// EDGES: a snapshot whose `online` file is empty, or whose SMT sibling lists disagree, is
/// refused (exit 2) naming the file and what is wrong, not planned on.
#[test]
fn a_malformed_topology_snapshot_is_refused_naming_the_file_and_the_fault() {
    let d = tempfile::tempdir().unwrap();
    two_socket_192(d.path());
    let root = d.path().to_str().unwrap();
    let cpu = d.path().join("sys/devices/system/cpu");
    std::fs::write(cpu.join("online"), "\n").unwrap();
    let o = run(&["tune", "placement", "--root", root]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        err.contains("sys/devices/system/cpu/online: lists no CPU"),
        "{err}"
    );
    std::fs::write(cpu.join("online"), "0-191\n").unwrap();
    // CPU 1 says its core is 1-2, while CPU 0 says 0-1 (and CPU 2 says 2-3).
    std::fs::write(cpu.join("cpu1/topology/thread_siblings_list"), "1-2\n").unwrap();
    for args in [
        vec!["tune", "placement", "--root", root],
        vec!["scale", "--dry-run", "--root", root],
    ] {
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            err.contains("cpu0/topology/thread_siblings_list: lists SMT siblings 0-1 but")
                && err.contains(
                    "cpu1/topology/thread_siblings_list lists 1-2: sibling lists must agree"
                ),
            "{args:?}: {err}"
        );
    }
}

/// Files people bring, as outputs: `tune apply --yes` with a `--state-dir` where no snapshot
/// can be written printed its plan, then exited 1 with the OS error said three times. Refused
/// first now (exit 2, one line naming `--state-dir`), and nothing changed (in a fresh netns).
#[test]
fn files_people_bring_a_state_dir_where_no_snapshot_can_be_written_is_refused_first() {
    let d = tempfile::tempdir().unwrap();
    let conf = d.path().join("netns.conf");
    std::fs::write(&conf, "net.ipv4.tcp_fin_timeout = 17\n").unwrap();
    let file = d.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let script = format!(
        r#"f=/proc/sys/net/ipv4/tcp_fin_timeout
echo "before $(cat $f)"
"$BIN" tune apply --file {conf} --state-dir /proc/connstorm-state --yes 2>&1
echo "rc $?"
"$BIN" tune apply --file {conf} --state-dir {file}/state --yes 2>&1
echo "rc $?"
echo "after $(cat $f)"
"#,
        conf = conf.display(),
        file = file.display()
    );
    let o = in_netns(&script);
    let t = text(&o);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 6, "{t}");
    assert!(
        lines[1].starts_with(
            "connstorm: error: --state-dir /proc/connstorm-state: cannot write in /proc ("
        ),
        "{t}"
    );
    assert_eq!(
        lines[3],
        format!(
            "connstorm: error: --state-dir {f}/state: {f} is not a directory: give a directory for snapshots",
            f = file.display()
        ),
        "{t}"
    );
    assert_eq!((lines[2], lines[4]), ("rc 2", "rc 2"), "{t}");
    assert_eq!(
        lines[0].replace("before", "after"),
        lines[5],
        "nothing changed: {t}"
    );
}
