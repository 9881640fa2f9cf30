//! `connstorm server` as a child process: bad input exits 2 with one line and leaves nothing
//! running; EMFILE overload with a tiny RLIMIT_NOFILE (set with prlimit(1) on the child only)
//! neither kills nor spins the server; a normal run prints a JSON report that matches the clients.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_connstorm");

fn engines() -> Vec<&'static str> {
    // io_uring is probed by the server itself; `auto` would hide a fallback, so ask for it and
    // skip (with the reason) only when the binary says it is unavailable.
    let out = Command::new(BIN)
        .args([
            "server",
            "--listen",
            "127.0.0.1:0",
            "--cpus",
            "0",
            "--engine",
            "io-uring",
            "--duration",
            "1ms",
        ])
        .output()
        .unwrap();
    if out.status.success() {
        vec!["epoll", "io-uring"]
    } else {
        eprintln!(
            "skipping the io_uring variant: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        vec!["epoll"]
    }
}

/// Runs the server with `args`, expects exit code 2 and exactly one stderr line containing `needle`.
fn expect_bad_input(args: &[&str], needle: &str) {
    let start = Instant::now();
    let out = Command::new(BIN)
        .arg("server")
        .args(args)
        .args(["--duration", "5s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: {stderr:?} lacks {needle:?}"
    );
    // One message line (clap adds its standard "For more information, try '--help'." hint).
    let lines = stderr
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
        .count();
    assert_eq!(lines, 1, "{args:?}: one line: {stderr:?}");
    // It exited (output() waited) without running its 5 s: nothing was left running.
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{args:?} ran instead of failing"
    );
}

/// Finding: `server --cpus 5` said "CPU 5 is offline…" where `load`, `bench` and `sweep` say
/// "--cpus: CPU 5 is offline…": every command names the option of an unusable CPU.
#[test]
fn every_command_names_the_option_of_an_unusable_cpu() {
    let want = "CPU 8000 is offline, absent or not allowed for this process (usable CPUs: ";
    for (args, option) in [
        (
            &[
                "server",
                "--listen",
                "127.0.0.1:0",
                "--cpus",
                "8000",
                "--duration",
                "1s",
            ][..],
            "--cpus",
        ),
        (
            &[
                "load",
                "--target",
                "127.0.0.1:1",
                "--cpus",
                "8000",
                "--duration",
                "1s",
            ][..],
            "--cpus",
        ),
        (
            &["bench", "--server-cpus", "8000", "--duration", "1s"][..],
            "--server-cpus",
        ),
        (
            &["sweep", "--load-cpus", "8000", "--step-duration", "1s"][..],
            "--load-cpus",
        ),
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("connstorm: error: {option}: {want}")),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn bad_inputs_exit_2_with_one_line() {
    expect_bad_input(&["--listen", "127.0.0.1:0", "--cpus", "4095"], "CPU 4095");
    expect_bad_input(
        &["--listen", "127.0.0.1:0", "--engine", "kqueue"],
        "unknown engine",
    );
    expect_bad_input(
        &["--listen", "127.0.0.1:0", "--mode", "greet:0"],
        "out of range",
    );
    expect_bad_input(&["--listen", "127.0.0.1:0", "--cpus", "0-"], "CPU list");
    expect_bad_input(&["--listen", "127.0.0.1:0", "--cpus", ""], "empty CPU list");
    expect_bad_input(
        &["--listen", "127.0.0.1:0", "--cpus", "0-N:0/2"],
        "1 <= used <= group",
    );
    expect_bad_input(&["--listen", "127.0.0.1:0", "--cpus", "3-1"], "ends before");
    // Absurd sizes: a backlog of 2^40, of 0; a port above 65535.
    for backlog in ["1099511627776", "0", "2147483648"] {
        expect_bad_input(
            &["--listen", "127.0.0.1:0", "--backlog", backlog],
            "1 to 2147483647",
        );
    }
    expect_bad_input(&["--listen", "127.0.0.1:70000"], "0 to 65535");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    for engine in engines() {
        expect_bad_input(
            &["--listen", &addr, "--cpus", "0", "--engine", engine],
            "already in use",
        );
    }
    // A port below 1024 without privilege: run as nobody (setpriv drops root for the child only).
    let out = Command::new(testkit::require_tool("setpriv", "util-linux"))
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            BIN,
            "server",
            "--listen",
            "127.0.0.1:80",
        ])
        .args(["--cpus", "0", "--engine", "epoll", "--duration", "5s"])
        .output()
        .expect("run setpriv");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("not permitted") && stderr.contains("1024"),
        "{stderr}"
    );
}

/// Starts the server; returns the child and the address from its first stderr line.
fn spawn_server(
    prefix: &[&str],
    args: &[&str],
) -> (Child, SocketAddr, BufReader<std::process::ChildStderr>) {
    let mut cmd = Command::new(prefix.first().copied().unwrap_or(BIN));
    if !prefix.is_empty() {
        cmd.args(&prefix[1..]).arg(BIN);
    }
    let mut child = cmd
        .arg("server")
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .split("listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .parse()
        .unwrap();
    (child, addr, stderr)
}

/// user + system CPU time of a process, in clock ticks (/proc/<pid>/stat fields 14 and 15).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after_comm.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn terminate(child: &mut Child) -> serde_json::Value {
    stop_with(child, nix::sys::signal::Signal::SIGTERM)
}

