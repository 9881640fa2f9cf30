//! Sysctl keys: strict validation, per-network-namespace vs global classification, reading and
//! writing under `<root>/proc/sys`.
//!
//! A [`Key`] is a dotted name of `[a-z0-9_-]` components (sysctl(8) form, `net.core.somaxconn`).
//! The one exception is the interface component of `net.ipv4.conf.IF.*`, `net.ipv6.conf.IF.*` and
//! `net.ipv{4,6}.neigh.IF.*`: interface names may hold upper case, and a dot in a name (VLAN
//! `enp3s0.200`) is written `/` as sysctl(8) and sysctl.d(5) print it
//! (`net.ipv4.conf.enp3s0/200.forwarding` is the file `net/ipv4/conf/enp3s0.200/forwarding`).
//! No empty component, no `.`/`..` component, at most [`MAX_KEY_LEN`] bytes — a key can never
//! name a file outside `/proc/sys`. Whether a key exists is checked against the running kernel
//! with [`Key::path`].
//!
//! Scope (net/core/sysctl_net_core.c and net/ipv4/sysctl_net_ipv4.c, Linux 6.x):
//! `net.ipv4.*` (but tcp_mem, udp_mem, tcp_max_orphans, tcp_low_latency, inet_peer_*,
//! fib_sync_mem), `net.ipv6.*`, `net.netfilter.*`, `net.unix.*` and `net.core.{somaxconn,
//! optmem_max, txrehash, tstamp_allow_data, rps_default_mask}` are per network namespace; every
//! other `net.core.*` key and all of `fs.*`, `kernel.*`, `vm.*` are global.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Longest key accepted, in bytes (the longest real keys are ~70 bytes).
pub const MAX_KEY_LEN: usize = 128;

/// A key failed validation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Empty key.
    #[error("empty sysctl key: write a dotted name like net.core.somaxconn")]
    Empty,
    /// Longer than [`MAX_KEY_LEN`].
    #[error(
        "sysctl key {key:?}… is {len} bytes, longer than {MAX_KEY_LEN}: check for a pasted value"
    )]
    TooLong {
        /// The first 40 characters.
        key: String,
        /// Its length.
        len: usize,
    },
    /// A character outside `[a-z0-9_.-]`, including `/`.
    #[error("sysctl key {key:?} contains {ch:?}: keys are dotted names of [a-z0-9_-] (write net.ipv4.tcp_syncookies, not net/ipv4/tcp_syncookies)")]
    BadChar {
        /// The key.
        key: String,
        /// The offending character.
        ch: char,
    },
    /// An empty component (`a..b`, leading or trailing dot).
    #[error("sysctl key {key:?} has an empty component (`..`, or a leading/trailing dot)")]
    EmptyComponent {
        /// The key.
        key: String,
    },
}

/// A validated sysctl key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Key(String);

impl TryFrom<String> for Key {
    type Error = KeyError;
    fn try_from(s: String) -> Result<Key, KeyError> {
        Key::parse(&s)
    }
}

