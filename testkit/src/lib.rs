//! Test support shared by the workspace's integration tests (a dev-dependency only; never linked
//! into the `connstorm` binary).
//!
//! What lives here:
//! - [`exclusive`]: a process-wide lock that serialises the tests which assert a rate, a latency
//!   bound or a timing, and the tests which saturate a CPU, within one test binary;
//! - [`require_tool`]: find a system tool (`ip`, `nft`, ...) or fail with one line naming the
//!   package to install;
//! - [`stderr`] and [`json`]: a finished command's stderr as text and its stdout as the JSON
//!   report it printed;
//! - [`Piped`]: a child process whose stdout and stderr are read while it runs;
//! - [`numa`]: the NUMA node of a page and of a CPU (where per-worker memory landed);
//! - [`NetNs`]: run a closure on a thread that lives in a **fresh network namespace**
//!   (`unshare(CLONE_NEWNET)`, see unshare(2) and network_namespaces(7)), with `lo` up.
//!
//! In such a namespace a test can count the kernel's TCP counters
//! (`/proc/thread-self/net/snmp`, `/proc/thread-self/net/netstat`) without any other traffic on
//! the machine adding to them, and change per-namespace sysctls (`net.ipv4.*`,
//! `net.core.somaxconn`) without touching the host.
//!
//! Threads spawned from inside the closure inherit the namespace (clone(2) copies the caller's
//! nsproxy), and so do child processes started with `std::process::Command`. The namespace is freed
//! by the kernel when its last thread and socket are gone.
//!
//! Namespaces are per thread, and `/proc/net` is a link to `/proc/self/net` (the *main* thread's
//! namespace), so counters must be read through `/proc/thread-self/net/...`, as these helpers do.

pub mod numa;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The lock behind [`exclusive`].
static EXCLUSIVE: Mutex<()> = Mutex::new(());

/// Takes the process-wide test lock and returns its guard; hold it (`let _x = testkit::exclusive();`)
/// for the whole test.
///
/// Take it in every test that asserts a rate, a latency bound or a timing, and in every test that
/// saturates a CPU (an overloaded generator, a flood of connects): `cargo test` runs the tests of
/// one binary on parallel threads, the load tests pin their workers to the same CPUs, and a test
/// asserting ±1% of a rate fails when another one saturates its CPU meanwhile. Tests that only
/// check behaviour (bad input, exact counts without a time bound) need not take it and keep
/// running in parallel.
///
/// The lock is per process, and each test binary is its own process: `cargo test` runs the test
/// binaries one after another (never two at once), so a lock covering the tests of one binary is
/// all that is needed. Tests in a binary that run child processes (`connstorm bench`, ...) hold it
/// while the child runs.
///
/// Poison-tolerant: a test that panicked while holding it (a failed assertion) does not fail the
/// tests after it.
#[must_use = "the lock is released when the guard is dropped: bind it (`let _x = ...`)"]
pub fn exclusive() -> MutexGuard<'static, ()> {
    EXCLUSIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Directories searched after `PATH`: where packages install tools that are not meant to be on
/// `PATH` (Debian's `systemd` installs `/usr/lib/systemd/systemd-sysctl`).
pub const TOOL_DIRS_OUTSIDE_PATH: &[&str] = &["/usr/lib/systemd", "/lib/systemd"];

/// The path of the system tool `name` (searched in `PATH`, like a shell does, then in
/// [`TOOL_DIRS_OUTSIDE_PATH`]), for `Command::new(testkit::require_tool("nft", "nftables"))`.
///
/// Tests install nothing: README's test command, `scripts/test.sh`, installs the package of every
/// tool in its table when the tool is missing (`.ci/run` runs that script), and
/// `tools_table_lists_every_required_tool` checks that every call names a tool of that table.
///
/// # Panics
/// With one line naming the Debian/Ubuntu package to install when no executable `name` is on
/// `PATH` or in [`TOOL_DIRS_OUTSIDE_PATH`], e.g. "this test needs `nft`, which is not on PATH: install the nftables package
/// (apt-get install nftables)". A test never skips itself silently.
pub fn require_tool(name: &str, package: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(TOOL_DIRS_OUTSIDE_PATH.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| {
            panic!(
                "this test needs `{name}`, which is not on PATH: install the {package} package \
                 (apt-get install {package})"
            )
        })
}

