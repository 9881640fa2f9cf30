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
    let script = format!(
        r#"f=/proc/sys/net/ipv4/tcp_fin_timeout
echo "before $(cat $f)"
"$BIN" tune apply --file {strict} --state-dir {state}
echo "strict-dry $?"
"$BIN" tune apply --file {strict} --state-dir {state} --yes
echo "strict-yes $? $(cat $f)"
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
            "`connstorm tune apply --file {} --yes` would refuse the whole plan and change nothing",
            strict.display()
        )),
        "{t}"
    );
    assert_eq!(val("strict-yes"), format!("2 {before}"), "{t}");
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