impl From<Key> for String {
    fn from(k: Key) -> String {
        k.0
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Key {
    /// Validates a key (syntax only; see [`Key::path`] for existence).
    ///
    /// # Errors
    /// [`KeyError`] saying what is wrong.
    pub fn parse(s: &str) -> Result<Key, KeyError> {
        if s.is_empty() {
            return Err(KeyError::Empty);
        }
        if s.len() > MAX_KEY_LEN {
            return Err(KeyError::TooLong {
                key: s.chars().take(40).collect(),
                len: s.len(),
            });
        }
        let parts: Vec<&str> = s.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(KeyError::EmptyComponent { key: s.to_string() });
        }
        let iface = is_interface_slot(&parts);
        for (i, part) in parts.iter().enumerate() {
            let lax = iface == Some(i);
            if let Some(ch) = part.chars().find(|c| {
                !(c.is_ascii_lowercase()
                    || c.is_ascii_digit()
                    || matches!(c, '_' | '-')
                    || (lax && (c.is_ascii_uppercase() || matches!(c, '/' | '@' | ':'))))
            }) {
                return Err(KeyError::BadChar {
                    key: s.to_string(),
                    ch,
                });
            }
            if lax && (part.starts_with('/') || part.ends_with('/') || part.contains("//")) {
                return Err(KeyError::EmptyComponent { key: s.to_string() });
            }
        }
        Ok(Key(s.to_string()))
    }

    /// Builds a key from the file path components under `/proc/sys` (as a directory listing
    /// gives them: `["net", "ipv4", "conf", "enp3s0.200", "forwarding"]`).
    ///
    /// # Errors
    /// [`KeyError`] when a component cannot be part of a key.
    pub fn from_components(parts: &[&str]) -> Result<Key, KeyError> {
        let dotted: Vec<String> = parts.iter().map(|p| p.replace('.', "/")).collect();
        Key::parse(&dotted.join("."))
    }

    /// The file path components under `/proc/sys` (a `/` inside a component is a `.` there).
    pub fn components(&self) -> Vec<String> {
        self.0.split('.').map(|p| p.replace('/', ".")).collect()
    }

    /// For a per-interface key (`net.ipv4.conf.IF.x`, `net.ipv6.conf.IF.x`,
    /// `net.ipv{4,6}.neigh.IF.x`): the directory components above the interface
    /// (`["net", "ipv4", "conf"]`) and the interface's name as the kernel spells it (`eth0.100`
    /// for `eth0/100`). `None` for other keys and for `all` and `default`.
    pub fn interface(&self) -> Option<(Vec<String>, String)> {
        let parts: Vec<&str> = self.0.split('.').collect();
        let i = is_interface_slot(&parts)?;
        let name = parts[i].replace('/', ".");
        (name != "all" && name != "default")
            .then(|| (parts[..i].iter().map(|p| p.to_string()).collect(), name))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `<root>/proc/sys/<a>/<b>/<c>` (not checked for existence).
    pub fn path(&self, root: &Path) -> PathBuf {
        let mut p = root.join("proc/sys");
        for part in self.components() {
            p.push(part);
        }
        p
    }

    /// Whether the key is a `net.*` key the kernel registers for the initial network
    /// namespace only, by its name: `net.core.*` but the few per-namespace ones
    /// (net/core/sysctl_net_core.c: `net_core_table` for `init_net`, `netns_core_table` for
    /// each namespace), and the global tables of net/ipv4/sysctl_net_ipv4.c (`ipv4_table`:
    /// tcp_mem, udp_mem, tcp_max_orphans, inet_peer_*, ...). Unlike [`Key::scope`], which calls
    /// every key outside the known per-namespace families global, a name it does not know is
    /// not called global here.
    pub fn global_by_name(&self) -> bool {
        let k = self.0.as_str();
        const IPV4_GLOBAL: &[&str] = &[
            "net.ipv4.tcp_mem",
            "net.ipv4.udp_mem",
            "net.ipv4.tcp_max_orphans",
            "net.ipv4.tcp_low_latency",
            "net.ipv4.fib_sync_mem",
            "net.ipv4.ipfrag_secret_interval",
        ];
        const CORE_NETNS: &[&str] = &[
            "net.core.somaxconn",
            "net.core.optmem_max",
            "net.core.txrehash",
            "net.core.tstamp_allow_data",
            "net.core.rps_default_mask",
        ];
        if k.starts_with("net.ipv4.") {
            IPV4_GLOBAL.contains(&k) || k.starts_with("net.ipv4.inet_peer_")
        } else {
            k.starts_with("net.core.") && !CORE_NETNS.contains(&k)
        }
    }

    /// Whether the key is per network namespace or global (see the module docs).
    pub fn scope(&self) -> Scope {
        let k = self.0.as_str();
        if k.starts_with("net.ipv4.") || k.starts_with("net.core.") {
            if self.global_by_name() {
                Scope::Global
            } else {
                Scope::Netns
            }
        } else if ["net.ipv6.", "net.netfilter.", "net.unix.", "net.mptcp."]
            .iter()
            .any(|p| k.starts_with(p))
        {
            Scope::Netns
        } else {
            Scope::Global
        }
    }
}

/// Index of the interface-name component (`net.ipv4.conf.IF.x` → 3), if the key has one.
fn is_interface_slot(parts: &[&str]) -> Option<usize> {
    (parts.len() >= 5
        && parts[0] == "net"
        && matches!(parts[1], "ipv4" | "ipv6")
        && matches!(parts[2], "conf" | "neigh"))
    .then_some(3)
}

/// Where a sysctl takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// One value per network namespace: safe to set inside a test namespace.
    Netns,
    /// One value for the whole host (absent or read-only inside a child namespace).
    Global,
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Scope::Netns => "netns",
            Scope::Global => "global",
        })
    }
}