/// A handle to the network namespace the current test thread runs in (see [`NetNs::run`]).
#[derive(Debug)]
pub struct NetNs {
    _private: (),
}

impl NetNs {
    /// Runs `f` on a new thread inside a fresh network namespace with `lo` up, and returns its
    /// result.
    ///
    /// # Panics
    /// Panics with a message that says how to fix it when the namespace cannot be created
    /// (needs root or CAP_SYS_ADMIN) or `lo` cannot be brought up (needs iproute2's `ip`), and
    /// re-raises a panic from `f`. A test never skips itself silently.
    pub fn run<T: Send + 'static>(f: impl FnOnce(&NetNs) -> T + Send + 'static) -> T {
        let handle = std::thread::Builder::new()
            .name("netns-test".into())
            .spawn(move || {
                if let Err(e) = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET) {
                    panic!(
                        "unshare(CLONE_NEWNET) failed: {e}; these tests need root or CAP_SYS_ADMIN \
                         to create a network namespace (run them as root, e.g. in CI)"
                    );
                }
                let out = Command::new(require_tool("ip", "iproute2"))
                    .args(["link", "set", "lo", "up"])
                    .output()
                    .unwrap_or_else(|e| panic!("cannot run `ip link set lo up`: {e}"));
                assert!(
                    out.status.success(),
                    "`ip link set lo up` failed in the test namespace: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let ns = NetNs { _private: () };
                f(&ns)
            })
            .expect("spawn netns test thread");
        match handle.join() {
            Ok(v) => v,
            Err(p) => std::panic::resume_unwind(p),
        }
    }

    /// All counters of this namespace, keyed `"Tcp.ActiveOpens"`, `"TcpExt.ListenOverflows"`,
    /// `"Ip.InReceives"`, ... (from /proc/thread-self/net/snmp and .../netstat, plus
    /// `"softnet.*"` and `"nf_conntrack.*"` where present), parsed by
    /// [`common::counters::Snapshot`] (re-exported as `tuning::counters`)
    /// — the same parser the binary uses for its cross-checks.
    ///
    /// # Panics
    /// If the files cannot be read or parsed (they always exist on Linux with CONFIG_PROC_FS).
    pub fn counters(&self) -> BTreeMap<String, i64> {
        common::counters::Snapshot::read_current()
            .unwrap_or_else(|e| panic!("read this namespace's TCP counters: {e}"))
            .counters
    }

    /// One counter, e.g. `counter("Tcp.PassiveOpens")`.
    ///
    /// # Panics
    /// If the counter does not exist on this kernel.
    pub fn counter(&self, name: &str) -> i64 {
        *self.counters().get(name).unwrap_or_else(|| {
            panic!("no counter {name} in /proc/thread-self/net/{{snmp,netstat}}")
        })
    }

    /// Writes a per-namespace sysctl, e.g. `set_sysctl("net.ipv4.ip_local_port_range", "40000 40009")`.
    ///
    /// # Panics
    /// If the write fails (unknown key, global key, bad value).
    pub fn set_sysctl(&self, key: &str, value: &str) {
        let path = sysctl_path(key);
        std::fs::write(&path, value).unwrap_or_else(|e| panic!("write {value:?} to {path}: {e}"));
    }

    /// Reads a sysctl of this namespace, trimmed.
    ///
    /// # Panics
    /// If the key does not exist.
    pub fn sysctl(&self, key: &str) -> String {
        let path = sysctl_path(key);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {path}: {e}"))
            .trim()
            .to_string()
    }
}

/// The `/proc/sys` file of a dotted key, as sysctl(8) reads it: `.` separates, a `/` inside a
/// component stands for a dot in a name (`net.ipv4.conf.eth0/200.forwarding` is
/// `/proc/sys/net/ipv4/conf/eth0.200/forwarding`).
fn sysctl_path(key: &str) -> String {
    let parts: Vec<String> = key.split('.').map(|c| c.replace('/', ".")).collect();
    format!("/proc/sys/{}", parts.join("/"))
}