/// Sends `signal` once; expects exit 0 (a signal is how a server run ends) and returns the JSON
/// report from stdout.
fn stop_with(child: &mut Child, signal: nix::sys::signal::Signal) -> serde_json::Value {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("bad JSON ({e}): {out}"))
}

fn accepted(report: &serde_json::Value) -> u64 {
    report["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["accepted"].as_u64().unwrap())
        .sum()
}

#[test]
fn emfile_overload_backs_off_without_spinning_and_recovers() {
    let _x = testkit::exclusive();
    testkit::require_tool("prlimit", "util-linux");
    let ticks_per_sec = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .unwrap()
        .unwrap() as u64;
    for engine in engines() {
        let (mut child, addr, mut stderr) = spawn_server(
            &["prlimit", "--nofile=32:32", "--"],
            &[
                "--cpus", "0", "--engine", engine, "--mode", "hold", "--format", "json",
            ],
        );
        let total = 80u64;
        let clients: Vec<TcpStream> = (0..total)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        let t0 = cpu_ticks(child.id());
        std::thread::sleep(Duration::from_secs(2));
        let spent = cpu_ticks(child.id()) - t0;
        assert!(
            child.try_wait().unwrap().is_none(),
            "{engine}: the server died under EMFILE"
        );
        assert!(
            spent * 4 < 2 * ticks_per_sec,
            "{engine}: {spent} ticks of CPU in 2 s of EMFILE overload: the accept loop spins"
        );
        drop(clients); // frees the server's descriptors: it must accept the rest
                       // Progress lines come once a second; wait (at most 8 of them) for the total to arrive.
        for _ in 0..8 {
            let mut line = String::new();
            stderr.read_line(&mut line).unwrap();
            if line.contains(&format!("total {total} ")) {
                break;
            }
        }
        let report = terminate(&mut child);
        assert_eq!(accepted(&report), total, "{engine}: {report}");
        let w = &report["workers"][0];
        assert!(
            w["errors"]["EMFILE"].as_u64().unwrap_or(0) > 0,
            "{engine}: {report}"
        );
        assert!(
            w["emfile_backoffs"].as_u64().unwrap() > 0,
            "{engine}: {report}"
        );
        assert_eq!(report["interrupted"], true);
    }
}

#[test]
fn json_report_matches_what_the_clients_saw() {
    for engine in engines() {
        let (mut child, addr, mut stderr) = spawn_server(
            &[],
            &[
                "--cpus", "0", "--engine", engine, "--mode", "greet:5", "--format", "json",
            ],
        );
        for _ in 0..50 {
            let mut buf = Vec::new();
            TcpStream::connect(addr)
                .unwrap()
                .read_to_end(&mut buf)
                .unwrap();
            assert_eq!(buf.len(), 5);
        }
        let mut progress = String::new();
        stderr.read_line(&mut progress).unwrap(); // one line per second
        assert!(progress.contains("accepts/s"), "{progress:?}");
        let report = terminate(&mut child);
        assert_eq!(accepted(&report), 50, "{report}");
        assert_eq!(
            report["engine"],
            if engine == "epoll" {
                "epoll"
            } else {
                "io_uring"
            }
        );
        assert_eq!(report["mode"]["greet"]["bytes"], 5, "{report}");
    }
}

/// The last possible CPU (the kernel's `N`) and the CPUs this test may use.
fn last_and_allowed() -> (usize, Vec<usize>) {
    let last = tuning::cpulist::last_possible_cpu(std::path::Path::new("/")).unwrap();
    let online =
        tuning::cpulist::parse(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap())
            .unwrap();
    let allowed = tuning::host::allowed_cpus(std::path::Path::new("/")).unwrap();
    (
        last,
        allowed.into_iter().filter(|c| online.contains(c)).collect(),
    )
}

/// `--cpus 0-N` and `--cpus all` (the kernel's cpulist words) run one worker on every CPU up to
/// the last possible one when all of them are usable, and are refused with the usable CPUs listed
/// when some are not (offline, or outside this process's affinity). The last partial second of
/// the run is printed as a marked per-second rate.
#[test]
fn cpus_n_and_all_mean_every_cpu() {
    let (last, usable) = last_and_allowed();
    let every: Vec<usize> = (0..=last).collect();
    for list in ["0-N", "all", "ALL"] {
        let out = Command::new(BIN)
            .args(["server", "--listen", "127.0.0.1:0", "--cpus", list])
            .args([
                "--engine",
                "epoll",
                "--duration",
                "1500ms",
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if usable != every {
            assert_eq!(out.status.code(), Some(2), "{list}: {stderr}");
            assert!(
                stderr.contains(&format!(
                    "usable CPUs: {}",
                    tuning::cpulist::format(&usable)
                )),
                "{list}: {stderr}"
            );
            continue;
        }
        assert_eq!(out.status.code(), Some(0), "{list}: {stderr}");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let cpus: Vec<usize> = report["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["cpu"].as_u64().unwrap() as usize)
            .collect();
        assert_eq!(cpus, every, "{list}: {report}");
        // One full second, then the last half second scaled and marked.
        let partial = stderr
            .lines()
            .find(|l| l.contains("(partial "))
            .unwrap_or_else(|| panic!("{list}: no partial line in {stderr}"));
        assert!(partial.contains("accepts/s"), "{partial}");
        assert_eq!(
            stderr.lines().filter(|l| l.contains("accepts/s")).count(),
            2,
            "{list}: {stderr}"
        );
    }
}

/// A CPU outside the set the process may run on (taskset) is refused with exit 2 before anything
/// runs, and the message lists the usable CPUs; `all` under the same mask likewise when the host
/// has more than one CPU.
#[test]
fn cpu_outside_the_allowed_set_is_refused_listing_the_usable_ones() {
    let (last, usable) = last_and_allowed();
    let only = usable[0];
    let other = (0..=last + 1).find(|&c| c != only).unwrap();
    let mut lists = vec![other.to_string()];
    if last > 0 {
        lists.push("all".into());
    }
    for list in &lists {
        let out = Command::new(testkit::require_tool("taskset", "util-linux"))
            .args(["-c", &only.to_string(), BIN, "server"])
            .args([
                "--listen",
                "127.0.0.1:0",
                "--cpus",
                list,
                "--duration",
                "5s",
            ])
            .output()
            .expect("run taskset");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--cpus {list}: {stderr}");
        assert!(
            stderr.contains(&format!("usable CPUs: {only})")),
            "--cpus {list}: {stderr}"
        );
    }
}

/// One SIGINT (Ctrl-C) ends the run like SIGTERM: report printed, marked interrupted, exit 0
/// (the documented exit code of `connstorm server` ended by a signal).
#[test]
fn one_sigint_prints_the_report_and_exits_0() {
    let (mut child, addr, _stderr) = spawn_server(
        &[],
        &["--cpus", "0", "--engine", "epoll", "--format", "json"],
    );
    for _ in 0..10 {
        let mut buf = Vec::new();
        TcpStream::connect(addr)
            .unwrap()
            .read_to_end(&mut buf)
            .unwrap();
    }
    let report = stop_with(&mut child, nix::sys::signal::Signal::SIGINT);
    assert_eq!(accepted(&report), 10, "{report}");
    assert_eq!(report["interrupted"], true, "{report}");
}

#[test]
fn the_start_line_shows_rlimit_nofile_with_separators() {
    testkit::require_tool("prlimit", "util-linux");
    let mut child = Command::new("prlimit")
        .args(["--nofile=20000:20000", "--", BIN, "server"])
        .args([
            "--listen",
            "127.0.0.1:0",
            "--cpus",
            "0",
            "--engine",
            "epoll",
        ])
        .args(["--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    stderr.read_line(&mut line).unwrap();
    let _ = stop_with(&mut child, nix::sys::signal::Signal::SIGINT);
    drop(stderr);
    assert!(line.contains("RLIMIT_NOFILE 20,000)"), "{line}");
}

/// The terminal, kind "two quick Ctrl-Cs" (docs/edges.md): SIGINT twice 10 ms apart on `server
/// --out`. The report is still printed (every connection accepted), the record written, and
/// the exit code says the run was cut short: 130 (one signal is a server's normal end, 0).
#[test]
fn two_quick_sigints_still_print_the_report_and_write_the_record_and_exit_130() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr, _stderr) = spawn_server(
        &[],
        &[
            "--cpus",
            "0",
            "--engine",
            "epoll",
            "--format",
            "json",
            "--out",
            dir.path().to_str().unwrap(),
        ],
    );
    for _ in 0..10 {
        let mut buf = Vec::new();
        TcpStream::connect(addr)
            .unwrap()
            .read_to_end(&mut buf)
            .unwrap();
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    std::thread::sleep(Duration::from_millis(10));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{out}");
    let report: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("bad JSON ({e}): {out}"));
    assert_eq!(accepted(&report), 10, "{report}");
    assert_eq!(report["interrupted"], true, "{report}");
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let rec = results::RunRecord::read(&files[0]).unwrap();
    assert!(rec.run.interrupted);
    let rec_accepts = rec.phases[0].server.as_ref().map_or(0, |s| s.accepted());
    assert_eq!(rec_accepts, 10, "{:?}", rec.phases[0].server);
}

/// The port is taken, but not by a listener: an outgoing connection holds local port 18080
/// (connect(2) picked it from the ephemeral range). The server names that connection, says the
/// port is inside the range and gives `net.ipv4.ip_local_reserved_ports` as the fix; it said
/// "stop the other listener" (there was none).
#[test]
fn the_port_is_taken_but_not_by_a_listener_names_the_outgoing_connection() {
    let (code, stderr) = testkit::NetNs::run(|ns| {
        let _listener = TcpListener::bind("127.0.0.1:9000").unwrap();
        ns.set_sysctl("net.ipv4.ip_local_port_range", "18080 18080");
        let outgoing = TcpStream::connect("127.0.0.1:9000").unwrap();
        assert_eq!(outgoing.local_addr().unwrap().port(), 18080);
        ns.set_sysctl("net.ipv4.ip_local_port_range", "2000 65000");
        let out = Command::new(BIN)
            .args([
                "server",
                "--listen",
                "127.0.0.1:18080",
                "--cpus",
                "0",
                "--engine",
                "epoll",
                "--duration",
                "5s",
            ])
            .output()
            .unwrap();
        drop(outgoing);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    });
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("address 127.0.0.1:18080 is already in use, not by a listener: a connection holds local port 18080 (127.0.0.1:18080 -> 127.0.0.1:9000 ESTAB, pid "),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "18080 is inside the ephemeral range (net.ipv4.ip_local_port_range = 2000 65000)"
        ) && stderr.contains("net.ipv4.ip_local_reserved_ports = 18080"),
        "{stderr}"
    );
    assert!(!stderr.contains("stop the other listener"), "{stderr}");
    assert_eq!(
        stderr.lines().filter(|l| !l.is_empty()).count(),
        1,
        "{stderr}"
    );
}

/// Installs, in the child between fork and exec, a seccomp filter that answers
/// io_uring_setup(2) with EPERM and allows every other call (as a container runtime's default
/// profile does).
fn deny_io_uring_setup() -> std::io::Result<()> {
    use nix::libc;
    // load the syscall number (seccomp_data.nr at offset 0); if io_uring_setup, EPERM; else
    // allow. io_uring_setup is 425 on every architecture (the unified syscall table of 5.1+), so
    // the filter does not check seccomp_data.arch.
    static FILTER: [libc::sock_filter; 4] = [
        libc::sock_filter {
            code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: libc::SYS_io_uring_setup as u32,
        },
        libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
        libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        },
    ];
    let prog = libc::sock_fprog {
        len: FILTER.len() as u16,
        filter: FILTER.as_ptr().cast_mut(),
    };
    // SAFETY: prctl(2) with integer arguments and, for PR_SET_SECCOMP, a pointer to `prog`,
    // which lives until the call returns and points at FILTER, a static of plain integers the
    // kernel only reads (it copies the program). Both calls are async-signal-safe system calls,
    // as code between fork and exec must be.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const libc::sock_fprog,
            ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Explanations that blame the wrong thing: under a seccomp filter that denies io_uring_setup
/// (and `kernel.io_uring_disabled = 0`), the server's fallback to epoll names the filter, the
/// cause its probe established; it said "kernel.io_uring_disabled=0, or a seccomp policy".
#[test]
fn explanations_that_blame_the_wrong_thing_the_io_uring_fallback_names_seccomp() {
    use std::os::unix::process::CommandExt as _;
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    if disabled == "2" {
        eprintln!(
            "skipping: kernel.io_uring_disabled = 2 here, which refuses io_uring before any filter"
        );
        return;
    }
    let mut cmd = Command::new(BIN);
    cmd.args([
        "server",
        "--listen",
        "127.0.0.1:0",
        "--cpus",
        "0",
        "--engine",
        "auto",
        "--duration",
        "200ms",
    ]);
    // SAFETY: deny_io_uring_setup only makes async-signal-safe prctl(2) calls (see there).
    unsafe {
        cmd.pre_exec(deny_io_uring_setup);
    }
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("io_uring unavailable, using epoll: io_uring_setup(2) failed with EPERM: a seccomp filter on this process denies io_uring_setup (Seccomp: 2 in /proc/self/status"),
        "{stderr}"
    );
    assert!(!stderr.contains("or a seccomp policy"), "{stderr}");
}

/// `--profile` on `server` and `load`: a server on one CPU and a closed-loop load on another,
/// both profiled; each record's phase holds its side's kernel profile (the server's CPUs, the
/// load's CPUs, busy samples in the kernel), and the load prints its top functions.
#[test]
fn server_and_load_profiles_land_in_their_records() {
    if let Err(why) = tuning::profile::check_access(std::path::Path::new("/proc")) {
        eprintln!("skipping: this process may not profile: {why}");
        return;
    }
    let _x = testkit::exclusive();
    let cpus = testkit::allowed_cpus();
    let (scpu, lcpu) = (cpus[0], *cpus.last().unwrap());
    let sdir = tempfile::tempdir().unwrap();
    let ldir = tempfile::tempdir().unwrap();
    let (mut child, addr, _stderr) = spawn_server(
        &[],
        &[
            "--cpus",
            &scpu.to_string(),
            "--profile",
            "--format",
            "json",
            "--out",
            sdir.path().to_str().unwrap(),
        ],
    );
    let load = Command::new(BIN)
        .args([
            "load",
            "--target",
            &addr.to_string(),
            "--concurrency",
            "8",
            "--duration",
            "2s",
            "--warmup",
            "300ms",
            "--cpus",
            &lcpu.to_string(),
            "--profile",
            "--out",
            ldir.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let report = terminate(&mut child);
    let ltext = String::from_utf8_lossy(&load.stdout);
    assert!(
        matches!(load.status.code(), Some(0)),
        "{}{ltext}",
        String::from_utf8_lossy(&load.stderr)
    );
    assert!(accepted(&report) > 0, "{report}");
    assert!(ltext.contains("profile of the load: cpu-clock"), "{ltext}");
    let only = |d: &std::path::Path| {
        let files: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        results::RunRecord::read(&files[0]).unwrap()
    };
    for (rec, side, cpu) in [
        (only(sdir.path()), "server", scpu),
        (only(ldir.path()), "load", lcpu),
    ] {
        let p = rec.phases[0]
            .profile
            .as_ref()
            .unwrap_or_else(|| panic!("{side}: no profile; warnings {:?}", rec.warnings));
        assert_eq!(p.event, "cpu-clock");
        assert_eq!(p.sides.len(), 1, "{side}");
        let s = &p.sides[0];
        assert_eq!((s.side.as_str(), s.cpus.as_slice()), (side, &[cpu][..]));
        assert!(s.busy_samples() > 0, "{side}: {s:?}");
        assert!(
            s.functions
                .iter()
                .any(|f| f.space == "kernel" && f.samples_self > 0),
            "{side}: kernel functions sampled: {:?}",
            s.functions
        );
    }
}

// Many server workers on few CPUs (issue 33, item 7): the server and the load generator as
// libraries, in a private network namespace.

/// An open loop of `rate_per_sec` for 400 ms against `target` from `workers` load workers
/// round-robin on `cpus`, closing with RST (no TIME_WAIT), epoll engine.
fn open_load(
    target: SocketAddr,
    rate_per_sec: f64,
    cpus: Vec<usize>,
    workers: usize,
) -> loadgen::LoadConfig {
    loadgen::LoadConfig {
        targets: vec![target],
        pattern: loadgen::Pattern::Open {
            rate_per_sec,
            arrival: loadgen::Arrival::Uniform,
        },
        duration: Duration::from_millis(400),
        warmup: Duration::ZERO,
        cpus,
        workers,
        port_slices: loadgen::PortSlices::On,
        close: loadgen::CloseMode::Rst,
        sources: vec![],
        connect_timeout: Duration::from_secs(3),
        expect_bytes: None,
        max_in_flight: 1000,
        late_threshold: Duration::from_millis(1),
        http: None,
        tls: None,
        engine: loadgen::LoadEngine::Epoll,
        pacing: loadgen::Pacing::default(),
        accept_stamps: None,
    }
}

/// 16 server workers (`connstorm server --server-workers 16`: [`server::ServerConfig::workers`])
/// and 32 load workers on this process's CPUs (2 vCPUs here: 8 server workers and 16 load workers
/// per CPU), in a private network namespace, an open loop bounded in count (4,000/s for 400 ms:
/// about 1,600 connections): attempts = ΔTcp.ActiveOpens, successes = server accepts =
/// ΔTcp.PassiveOpens, the per-worker accepts (of the final report and of the live stats) sum to
/// the totals, the workers sit round-robin on the CPUs, and every server worker accepted at least
/// one connection: the reuseport hash reached all 16 listeners (with 1,600 flows the chance that
/// one of 16 gets none is 16 × (15/16)^1600, about 10^-43).
fn many_server_workers_round(engine: server::EngineChoice) {
    const SERVER_WORKERS: usize = 16;
    const LOAD_WORKERS: usize = 32;
    let cpus = testkit::allowed_cpus();
    let started = Instant::now();
    let (report, live, load, active, passive) = {
        let cpus = cpus.clone();
        testkit::NetNs::run(move |ns| {
            let mut cfg = server::ServerConfig::new("127.0.0.1:0".parse().unwrap(), cpus.clone());
            cfg.workers = SERVER_WORKERS;
            cfg.engine = engine;
            cfg.backlog = 4096;
            let srv = server::Server::start(cfg).expect("server with 16 workers starts");
            let reader = srv.stats_reader();
            let load_cfg = open_load(srv.local_addr(), 4000.0, cpus, LOAD_WORKERS);
            let (a0, p0) = (
                ns.counter("Tcp.ActiveOpens"),
                ns.counter("Tcp.PassiveOpens"),
            );
            let stop = std::sync::atomic::AtomicBool::new(false);
            let load = loadgen::run(&load_cfg, &stop, &mut |_| {}).expect("load run");
            // The stop drains every accept queue before it reports.
            let report = srv.stop();
            (
                report,
                reader.read(),
                load,
                ns.counter("Tcp.ActiveOpens") - a0,
                ns.counter("Tcp.PassiveOpens") - p0,
            )
        })
    };
    let what = format!("{engine:?}");
    let t = &load.total;
    let per_worker: Vec<u64> = report.workers.iter().map(|w| w.accepted).collect();
    println!(
        "{what}: {} server workers, {} load workers, {} attempts, {} accepts, per server worker {per_worker:?}, {:?}",
        report.workers.len(),
        load.workers.len(),
        t.attempts,
        report.accepted(),
        started.elapsed()
    );
    assert_eq!(report.workers.len(), SERVER_WORKERS, "{what}");
    assert_eq!(load.workers.len(), LOAD_WORKERS, "{what}");
    for (w, wr) in report.workers.iter().enumerate() {
        assert_eq!(
            wr.cpu,
            cpus[w % cpus.len()],
            "{what}: server worker {w}'s CPU"
        );
    }
    assert!(t.successes > 0, "{what}: {t:?}");
    assert_eq!(
        t.attempts as i64, active,
        "{what}: attempts vs ΔActiveOpens"
    );
    assert_eq!(t.successes, t.attempts, "{what}: failures {:?}", t.failures);
    assert_eq!(report.accepted(), t.successes, "{what}: server accepts");
    assert_eq!(passive, t.successes as i64, "{what}: ΔPassiveOpens");
    assert_eq!(
        live.accepted_per_worker, per_worker,
        "{what}: live per-worker accepts vs the report's"
    );
    assert_eq!(live.accepted(), report.accepted(), "{what}: live total");
    assert_eq!(
        load.workers.iter().map(|w| w.successes).sum::<u64>(),
        t.successes,
        "{what}: per-load-worker successes"
    );
    // Without steering nothing is sampled: the accept path reads no SO_INCOMING_CPU.
    assert_eq!(report.syn_cpu(), None, "{what}");
    for (w, &n) in per_worker.iter().enumerate() {
        assert!(
            n > 0,
            "{what}: server worker {w} (CPU {}) accepted nothing: {per_worker:?}",
            report.workers[w].cpu
        );
    }
}

#[test]
fn sixteen_server_workers_on_few_cpus_keep_exact_counts_and_all_accept_epoll() {
    let _x = testkit::exclusive();
    many_server_workers_round(server::EngineChoice::Epoll);
}

#[test]
fn sixteen_server_workers_on_few_cpus_keep_exact_counts_and_all_accept_uring() {
    let _x = testkit::exclusive();
    if let Err(why) = server::probe::io_uring() {
        eprintln!("skipping: the io_uring server engine cannot run here: {why}");
        return;
    }
    many_server_workers_round(server::EngineChoice::IoUring);
}

/// `--server-workers` on the command line: 3 workers on one CPU run and report 3 workers on that
/// CPU; fewer workers than CPUs is refused (exit 2, one line naming the option).
#[test]
fn server_workers_oversubscribe_the_cpus_and_too_few_are_refused() {
    let cpu = testkit::allowed_cpus()[0].to_string();
    let out = Command::new(BIN)
        .args(["server", "--listen", "127.0.0.1:0", "--cpus", &cpu])
        .args(["--server-workers", "3", "--engine", "epoll"])
        .args(["--duration", "100ms", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("3 workers round-robin on CPUs"), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let workers = report["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 3, "{report}");
    for w in workers {
        assert_eq!(w["cpu"].to_string(), cpu, "{report}");
    }
    let all = testkit::allowed_cpus();
    if all.len() >= 2 {
        let list = format!("{},{}", all[0], all[1]);
        expect_bad_input(
            &["--cpus", &list, "--server-workers", "1"],
            "--server-workers: 1 server workers on 2 CPUs",
        );
    }
    expect_bad_input(&["--server-workers", "0"], "--server-workers");
}

// With `--steer cpu` (issue 33, item 4): the share of connections accepted on the CPU that
// processed their packets.

/// A server on this process's CPUs with `--steer cpu` and load workers on the same CPUs, in a
/// private network namespace (loopback: a connection's packets are processed on its client's
/// CPU), an open loop of 2,000/s for 400 ms: the report has the share; it lies in [0, 1]; its
/// numerator and the other-CPU count add up to its denominator; each worker sampled exactly its
/// 1st, 17th, 33rd, ... accept (⌈accepted ÷ 16⌉, none unreadable), and the counts still agree
/// with the kernel (accepts = ΔPassiveOpens = the load's successes).
fn steered_round(engine: server::EngineChoice) {
    let cpus = testkit::allowed_cpus();
    let (report, load, passive) = {
        let cpus = cpus.clone();
        testkit::NetNs::run(move |ns| {
            let mut cfg = server::ServerConfig::new("127.0.0.1:0".parse().unwrap(), cpus.clone());
            cfg.engine = engine;
            cfg.backlog = 4096;
            cfg.steer = server::Steer::Cpu;
            let srv = server::Server::start(cfg).expect("server with --steer cpu starts");
            let load_cfg = open_load(srv.local_addr(), 2000.0, cpus.clone(), cpus.len());
            let p0 = ns.counter("Tcp.PassiveOpens");
            let stop = std::sync::atomic::AtomicBool::new(false);
            let load = loadgen::run(&load_cfg, &stop, &mut |_| {}).expect("load run");
            let report = srv.stop();
            (report, load, ns.counter("Tcp.PassiveOpens") - p0)
        })
    };
    let what = format!("{engine:?}");
    let s = report
        .syn_cpu()
        .unwrap_or_else(|| panic!("{what}: no SYN-CPU share with --steer cpu: {report:?}"));
    println!(
        "{what}: steering {}, ring {:?}, {} accepts; {}",
        report.steering,
        report.ring_setup,
        report.accepted(),
        s.line()
    );
    assert!(load.total.successes > 0, "{what}: {:?}", load.total);
    assert_eq!(report.accepted(), load.total.successes, "{what}: accepts");
    assert_eq!(passive, report.accepted() as i64, "{what}: ΔPassiveOpens");
    let share = s.share().expect("sampled at least one accept");
    assert!((0.0..=1.0).contains(&share), "{what}: share {share}");
    assert_eq!(s.same_cpu + s.other_cpu(), s.sampled, "{what}: {s:?}");
    assert_eq!(s.unread, 0, "{what}: {s:?}");
    assert_eq!(s.sample_every, 16, "{what}: {s:?}");
    let mut expected = 0;
    for w in &report.workers {
        let ws = w.syn_cpu.expect("every worker reports its samples");
        assert_eq!(
            ws.sampled + ws.unread,
            common::syncpu::SynCpuShare::samples_of(w.accepted, 16),
            "{what}: worker on CPU {} accepted {}: {ws:?}",
            w.cpu,
            w.accepted
        );
        assert!(ws.same_cpu <= ws.sampled, "{what}: {ws:?}");
        expected += ws.sampled;
    }
    assert_eq!(s.sampled, expected, "{what}: the workers' samples add up");
    if engine == server::EngineChoice::IoUring {
        // The samples need an fd: no direct descriptors with steering.
        let ring = report.ring_setup.as_deref().unwrap_or_default();
        assert!(!ring.contains("direct_accept"), "{what}: {ring}");
    }
}

#[test]
fn steer_cpu_reports_the_share_accepted_on_the_packets_cpu_epoll() {
    let _x = testkit::exclusive();
    steered_round(server::EngineChoice::Epoll);
}

#[test]
fn steer_cpu_reports_the_share_accepted_on_the_packets_cpu_uring() {
    let _x = testkit::exclusive();
    if let Err(why) = server::probe::io_uring() {
        eprintln!("skipping: the io_uring server engine cannot run here: {why}");
        return;
    }
    steered_round(server::EngineChoice::IoUring);
}

/// `connstorm server --steer cpu`: 20 connections give each worker's samples (one CPU: its 1st
/// and 17th accept) in the JSON report, and the text report prints the share's line; without
/// `--steer` the JSON has no `syn_cpu`.
#[test]
fn the_server_prints_and_records_the_syn_cpu_share_with_steer_cpu() {
    let cpu = testkit::allowed_cpus()[0].to_string();
    let connect = |addr: SocketAddr, n: usize| {
        for _ in 0..n {
            let mut buf = Vec::new();
            let _ = TcpStream::connect(addr).unwrap().read_to_end(&mut buf);
        }
    };
    for (steer, want) in [("cpu", Some(2)), ("none", None)] {
        let (mut child, addr, _stderr) =
            spawn_server(&[], &["--cpus", &cpu, "--steer", steer, "--format", "json"]);
        connect(addr, 20);
        let report = terminate(&mut child);
        assert_eq!(accepted(&report), 20, "{report}");
        let w = &report["workers"][0];
        match want {
            Some(n) => {
                assert_eq!(
                    w["syn_cpu"]["sampled"].as_u64().unwrap()
                        + w["syn_cpu"]["unread"].as_u64().unwrap(),
                    n,
                    "{report}"
                );
                assert!(w["syn_cpu"]["same_cpu"].as_u64().unwrap() <= n, "{report}");
            }
            None => assert!(w.get("syn_cpu").is_none(), "{report}"),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let (child, addr, _stderr) = spawn_server(
        &[],
        &[
            "--cpus",
            &cpu,
            "--steer",
            "cpu",
            "--duration",
            "1500ms",
            "--out",
            dir.path().to_str().unwrap(),
        ],
    );
    connect(addr, 3);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("accepted on the CPU that processed their packets (SO_INCOMING_CPU): ")
            && text.contains("sampled connections, 1 in 16)"),
        "{text}"
    );
    // `connstorm report` of its record prints the same share, from the record's counts (issue
    // 33: the report left it out).
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let rec = results::RunRecord::read(&files[0]).unwrap();
    let share = rec.phases[0]
        .server
        .as_ref()
        .and_then(|s| s.syn_cpu)
        .expect("the record keeps the share");
    // 3 accepts on one worker: its 1st is sampled.
    assert_eq!(share.sampled + share.unread, 1, "{share:?}");
    let rep = Command::new(BIN)
        .args(["report", files[0].to_str().unwrap()])
        .output()
        .unwrap();
    let rtext = String::from_utf8_lossy(&rep.stdout);
    assert!(rep.status.success(), "{rtext}");
    assert_eq!(
        rtext.matches(&share.line()).count(),
        1,
        "{}\n{rtext}",
        share.line()
    );
    assert!(text.contains(&share.line()), "{}\n{text}", share.line());
}

/// The share measures where packets were processed, not where the listener was pinned: on
/// loopback a connection's packets are processed on its client's CPU, so with the server on CPU
/// a, load on the same CPU gives a share of exactly 1 and load on another CPU b exactly 0 (no
/// listener for b: the kernel falls back to one on a, and the accepted socket's SO_INCOMING_CPU
/// says b). Needs two CPUs; says why it skips with one.
#[test]
fn the_syn_cpu_share_is_one_on_the_clients_cpu_and_zero_off_it() {
    let _x = testkit::exclusive();
    let all = testkit::allowed_cpus();
    if all.len() < 2 {
        eprintln!("skipping: needs two usable CPUs, this process has {all:?}");
        return;
    }
    let (a, b) = (all[0], all[1]);
    for (load_cpu, want) in [(a, 1.0), (b, 0.0)] {
        let report = testkit::NetNs::run(move |_| {
            let mut cfg = server::ServerConfig::new("127.0.0.1:0".parse().unwrap(), vec![a]);
            cfg.engine = server::EngineChoice::Epoll;
            cfg.steer = server::Steer::Cpu;
            let srv = server::Server::start(cfg).expect("server starts");
            let load_cfg = open_load(srv.local_addr(), 1000.0, vec![load_cpu], 1);
            let stop = std::sync::atomic::AtomicBool::new(false);
            loadgen::run(&load_cfg, &stop, &mut |_| {}).expect("load run");
            srv.stop()
        });
        let s = report.syn_cpu().expect("sampled with --steer cpu");
        assert!(s.sampled > 0, "{s:?}");
        assert_eq!(
            s.share(),
            Some(want),
            "server on CPU {a}, load on CPU {load_cpu}: {}",
            s.line()
        );
    }
}

// Per-worker memory after pinning (issue 33 item 3): each worker allocates its rings, tables,
// buffers, histograms and stamp buffers on its own thread once it is pinned, so first touch puts
// them on its CPU's NUMA node (docs/engines.md, "Per-worker memory"; testkit's
// `first_touch_on_a_pinned_thread_lands_on_its_cpus_node` checks that a pinned thread's pages
// land on its CPU's node).

/// Two server workers and two load workers per CPU of this process (round-robin), each engine
/// on both sides, accept stamps armed on both sides (the load's on epoll, the only engine that
/// stamps): every worker reports that it was pinned to its own CPU when it had made its
/// per-worker memory (`alloc_cpu` = its CPU), and so does every stamp buffer, worker by worker
/// (the server's were allocated by the controller thread, unpinned, before issue 33).
fn memory_after_pinning_round(engine: server::EngineChoice, load_engine: loadgen::LoadEngine) {
    let cpus = testkit::allowed_cpus();
    let workers = 2 * cpus.len();
    let what = format!("server {engine:?}, load {load_engine:?}");
    let (report, stamps, load) = {
        let cpus = cpus.clone();
        testkit::NetNs::run(move |_| {
            let mut cfg = server::ServerConfig::new("127.0.0.1:0".parse().unwrap(), cpus.clone());
            cfg.engine = engine;
            cfg.workers = workers;
            let srv = server::Server::start(cfg).expect("server starts");
            assert!(
                srv.start_stamping(4096, 1, Duration::from_secs(2)),
                "every worker armed its stamps"
            );
            let mut load_cfg = open_load(srv.local_addr(), 500.0, cpus.clone(), workers);
            load_cfg.engine = load_engine;
            if load_engine == loadgen::LoadEngine::Epoll {
                load_cfg.accept_stamps = Some(loadgen::AcceptStamps {
                    per_worker: 4096,
                    every: 1,
                });
            }
            let stop = std::sync::atomic::AtomicBool::new(false);
            let load = loadgen::run(&load_cfg, &stop, &mut |_| {}).expect("load run");
            let stamps = srv.take_stamps(Duration::from_secs(2));
            (srv.stop(), stamps, load)
        })
    };
    let order = server::config::worker_cpus(&cpus, workers);
    let server_cpus: Vec<usize> = report.workers.iter().map(|w| w.cpu).collect();
    assert_eq!(server_cpus, order, "{what}: round-robin");
    for w in &report.workers {
        assert_eq!(
            w.alloc_cpu,
            Some(w.cpu),
            "{what}: server worker on CPU {}",
            w.cpu
        );
    }
    assert_eq!(stamps.workers_missing, 0, "{what}");
    let want: Vec<Option<usize>> = order.iter().map(|&c| Some(c)).collect();
    assert_eq!(
        stamps.stamps.alloc_cpus, want,
        "{what}: the server's stamp buffers"
    );
    assert!(load.total.successes > 0, "{what}: {:?}", load.total);
    assert_eq!(load.workers.len(), workers, "{what}");
    for w in &load.workers {
        assert_eq!(
            w.alloc_cpu,
            Some(w.cpu),
            "{what}: load worker on CPU {}",
            w.cpu
        );
    }
    if load_engine == loadgen::LoadEngine::Epoll {
        let s = load.accept_stamps.as_ref().expect("the load's stamps");
        let load_cpus: Vec<Option<usize>> = load.workers.iter().map(|w| Some(w.cpu)).collect();
        assert_eq!(
            s.stamps.alloc_cpus, load_cpus,
            "{what}: the load's stamp buffers"
        );
    }
}

#[test]
fn every_worker_makes_its_memory_on_its_pinned_cpu_epoll() {
    let _x = testkit::exclusive();
    memory_after_pinning_round(server::EngineChoice::Epoll, loadgen::LoadEngine::Epoll);
}

#[test]
fn every_worker_makes_its_memory_on_its_pinned_cpu_uring() {
    let _x = testkit::exclusive();
    if let Err(why) = server::probe::io_uring() {
        eprintln!("skipping: the io_uring server engine cannot run here: {why}");
        return;
    }
    memory_after_pinning_round(server::EngineChoice::IoUring, loadgen::LoadEngine::IoUring);
}