/// Reading or writing a sysctl failed.
#[derive(Debug, thiserror::Error)]
pub enum SysctlError {
    /// The key does not exist on this kernel (e.g. net.ipv4.tcp_tw_recycle, removed in 4.12), or
    /// it is global and this is a child network namespace.
    #[error("sysctl {key} does not exist here ({path}): removed from this kernel, not built in, or a global key seen from a child network namespace — drop it from the preset or sysctl.d file, or mark it optional (`optional = true` in a preset, a `-` prefix in a sysctl.d file)")]
    Missing {
        /// The key.
        key: Key,
        /// The file looked for.
        path: PathBuf,
    },
    /// The file has no write permission (e.g. net.core.rmem_max in a child namespace).
    #[error("sysctl {key} is read-only here ({path}); set it in the initial network namespace or leave it out")]
    ReadOnly {
        /// The key.
        key: Key,
        /// The file.
        path: PathBuf,
    },
    /// The kernel refused the write of `value` (EINVAL: not a value the key takes).
    #[error("write {value:?} to sysctl {key} ({path}) failed: {error}{hint}")]
    Write {
        /// The key.
        key: Key,
        /// The value written.
        value: String,
        /// The file.
        path: PathBuf,
        /// The OS error (errno), in the message (not a `source`, so `{:#}` says it once).
        error: io::Error,
        /// A fixing hint, as for [`SysctlError::Io`].
        hint: &'static str,
    },
    /// The kernel refused the read (or the file could not be looked at for a write).
    #[error("{op} sysctl {key} ({path}) failed: {source}{hint}")]
    Io {
        /// `"read"` or `"write"`.
        op: &'static str,
        /// The key.
        key: Key,
        /// The file.
        path: PathBuf,
        /// The OS error (errno).
        source: io::Error,
        /// A fixing hint (EINVAL: value out of range; EPERM: need root / CAP_NET_ADMIN / CAP_SYS_ADMIN).
        hint: &'static str,
    },
}

/// How systemd-sysctl treats a failed write, by errno (src/sysctl/sysctl.c
/// `sysctl_write_or_warn`): the class every apply decision uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteFailure {
    /// ENOENT: the key is not here. A warning; the rest applies (an error with `--strict`).
    Missing,
    /// EPERM, EACCES or EROFS: the kernel or a read-only mount refuses the write. Ignored with
    /// a note (an error with `--strict`).
    Refused,
    /// Anything else (EINVAL: a value the key does not take): the apply fails.
    Other,
}

impl SysctlError {
    /// The errno behind the error: ENOENT for [`SysctlError::Missing`], EACCES for
    /// [`SysctlError::ReadOnly`] (the kernel's answer to a write of a file without a write bit),
    /// the OS error otherwise.
    pub fn errno(&self) -> Option<i32> {
        match self {
            SysctlError::Missing { .. } => Some(libc::ENOENT),
            SysctlError::ReadOnly { .. } => Some(libc::EACCES),
            SysctlError::Write { error, .. } => error.raw_os_error(),
            SysctlError::Io { source, .. } => source.raw_os_error(),
        }
    }