/// CPUs this process may run on (from sched_getaffinity(2)), ascending. Tests pin workers to these.
pub fn allowed_cpus() -> Vec<usize> {
    common::cpulist::usable()
}

/// A finished command's stderr, as (lossy) text.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The sum of a JSON report's `failures` object (`total` is the report's `total` or a phase):
/// every failure class counted once.
///
/// # Panics
/// When `failures` is not an object of counts.
pub fn failures_total(total: &serde_json::Value) -> u64 {
    total["failures"]
        .as_object()
        .expect("a `failures` object")
        .values()
        .map(|v| v.as_u64().expect("a failure count"))
        .sum()
}

/// A finished command's stdout parsed as the JSON report it printed.
///
/// # Panics
/// When stdout is not JSON: the message shows stdout and stderr.
pub fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "JSON report ({e}): {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    })
}

/// A spawned child whose stdout and stderr are read on their own threads as they come, so a
/// child that writes more than a pipe holds (64 KiB, pipe(7)) never blocks while the test waits
/// for it to exit. (A test that polled `try_wait` and read stdout only after the exit hung on
/// `bench --format json`, whose record outgrew the pipe.)
pub struct Piped {
    child: std::process::Child,
    out: Option<std::thread::JoinHandle<Vec<u8>>>,
    err: std::sync::Arc<Mutex<Vec<String>>>,
    err_thread: Option<std::thread::JoinHandle<()>>,
}

