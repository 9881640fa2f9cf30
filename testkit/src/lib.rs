//! Test support shared by the workspace's integration tests (a dev-dependency only; never linked
//! into the `connstorm` binary).
//!
//! The one thing here is [`NetNs`]: run a closure on a thread that lives in a **fresh network
//! namespace** (`unshare(CLONE_NEWNET)`, see unshare(2) and network_namespaces(7)), with `lo` up,
//! so that a test can
//! - count the kernel's TCP counters (`/proc/thread-self/net/snmp`, `/proc/thread-self/net/netstat`)
//!   without any other traffic on the machine adding to them, and
//! - change per-namespace sysctls (`net.ipv4.*`, `net.core.somaxconn`) without touching the host.
//!
//! Threads spawned from inside the closure inherit the namespace (clone(2) copies the caller's
//! nsproxy), and so do child processes started with `std::process::Command`. The namespace is freed
//! by the kernel when its last thread and socket are gone.
//!
//! Namespaces are per thread, and `/proc/net` is a link to `/proc/self/net` (the *main* thread's
//! namespace), so counters must be read through `/proc/thread-self/net/...`, as these helpers do.

use std::collections::BTreeMap;
use std::process::Command;

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
                let out = Command::new("ip")
                    .args(["link", "set", "lo", "up"])
                    .output()
                    .unwrap_or_else(|e| {
                        panic!("cannot run `ip link set lo up`: {e}; install iproute2")
                    });
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

    /// All `Tcp:` and `TcpExt:` counters of this namespace, keyed `"Tcp.ActiveOpens"`,
    /// `"TcpExt.ListenOverflows"`, ... (from /proc/thread-self/net/snmp and .../netstat).
    ///
    /// # Panics
    /// If the files cannot be read or parsed (they always exist on Linux with CONFIG_PROC_FS).
    pub fn counters(&self) -> BTreeMap<String, i64> {
        let mut map = BTreeMap::new();
        for file in ["snmp", "netstat"] {
            let path = format!("/proc/thread-self/net/{file}");
            let text =
                std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
            let lines: Vec<&str> = text.lines().collect();
            for pair in lines.chunks(2) {
                let [names, values] = pair else { continue };
                let (prefix, names) = names.split_once(':').expect("snmp header line");
                let (_, values) = values.split_once(':').expect("snmp value line");
                for (n, v) in names.split_whitespace().zip(values.split_whitespace()) {
                    if let Ok(v) = v.parse::<i64>() {
                        map.insert(format!("{prefix}.{n}"), v);
                    }
                }
            }
        }
        map
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
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        std::fs::write(&path, value).unwrap_or_else(|e| panic!("write {value:?} to {path}: {e}"));
    }

    /// Reads a sysctl of this namespace, trimmed.
    ///
    /// # Panics
    /// If the key does not exist.
    pub fn sysctl(&self, key: &str) -> String {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {path}: {e}"))
            .trim()
            .to_string()
    }
}

/// CPUs this process may run on (from sched_getaffinity(2)), ascending. Tests pin workers to these.
pub fn allowed_cpus() -> Vec<usize> {
    let set =
        nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).expect("sched_getaffinity");
    (0..nix::sched::CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