    /// How systemd-sysctl would treat this failure ([`WriteFailure`]).
    pub fn failure(&self) -> WriteFailure {
        match self.errno() {
            Some(libc::ENOENT) => WriteFailure::Missing,
            Some(libc::EPERM | libc::EACCES | libc::EROFS) => WriteFailure::Refused,
            _ => WriteFailure::Other,
        }
    }
}

/// The part of a message that says how to fix `e` for `key`. EPERM is not always a missing
/// privilege: root gets it too where the key's handler refuses the value here (a child network
/// namespace may set `tcp_congestion_control` only to an allowed algorithm).
fn hint(key: &Key, e: &io::Error) -> &'static str {
    let root = nix::unistd::geteuid().is_root();
    match e.raw_os_error() {
        Some(libc::EINVAL) => ": the kernel rejected the value (out of range or wrong format)",
        Some(libc::EPERM) if key.as_str() == "net.ipv4.tcp_congestion_control" => {
            ": a child network namespace may only pick an algorithm listed in net.ipv4.tcp_allowed_congestion_control (net/ipv4/tcp_cong.c); allow it from the initial namespace"
        }
        Some(libc::EPERM) if root => {
            ": the kernel refused this value here although this process is root (the key's handler forbids it in this namespace or for this value; see `connstorm tune rules`)"
        }
        Some(libc::EROFS) => {
            ": /proc/sys is mounted read-only here (a container or a private mount namespace): set it where it is writable"
        }
        Some(libc::EPERM) | Some(libc::EACCES) => {
            ": permission denied (run as root or with CAP_SYS_ADMIN/CAP_NET_ADMIN)"
        }
        _ => "",
    }
}