impl Piped {
    /// Spawns `cmd` with stdout and stderr piped (stdin: null) and starts the readers.
    ///
    /// # Panics
    /// If the child cannot be spawned.
    pub fn spawn(cmd: &mut Command) -> Piped {
        use std::io::{BufRead, Read};
        use std::process::Stdio;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        let mut stdout = child.stdout.take().expect("piped stdout");
        let out = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = stdout.read_to_end(&mut v);
            v
        });
        let stderr = child.stderr.take().expect("piped stderr");
        let err = std::sync::Arc::new(Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&err);
        let err_thread = std::thread::spawn(move || {
            for l in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                sink.lock().unwrap_or_else(PoisonError::into_inner).push(l);
            }
        });
        Piped {
            child,
            out: Some(out),
            err,
            err_thread: Some(err_thread),
        }
    }

    /// The child's PID.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The stderr lines read so far.
    pub fn stderr_lines(&self) -> Vec<String> {
        self.err
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The exit status if the child has ended, without waiting.
    ///
    /// # Panics
    /// If waitpid(2) fails.
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("try_wait")
    }

    /// Waits at most `limit` for the exit; returns the exit code (`None`: killed by a signal),
    /// all of stdout and all of stderr.
    ///
    /// # Panics
    /// When the child runs past `limit` (it is killed first; the message shows its stderr).
    pub fn wait(mut self, limit: std::time::Duration) -> (Option<i32>, String, String) {
        let deadline = std::time::Instant::now() + limit;
        let status = loop {
            if let Some(s) = self.try_wait() {
                break s;
            }
            if std::time::Instant::now() > deadline {
                self.kill();
                panic!(
                    "child {} did not end within {limit:?}: {:?}",
                    self.child.id(),
                    self.stderr_lines()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let out = self.out.take().map(|t| t.join().unwrap_or_default());
        if let Some(t) = self.err_thread.take() {
            let _ = t.join();
        }
        (
            status.code(),
            String::from_utf8_lossy(&out.unwrap_or_default()).into_owned(),
            self.stderr_lines().join("\n"),
        )
    }

    /// Kills the child (SIGKILL) if it still runs and reaps it.
    pub fn kill(&mut self) {
        if self.try_wait().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `run(segment, start_at)` for the segments `0/n` … `(n-1)/n` of one run at once, each
/// on its own thread, all with one `--start-at` instant (RFC 3339, 1.5 s from now): `merge`
/// takes records only when they overlap in time, and a relative `+1s` would start each one a
/// second after its own spawn. Returns the results in segment order.
///
/// # Panics
/// If a `run` panics.
pub fn segments_at_one_instant<T: Send>(n: usize, run: impl Fn(&str, &str) -> T + Sync) -> Vec<T> {
    let start_at = humantime::format_rfc3339_millis(
        std::time::SystemTime::now() + std::time::Duration::from_millis(1500),
    )
    .to_string();
    let segments: Vec<String> = (0..n).map(|i| format!("{i}/{n}")).collect();
    std::thread::scope(|s| {
        let runs: Vec<_> = segments
            .iter()
            .map(|seg| {
                let (run, start_at) = (&run, &start_at);
                s.spawn(move || run(seg, start_at))
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    })
}

/// The record files in `dir`, sorted by name (the names start with the run's start instant, then
/// the segment).
///
/// # Panics
/// If `dir` cannot be read.
pub fn record_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// `connstorm merge FILES -o OUT` through `cmd` (the binary under test), asserting exit 0;
/// returns the merged record as JSON.
///
/// # Panics
/// If merge fails or its output is not JSON.
pub fn merge(mut cmd: Command, files: &[PathBuf], out: &std::path::Path) -> serde_json::Value {
    let m = cmd
        .arg("merge")
        .args(files)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run connstorm merge");
    assert_eq!(m.status.code(), Some(0), "{}", stderr(&m));
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).expect("merged record is JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn require_tool_finds_a_tool_on_path_and_names_the_package_of_a_missing_one() {
        let sh = require_tool("sh", "dash");
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
        let missing = std::panic::catch_unwind(|| {
            require_tool("connstorm-no-such-tool", "connstorm-test-package")
        })
        .expect_err("a missing tool panics");
        let msg = missing
            .downcast_ref::<String>()
            .expect("a formatted message");
        assert!(
            msg.contains("`connstorm-no-such-tool`")
                && msg.contains("install the connstorm-test-package package")
                && !msg.contains('\n'),
            "{msg}"
        );
    }

    /// Every `require_tool` call in the workspace names a `tool:package` pair of
    /// scripts/test.sh's table, so README's test command installs what a test runs on a fresh
    /// machine (a tool the table lacks would fail its test there, one line naming the package).
    #[test]
    fn tools_table_lists_every_required_tool() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let script =
            std::fs::read_to_string(root.join("scripts/test.sh")).expect("scripts/test.sh");
        let table: Vec<&str> = script
            .lines()
            .skip_while(|l| !l.starts_with("tools=("))
            .skip(1)
            .take_while(|l| !l.starts_with(')'))
            .flat_map(str::split_whitespace)
            .collect();
        assert!(
            table.contains(&"nft:nftables"),
            "table not found: {table:?}"
        );
        let mut calls = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                let name = entry.file_name();
                if path.is_dir() {
                    if name != "target" && !name.to_string_lossy().starts_with('.') {
                        dirs.push(path);
                    }
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    for rest in text.split("require_tool(\"").skip(1) {
                        let parts: Vec<&str> = rest.splitn(4, '"').collect();
                        let (tool, package) = (parts[0], parts.get(2).copied().unwrap_or_default());
                        calls.push((path.clone(), tool.to_string(), package.to_string()));
                    }
                }
            }
        }
        assert!(
            calls.len() > 5,
            "too few require_tool calls found: {calls:?}"
        );
        for (path, tool, package) in calls {
            if tool.starts_with("connstorm-no-such") {
                continue; // this file's own test of a missing tool
            }
            assert!(
                table.contains(&format!("{tool}:{package}").as_str()),
                "{} calls require_tool(\"{tool}\", \"{package}\"), which scripts/test.sh's tools \
                 table does not list: add {tool}:{package} there",
                path.display()
            );
        }
    }

    /// Every repository path that the code, the scripts and the docs cite (`app/src/run.rs`,
    /// `docs/output.md`, `scripts/test.sh`, ...) names a file or folder that exists: a file
    /// moved or removed leaves no citation pointing at nothing. A path is a word that starts
    /// with a top-level folder of the repository and ends in a source or document extension,
    /// resolved from the repository root or from the citing file's folder; the scan skips
    /// `target/` and hidden folders.
    #[test]
    fn cited_paths_exist() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .canonicalize()
            .unwrap();
        let tops = [
            "app", "src", "server", "loadgen", "tuning", "results", "common", "testkit", "tests",
            "docs", "scripts", "deploy", "presets",
        ];
        let exts = ["rs", "md", "sh", "toml", "yaml", "py"];
        let mut files = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let (path, name) = (entry.path(), entry.file_name());
                let name = name.to_string_lossy();
                if path.is_dir() {
                    if name != "target" && !name.starts_with('.') {
                        dirs.push(path);
                    }
                } else if exts.iter().any(|e| name.ends_with(&format!(".{e}"))) || name == "run" {
                    files.push(path);
                }
            }
        }
        let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_-./".contains(c);
        let mut missing = Vec::new();
        let mut cited = 0;
        // check-links.sh's self-test writes its own docs/ into a scratch directory.
        let scratch = root.join("scripts/check-links.sh");
        for file in files.iter().filter(|f| **f != scratch) {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            for (n, line) in text.lines().enumerate() {
                let mut rest = line;
                while let Some(start) = rest.find(|c: char| c.is_ascii_alphabetic()) {
                    let word_start = &rest[start..];
                    let len = word_start
                        .find(|c: char| !is_path_char(c))
                        .unwrap_or(word_start.len());
                    let word = word_start[..len].trim_end_matches('.');
                    // Only whole words count: the tail of a longer path is not a path of its own.
                    let preceded = start > 0 && is_path_char(rest[..start].chars().last().unwrap());
                    rest = &word_start[len.max(1)..];
                    let Some((top, _)) = word.split_once('/') else {
                        continue;
                    };
                    if preceded
                        || !tops.contains(&top)
                        || !exts.iter().any(|e| word.ends_with(&format!(".{e}")))
                        || word.contains("YYYY")
                        || word.contains("..")
                    {
                        continue;
                    }
                    cited += 1;
                    // `#[path = "..."]` and Markdown links are relative to the citing file.
                    let beside = file.parent().unwrap().join(word);
                    if !root.join(word).exists() && !beside.exists() {
                        missing.push(format!(
                            "{}:{}: {word}",
                            file.strip_prefix(&root).unwrap().display(),
                            n + 1
                        ));
                    }
                }
            }
        }
        // What the code cites lives in the repository: no path of the machine it was written
        // on, no note that lives outside it.
        for file in files.iter().filter(|f| **f != scratch) {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            for (n, line) in text.lines().enumerate() {
                for outside in ["/work/", "../shared/", "FACTS-2", "FACTS-3", "KERNEL-NOTES"] {
                    if line.contains(outside) && !line.contains("outside in [") {
                        missing.push(format!(
                            "{}:{}: {outside} (outside the repository)",
                            file.strip_prefix(&root).unwrap().display(),
                            n + 1
                        ));
                    }
                }
            }
        }
        assert!(
            cited > 50,
            "too few cited paths found ({cited}): the scan is broken"
        );
        assert!(
            missing.is_empty(),
            "cited paths that do not exist:\n{}",
            missing.join("\n")
        );
    }

    #[test]
    fn exclusive_serialises_holders_and_survives_a_panicking_holder() {
        let _ = std::thread::spawn(|| {
            let _x = exclusive();
            panic!("a failing test while holding the lock");
        })
        .join();
        let inside = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let inside = inside.clone();
                std::thread::spawn(move || {
                    let _x = exclusive();
                    let n = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    n
                })
            })
            .collect();
        for t in threads {
            assert_eq!(
                t.join().unwrap(),
                0,
                "another holder was inside at the same time"
            );
        }
    }

    #[test]
    fn fresh_namespace_has_its_own_counters_and_sysctls() {
        let (before, after, range) = NetNs::run(|ns| {
            let before = ns.counter("Tcp.ActiveOpens");
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let _c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let after = ns.counter("Tcp.ActiveOpens");
            ns.set_sysctl("net.ipv4.ip_local_port_range", "40000 40009");
            (before, after, ns.sysctl("net.ipv4.ip_local_port_range"))
        });
        assert_eq!(before, 0, "a fresh namespace starts at zero");
        assert_eq!(after, 1);
        assert_eq!(
            range.split_whitespace().collect::<Vec<_>>(),
            ["40000", "40009"]
        );
    }
}
