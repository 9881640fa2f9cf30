//! A sysctl.d key or glob pattern as real path components under `/proc/sys` ([`Pattern`]), and
//! the fnmatch(3) its globs follow (sysctl.d(5); systemd src/basic/sysctl-util.c).

use std::path::{Path, PathBuf};

use super::key::{Key, KeyError};

/// A key or glob pattern as real path components under `/proc/sys`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pattern {
    parts: Vec<String>,
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

impl Pattern {
    /// Normalizes a key as sysctl.d(5) does (the first separator decides) and checks every
    /// component is a plain name or glob.
    ///
    /// # Errors
    /// A message saying what is wrong.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let first = text.find(['/', '.']);
        let parts: Vec<String> = match first.map(|i| &text[i..=i]) {
            Some("/") => text
                .trim_start_matches('/')
                .split('/')
                .map(str::to_string)
                .collect(),
            _ => text.split('.').map(|p| p.replace('/', ".")).collect(),
        };
        if text.len() > crate::sysctl::MAX_KEY_LEN {
            return Err(format!(
                "key is {} bytes, longer than {}",
                text.len(),
                crate::sysctl::MAX_KEY_LEN
            ));
        }
        for p in &parts {
            if p.is_empty() || p == "." || p == ".." {
                return Err(format!(
                    "{text:?} has an empty, `.` or `..` component: write a key like net.core.somaxconn or net/core/somaxconn"
                ));
            }
            if let Some(ch) = p
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || "_-.@:*?[]!^".contains(*c)))
            {
                return Err(format!(
                    "{text:?} contains {ch:?}, which no sysctl name holds"
                ));
            }
        }
        let pat = Pattern { parts };
        if !pat.is_glob() {
            pat.key().map_err(|e| e.to_string())?;
        }
        Ok(pat)
    }

    /// True when a component holds `*`, `?` or `[`.
    pub fn is_glob(&self) -> bool {
        self.parts.iter().any(|p| is_glob(p))
    }

    /// The concrete key (for a pattern without glob characters).
    ///
    /// # Errors
    /// The key is not valid ([`KeyError`]).
    pub fn key(&self) -> Result<Key, KeyError> {
        let parts: Vec<&str> = self.parts.iter().map(String::as_str).collect();
        Key::from_components(&parts)
    }

    /// Dotted form (a dot inside a name written `/`), as sysctl(8) prints keys.
    pub fn dotted(&self) -> String {
        self.parts
            .iter()
            .map(|p| p.replace('.', "/"))
            .collect::<Vec<_>>()
            .join(".")
    }

    /// True when `key` matches this pattern component by component.
    pub fn matches(&self, key: &Key) -> bool {
        let kp = key.components();
        kp.len() == self.parts.len()
            && self
                .parts
                .iter()
                .zip(&kp)
                .all(|(p, k)| fnmatch(p.as_bytes(), k.as_bytes()))
    }

    /// The existing keys under `<root>/proc/sys` this pattern matches, sorted (glob(3) order).
    /// Hidden entries (leading `.`) match only a component that starts with `.`, as in glob(3).
    pub fn expand(&self, root: &Path) -> Vec<Key> {
        let mut found: Vec<(PathBuf, Vec<String>)> = vec![(root.join("proc/sys"), Vec::new())];
        for (i, part) in self.parts.iter().enumerate() {
            let last = i + 1 == self.parts.len();
            let mut next = Vec::new();
            for (dir, names) in found {
                let candidates: Vec<String> = if is_glob(part) {
                    let mut v: Vec<String> = std::fs::read_dir(&dir)
                        .into_iter()
                        .flatten()
                        .flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| !n.starts_with('.') && fnmatch(part.as_bytes(), n.as_bytes()))
                        .collect();
                    v.sort();
                    v
                } else {
                    vec![part.clone()]
                };
                for c in candidates {
                    let p = dir.join(&c);
                    let ok = if last { p.is_file() } else { p.is_dir() };
                    if ok {
                        let mut n = names.clone();
                        n.push(c);
                        next.push((p, n));
                    }
                }
            }
            found = next;
        }
        found
            .into_iter()
            .filter_map(|(_, names)| {
                let parts: Vec<&str> = names.iter().map(String::as_str).collect();
                Key::from_components(&parts).ok()
            })
            .collect()
    }
}

/// fnmatch(3) without flags on one path component: `*`, `?`, `[abc]`, `[a-z]`, `[!x]`/`[^x]`,
/// and `\x` for a literal `x`.
pub fn fnmatch(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') => (0..=s.len()).any(|i| fnmatch(&p[1..], &s[i..])),
        Some(b'?') => !s.is_empty() && fnmatch(&p[1..], &s[1..]),
        Some(b'[') => {
            let Some(&c) = s.first() else { return false };
            let mut i = 1;
            let negate = matches!(p.get(i), Some(b'!' | b'^'));
            if negate {
                i += 1;
            }
            let start = i;
            let mut hit = false;
            while i < p.len() && (p[i] != b']' || i == start) {
                if i + 2 < p.len() && p[i + 1] == b'-' && p[i + 2] != b']' {
                    hit |= p[i] <= c && c <= p[i + 2];
                    i += 3;
                } else {
                    hit |= p[i] == c;
                    i += 1;
                }
            }
            if i >= p.len() {
                // No closing bracket: `[` is a literal.
                return c == b'[' && fnmatch(&p[1..], &s[1..]);
            }
            hit != negate && fnmatch(&p[i + 1..], &s[1..])
        }
        Some(b'\\') if p.len() > 1 => s.first() == Some(&p[1]) && fnmatch(&p[2..], &s[1..]),
        Some(&ch) => s.first() == Some(&ch) && fnmatch(&p[1..], &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_separator_decides() {
        let p = Pattern::parse("net/ipv4/conf/enp3s0.200/forwarding").unwrap();
        assert_eq!(p.dotted(), "net.ipv4.conf.enp3s0/200.forwarding");
        let q = Pattern::parse("net.ipv4.conf.enp3s0/200.forwarding").unwrap();
        assert_eq!(p, q);
        assert_eq!(
            Pattern::parse("net/ipv4/tcp_syncookies").unwrap().dotted(),
            "net.ipv4.tcp_syncookies"
        );
        assert!(Pattern::parse("net/../etc").is_err());
        assert!(Pattern::parse("net..core").is_err());
    }

    #[test]
    fn fnmatch_basics() {
        assert!(fnmatch(b"lxc*", b"lxcbr0"));
        assert!(!fnmatch(b"lxc*", b"eth0"));
        assert!(fnmatch(b"eth?", b"eth1"));
        assert!(fnmatch(b"eth[0-2]", b"eth2"));
        assert!(!fnmatch(b"eth[!0-2]", b"eth2"));
        assert!(fnmatch(b"*", b"all"));
        assert!(fnmatch(b"a[", b"a["));
    }
}