/// Normalizes a sysctl value for comparison and display: whitespace runs become one space.
pub fn normalize(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads a sysctl under `root` (normalized with [`normalize`]).
///
/// # Errors
/// [`SysctlError::Missing`] when the file does not exist, [`SysctlError::Io`] otherwise.
pub(crate) fn read(root: &Path, key: &Key) -> Result<String, SysctlError> {
    let path = key.path(root);
    match std::fs::read_to_string(&path) {
        Ok(v) => Ok(normalize(&v)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(SysctlError::Missing {
            key: key.clone(),
            path,
        }),
        Err(source) => Err(SysctlError::Io {
            op: "read",
            key: key.clone(),
            hint: hint(key, &source),
            path,
            source,
        }),
    }
}

/// True when the file exists and has a write permission bit (the kernel's mode, not the caller's).
pub(crate) fn writable(root: &Path, key: &Key) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(key.path(root)).is_ok_and(|m| m.permissions().mode() & 0o222 != 0)
}

/// Writes a sysctl under `root`. Refuses symlinks (none exist in /proc/sys; a fixture tree or a
/// tampered root must not redirect a write).
///
/// # Errors
/// [`SysctlError::Missing`], [`SysctlError::ReadOnly`] (no write bit), or [`SysctlError::Io`]
/// with the kernel's errno (EINVAL for a bad value).
pub(crate) fn write(root: &Path, key: &Key, value: &str) -> Result<(), SysctlError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = key.path(root);
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(SysctlError::Missing {
                key: key.clone(),
                path,
            })
        }
        Err(source) => {
            return Err(SysctlError::Io {
                op: "write",
                key: key.clone(),
                hint: hint(key, &source),
                path,
                source,
            })
        }
        Ok(_) if !writable(root, key) => {
            return Err(SysctlError::ReadOnly {
                key: key.clone(),
                path,
            })
        }
        Ok(_) => {}
    }
    let res = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .and_then(|mut f| f.write_all(value.as_bytes()));
    res.map_err(|error| SysctlError::Write {
        key: key.clone(),
        value: value.to_string(),
        hint: hint(key, &error),
        path,
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_traversal_slashes_empty_and_long_keys() {
        assert!(Key::parse("net/../../x").is_err());
        assert!(Key::parse("../etc/passwd").is_err());
        assert!(matches!(
            Key::parse("net..core"),
            Err(KeyError::EmptyComponent { .. })
        ));
        assert!(matches!(
            Key::parse(".net.core"),
            Err(KeyError::EmptyComponent { .. })
        ));
        assert!(matches!(Key::parse(""), Err(KeyError::Empty)));
        assert!(matches!(
            Key::parse(&"a".repeat(MAX_KEY_LEN + 1)),
            Err(KeyError::TooLong { .. })
        ));
        assert!(matches!(
            Key::parse("Net.core"),
            Err(KeyError::BadChar { ch: 'N', .. })
        ));
        assert!(Key::parse(&"a".repeat(MAX_KEY_LEN)).is_ok());
        assert!(Key::parse("fs.file-max").is_ok());
        assert!(matches!(
            Key::parse("net/ipv4/tcp_syncookies"),
            Err(KeyError::BadChar { ch: '/', .. })
        ));
        assert!(Key::parse("net.ipv4.conf.x//y.forwarding").is_err());
        assert!(Key::parse("net.ipv4.conf./.forwarding").is_err());
    }

    #[test]
    fn interface_names_with_dots_map_to_their_directory() {
        let k = Key::parse("net.ipv4.conf.enp3s0/200.forwarding").unwrap();
        assert_eq!(
            k.path(Path::new("/")),
            Path::new("/proc/sys/net/ipv4/conf/enp3s0.200/forwarding")
        );
        let back =
            Key::from_components(&["net", "ipv4", "conf", "enp3s0.200", "forwarding"]).unwrap();
        assert_eq!(back, k);
        assert!(Key::parse("net.ipv6.conf.ENP3s0.disable_ipv6").is_ok());
        assert!(Key::from_components(&["net", "..", "x"]).is_err());
    }

    #[test]
    fn path_stays_under_proc_sys() {
        let k = Key::parse("net.ipv4.tcp_syncookies").unwrap();
        assert_eq!(
            k.path(Path::new("/r")),
            Path::new("/r/proc/sys/net/ipv4/tcp_syncookies")
        );
    }

    #[test]
    fn classifies_netns_and_global_keys() {
        let s = |k: &str| Key::parse(k).unwrap().scope();
        assert_eq!(s("net.core.somaxconn"), Scope::Netns);
        assert_eq!(s("net.ipv4.tcp_max_syn_backlog"), Scope::Netns);
        assert_eq!(s("net.ipv4.ip_local_port_range"), Scope::Netns);
        assert_eq!(s("net.core.netdev_max_backlog"), Scope::Global);
        assert_eq!(s("net.core.busy_poll"), Scope::Global);
        assert_eq!(s("net.ipv4.tcp_mem"), Scope::Global);
        assert_eq!(s("net.ipv4.inet_peer_threshold"), Scope::Global);
        assert_eq!(s("fs.nr_open"), Scope::Global);
        assert_eq!(s("kernel.numa_balancing"), Scope::Global);
    }

    #[test]
    fn reads_and_writes_a_fixture_and_reports_missing_and_read_only() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let k = Key::parse("net.core.somaxconn").unwrap();
        std::fs::create_dir_all(k.path(d.path()).parent().unwrap()).unwrap();
        std::fs::write(k.path(d.path()), "4096\n").unwrap();
        assert_eq!(read(d.path(), &k).unwrap(), "4096");
        write(d.path(), &k, "8192").unwrap();
        assert_eq!(read(d.path(), &k).unwrap(), "8192");
        let gone = Key::parse("net.ipv4.tcp_tw_recycle").unwrap();
        assert!(matches!(
            read(d.path(), &gone),
            Err(SysctlError::Missing { .. })
        ));
        assert!(matches!(
            write(d.path(), &gone, "1"),
            Err(SysctlError::Missing { .. })
        ));
        std::fs::set_permissions(k.path(d.path()), std::fs::Permissions::from_mode(0o444)).unwrap();
        assert!(matches!(
            write(d.path(), &k, "1"),
            Err(SysctlError::ReadOnly { .. })
        ));
        assert_eq!(normalize("32768\t60999\n"), "32768 60999");
    }
}
