//! sysctl.d files as systemd-sysctl reads them: syntax, several files, globs, exclusions,
//! duplicates and aliases, resolved into one ordered list of concrete keys, each naming the
//! `file:line` it comes from, plus a [`LineNote`] for every line saying what became of it.
//!
//! Rules (sysctl.d(5); systemd src/sysctl/sysctl.c and src/basic/sysctl-util.c;
//! systemd-sysctl.service(8)):
//! - `#` or `;` at the start of a line: comment. `key = value`; a `-` before the key: a failed
//!   write is ignored (the entry is `optional`). `-key` without `=`: the key is excluded from
//!   glob matches. systemd-sysctl looks an exclusion up by its exact key name, so `-pattern*`
//!   alone excludes nothing; the line says so ([`Fate::NoEffect`]).
//! - Separators: the first of `/` or `.` decides. If it is `/`, the key is a path and dots stay
//!   dots (`net/ipv4/conf/enp3s0.200/forwarding`); if it is `.`, a `/` stands for a dot in a name
//!   (`net.ipv4.conf.enp3s0/200.forwarding` → interface `enp3s0.200`).
//! - Globs (`*`, `?`, `[...]`, per path component) expand over the keys that exist under
//!   `<root>/proc/sys`; a key also set explicitly (anywhere, by any file) is not touched by a glob.
//! - The same key twice: the later assignment wins ("overwriting earlier assignment"); the same
//!   value twice is one assignment. An exclusion line for a key replaces an assignment before it.
//! - Several files are read in order; with [`system_files`] that order is systemd's: for one file
//!   name `/etc/sysctl.d` beats `/run/sysctl.d` beats `/usr/local/lib/sysctl.d` beats
//!   `/usr/lib/sysctl.d`, a symlink to `/dev/null` masks the name, and the survivors are sorted
//!   by file name.
//! - Aliases ([`crate::sysctl::rules::ALIASES`]: `net.ipv4.ip_forward` =
//!   `net.ipv4.conf.all.forwarding`): both name one kernel value, so the later line wins and the
//!   earlier is reported overridden.
//!
//! Unlike systemd-sysctl, which logs and skips a line that is not an assignment, connstorm
//! refuses the file naming `file:line`, before anything is changed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::entry::{Entry, Op, PresetError};
use super::pattern::Pattern;
use crate::sysctl::Key;

/// Where a line is: file and 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Origin {
    /// The file as given.
    pub file: String,
    /// 1-based line.
    pub line: usize,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One line of a sysctl.d file, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Empty.
    Blank,
    /// `#` or `;`.
    Comment,
    /// `[-]key = value`.
    Assign {
        /// Key or glob.
        pattern: Pattern,
        /// Whitespace-normalized value.
        value: String,
        /// `-` prefix: a failed write is ignored.
        ignore_failure: bool,
    },
    /// `-key` alone: excluded from globs.
    Exclude {
        /// Key or glob.
        pattern: Pattern,
    },
}

fn bad(origin: &Origin, message: String) -> PresetError {
    PresetError::Syntax {
        origin: origin.file.clone(),
        line: origin.line,
        message,
    }
}

/// Parses one line.
///
/// # Errors
/// [`PresetError`] naming `file:line`: not an assignment, an invalid key, an empty value, a
/// trailing comment (sysctl.d would write it to the kernel as part of the value).
pub fn parse_line(raw: &str, origin: &Origin) -> Result<Line, PresetError> {
    let l = raw.trim();
    if l.is_empty() {
        return Ok(Line::Blank);
    }
    if l.starts_with('#') || l.starts_with(';') {
        return Ok(Line::Comment);
    }
    let (dash, rest) = match l.strip_prefix('-') {
        Some(r) => (true, r.trim_start()),
        None => (false, l),
    };
    let Some((k, v)) = rest.split_once('=') else {
        if !dash {
            return Err(bad(
                origin,
                format!(
                    "{l:?} is not `key = value` (a `-key` line alone excludes a key from globs)"
                ),
            ));
        }
        let pattern = Pattern::parse(rest.trim()).map_err(|m| bad(origin, m))?;
        return Ok(Line::Exclude { pattern });
    };
    let pattern = Pattern::parse(k.trim()).map_err(|m| bad(origin, m))?;
    if v.contains(" #") || v.contains("\t#") || v.contains(" ;") {
        return Err(PresetError::Value {
            origin: origin.file.clone(),
            line: origin.line,
            key: pattern.dotted(),
            message: format!(
                "{:?} has a trailing comment, which sysctl.d does not allow (it would be written to the kernel as part of the value): put the comment on its own line",
                v.trim()
            ),
        });
    }
    let value = crate::sysctl::normalize(v);
    if value.is_empty() || value.len() > 256 {
        return Err(PresetError::Value {
            origin: origin.file.clone(),
            line: origin.line,
            key: pattern.dotted(),
            message: "empty value, or longer than 256 bytes: write `key = value`".into(),
        });
    }
    Ok(Line::Assign {
        pattern,
        value,
        ignore_failure: dash,
    })
}

/// What became of one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "fate", rename_all = "kebab-case")]
pub enum Fate {
    /// Blank line.
    Blank,
    /// Comment.
    Comment,
    /// Its value is the effective one for these keys (a glob may also list keys it left alone).
    Effective {
        /// Keys it sets.
        keys: Vec<Key>,
        /// Keys a glob matched but does not set, with why.
        left: Vec<String>,
    },
    /// Replaced by a later line.
    Overridden {
        /// The line whose value wins.
        by: String,
        /// Why (same key, alias).
        why: String,
    },
    /// A glob that sets nothing.
    NoEffect {
        /// Why (no key matched; every match set explicitly or excluded).
        why: String,
    },
    /// An exclusion line.
    Excludes {
        /// Keys it kept away from globs.
        keys: Vec<Key>,
    },
}

/// One line and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineNote {
    /// Where.
    pub origin: Origin,
    /// The line as written (trimmed).
    pub text: String,
    /// What became of it.
    pub fate: Fate,
}

impl LineNote {
    /// One sentence from the files alone: which keys the line assigns, or why it assigns
    /// nothing. Whether the host takes an assignment (a key missing on this kernel, a value it
    /// rejects) is not known here: the plan's text (`render::plan::line_fate`) says that.
    pub fn describe(&self) -> String {
        match &self.fate {
            Fate::Blank => "blank".into(),
            Fate::Comment => "comment".into(),
            Fate::Effective { keys, left } => {
                let mut s = if keys.len() == 1 && left.is_empty() {
                    format!("assigns {}", keys[0])
                } else {
                    format!(
                        "glob assigns {} key(s): {}",
                        keys.len(),
                        keys.iter().map(Key::as_str).collect::<Vec<_>>().join(", ")
                    )
                };
                if !left.is_empty() {
                    s.push_str(&format!("; leaves {}", left.join(", ")));
                }
                s
            }
            Fate::Overridden { by, why } => format!("overridden by {by} ({why})"),
            Fate::NoEffect { why } => format!("sets nothing: {why}"),
            Fate::Excludes { keys } if keys.is_empty() => {
                "exclusion: no glob here matches it".into()
            }
            Fate::Excludes { keys } => format!(
                "excludes {} from globs",
                keys.iter().map(Key::as_str).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

/// A file to read: its name in messages and its text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The path as shown in `file:line`.
    pub name: String,
    /// Contents.
    pub text: String,
}

/// sysctl.d files resolved against a host.
#[derive(Debug, Clone, Serialize)]
pub struct Resolved {
    /// Concrete keys in write order, each with the `file:line` it comes from
    /// ([`Entry::origin`]) and the lines it replaced ([`Entry::overrides`]).
    pub entries: Vec<Entry>,
    /// Every line of every file, in file order.
    pub lines: Vec<LineNote>,
}

struct Opt {
    pattern: Pattern,
    value: Option<String>,
    ignore_failure: bool,
    origin: Origin,
    /// Earlier lines this one replaced, `file:line (value)` (at most [`MAX_OVERRIDES`]).
    overrides: Vec<String>,
}

/// How many replaced lines an entry lists; more are summed up in one `… N earlier line(s)`.
pub const MAX_OVERRIDES: usize = 8;

/// Appends `item` to `list`, keeping at most [`MAX_OVERRIDES`] items: the oldest are folded
/// into a leading `… N earlier line(s)` item.
fn push_override(list: &mut Vec<String>, item: String) {
    list.push(item);
    if list.len() <= MAX_OVERRIDES {
        return;
    }
    let folded = list[0]
        .strip_prefix("… ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok());
    match folded {
        Some(n) => {
            list.remove(1);
            list[0] = format!("… {} earlier line(s)", n + 1);
        }
        None => {
            list.drain(0..2);
            list.insert(0, "… 2 earlier line(s)".to_string());
        }
    }
}

fn shown(o: &Opt) -> String {
    format!(
        "{} ({})",
        o.origin,
        o.value.as_deref().unwrap_or("excluded")
    )
}

/// Parses `files` in order and resolves them against the keys under `<root>/proc/sys`.
/// Time and memory grow about linearly with the number of lines (plus the keys each glob
/// matches).
///
/// # Errors
/// [`PresetError`] naming `file:line` for the first unusable line; nothing is resolved then.
pub fn resolve_sysctl_d(files: &[SourceFile], root: &Path) -> Result<Resolved, PresetError> {
    let mut notes: Vec<LineNote> = Vec::new();
    // systemd's ordered hashmap: pattern text → option; replacing moves it to the end. A
    // replaced option leaves a hole (`None`) so positions stay valid.
    let mut opts: Vec<Option<Opt>> = Vec::new();
    let mut index: HashMap<Pattern, usize> = HashMap::new();
    let mut fates: HashMap<Origin, Fate> = HashMap::new();
    for f in files {
        for (i, raw) in f.text.lines().enumerate() {
            let origin = Origin {
                file: f.name.clone(),
                line: i + 1,
            };
            let parsed = parse_line(raw, &origin)?;
            notes.push(LineNote {
                origin: origin.clone(),
                text: raw.trim().to_string(),
                fate: Fate::Blank,
            });
            let (pattern, value, ignore_failure) = match parsed {
                Line::Blank => continue,
                Line::Comment => {
                    fates.insert(origin, Fate::Comment);
                    continue;
                }
                Line::Assign {
                    pattern,
                    value,
                    ignore_failure,
                } => (pattern, Some(value), ignore_failure),
                Line::Exclude { pattern } => (pattern, None, true),
            };
            let mut overrides = Vec::new();
            if let Some(&pos) = index.get(&pattern) {
                let existing = opts[pos].as_mut().expect("indexed options are live");
                if existing.value == value {
                    existing.ignore_failure |= ignore_failure;
                    fates.insert(
                        origin,
                        Fate::Overridden {
                            by: existing.origin.to_string(),
                            why: "same key and value, one assignment".into(),
                        },
                    );
                    continue;
                }
                let mut old = opts[pos].take().expect("indexed options are live");
                overrides = std::mem::take(&mut old.overrides);
                push_override(&mut overrides, shown(&old));
                fates.insert(
                    old.origin,
                    Fate::Overridden {
                        by: origin.to_string(),
                        why: "a later line for the same key wins".into(),
                    },
                );
            }
            index.insert(pattern.clone(), opts.len());
            opts.push(Some(Opt {
                pattern,
                value,
                ignore_failure,
                origin,
                overrides,
            }));
        }
    }
    let mut opts: Vec<Opt> = opts.into_iter().flatten().collect();
    // Concrete keys named by a line without glob characters (an assignment or an exclusion):
    // a glob leaves them alone (systemd: "Not setting %s (explicit setting exists)").
    let explicit: HashMap<Key, usize> = opts
        .iter()
        .enumerate()
        .filter(|(_, o)| !o.pattern.is_glob())
        .filter_map(|(i, o)| o.pattern.key().ok().map(|k| (k, i)))
        .collect();
    // Aliases: the later of two names for one value wins.
    let mut dropped: HashSet<usize> = HashSet::new();
    let mut alias_overrides: Vec<(usize, String)> = Vec::new();
    for (i, o) in opts.iter().enumerate() {
        let (Some(_), Ok(key)) = (&o.value, o.pattern.key()) else {
            continue;
        };
        if o.pattern.is_glob() {
            continue;
        }
        let Some((alias, other)) = crate::sysctl::rules::alias_of(&key) else {
            continue;
        };
        let later = Key::parse(other)
            .ok()
            .and_then(|k| explicit.get(&k).copied())
            .filter(|&j| j > i && opts[j].value.is_some());
        if let Some(j) = later {
            dropped.insert(i);
            alias_overrides.push((j, format!("{} [{key}]", shown(o))));
            fates.insert(
                o.origin.clone(),
                Fate::Overridden {
                    by: opts[j].origin.to_string(),
                    why: format!(
                        "{key} and {other} are one kernel value ({}); the later line wins — {}",
                        alias.source, alias.note
                    ),
                },
            );
        }
    }
    for (j, text) in alias_overrides {
        push_override(&mut opts[j].overrides, text);
    }
    let mut entries: Vec<Option<Entry>> = Vec::new();
    let mut entry_at: HashMap<Key, usize> = HashMap::new();
    let mut excluded: HashMap<Origin, Vec<Key>> = HashMap::new();
    let push = |entries: &mut Vec<Option<Entry>>,
                entry_at: &mut HashMap<Key, usize>,
                key: Key,
                o: &Opt,
                value: &str,
                fates: &mut HashMap<Origin, Fate>| {
        let mut overrides = o.overrides.clone();
        if let Some(pos) = entry_at.remove(&key) {
            let old = entries[pos].take().expect("indexed entries are live");
            for x in old.overrides.iter().cloned() {
                push_override(&mut overrides, x);
            }
            push_override(&mut overrides, format!("{} ({})", old.origin, old.value));
            if let Some(Fate::Effective { keys, left }) = fates.get_mut(&origin_of(&old)) {
                keys.retain(|k| *k != key);
                left.push(format!("{key} (overridden by {})", o.origin));
            }
        }
        entry_at.insert(key.clone(), entries.len());
        entries.push(Some(Entry {
            key,
            value: value.to_string(),
            op: Op::Set,
            optional: o.ignore_failure,
            manual: false,
            reason: format!("from {}", o.origin),
            source: o.origin.file.clone(),
            line: o.origin.line,
            origin: o.origin.to_string(),
            overrides,
        }));
    };
    let proc_sys = root.join("proc/sys");
    for (i, o) in opts.iter().enumerate() {
        let Some(value) = &o.value else {
            if o.pattern.is_glob() {
                // systemd-sysctl looks an exclusion up by its exact name, so a pattern here
                // keeps nothing away from a glob.
                fates.insert(
                    o.origin.clone(),
                    Fate::NoEffect {
                        why: format!(
                            "`-{}` has glob characters, and systemd-sysctl matches an exclusion by its exact key name (src/sysctl/sysctl.c apply_glob_option), so it excludes nothing: write one `-KEY` line per key to keep away from a glob",
                            o.pattern.dotted()
                        ),
                    },
                );
            }
            continue;
        };
        if dropped.contains(&i) {
            continue;
        }
        if !o.pattern.is_glob() {
            let key = o.pattern.key().map_err(|source| PresetError::Key {
                origin: o.origin.file.clone(),
                line: o.origin.line,
                source,
            })?;
            fates.insert(
                o.origin.clone(),
                Fate::Effective {
                    keys: vec![key.clone()],
                    left: Vec::new(),
                },
            );
            push(&mut entries, &mut entry_at, key, o, value, &mut fates);
            continue;
        }
        let matched = o.pattern.expand(root);
        let mut keys = Vec::new();
        let mut left = Vec::new();
        for key in matched.iter() {
            if let Some(&x) = explicit.get(key) {
                let x = &opts[x];
                let what = if x.value.is_some() {
                    "set explicitly"
                } else {
                    excluded
                        .entry(x.origin.clone())
                        .or_default()
                        .push(key.clone());
                    "excluded"
                };
                left.push(format!("{key} ({what} at {})", x.origin));
                continue;
            }
            keys.push(key.clone());
        }
        let fate = if keys.is_empty() {
            Fate::NoEffect {
                why: if matched.is_empty() {
                    format!("no key under {} matches the glob", proc_sys.display())
                } else {
                    format!("every match is left alone: {}", left.join(", "))
                },
            }
        } else {
            Fate::Effective {
                keys: keys.clone(),
                left,
            }
        };
        fates.insert(o.origin.clone(), fate);
        for key in keys {
            push(&mut entries, &mut entry_at, key, o, value, &mut fates);
        }
    }
    for o in opts.iter().filter(|o| o.value.is_none()) {
        if !fates.contains_key(&o.origin) {
            fates.insert(
                o.origin.clone(),
                Fate::Excludes {
                    keys: excluded.remove(&o.origin).unwrap_or_default(),
                },
            );
        }
    }
    for n in &mut notes {
        if let Some(f) = fates.remove(&n.origin) {
            n.fate = f;
        }
    }
    Ok(Resolved {
        entries: entries.into_iter().flatten().collect(),
        lines: notes,
    })
}

fn origin_of(e: &Entry) -> Origin {
    Origin {
        file: e.source.clone(),
        line: e.line,
    }
}

/// sysctl.d directories under a root, most important first (sysctl.d(5)).
pub const SYSCTL_D_DIRS: &[&str] = &[
    "etc/sysctl.d",
    "run/sysctl.d",
    "usr/local/lib/sysctl.d",
    "usr/lib/sysctl.d",
];

/// One file name of the system configuration and which copy of it counts.
#[derive(Debug, Clone, Serialize)]
pub struct SystemFile {
    /// The copy that is read (or the masking symlink).
    pub path: PathBuf,
    /// A symlink to /dev/null: the name is masked, nothing is read.
    pub masked: bool,
    /// Copies of the same name in less important directories, not read.
    pub shadowed: Vec<PathBuf>,
}

/// The `*.conf` files systemd-sysctl reads under `root`: per file name the copy in the most
/// important directory of [`SYSCTL_D_DIRS`], sorted by file name. `/etc/sysctl.conf` is not among
/// them (systemd-sysctl ignores it; distributions link `99-sysctl.conf` to it).
pub fn system_files(root: &Path) -> Vec<SystemFile> {
    let mut by_name: BTreeMap<String, SystemFile> = BTreeMap::new();
    for d in SYSCTL_D_DIRS {
        let dir = root.join(d);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".conf"))
            .collect();
        names.sort();
        for n in names {
            let path = dir.join(&n);
            match by_name.get_mut(&n) {
                Some(f) => f.shadowed.push(path),
                None => {
                    let masked = std::fs::read_link(&path)
                        .is_ok_and(|t| t == Path::new("/dev/null"))
                        || std::fs::metadata(&path).is_ok_and(|m| m.len() == 0 && !m.is_file());
                    by_name.insert(
                        n,
                        SystemFile {
                            path,
                            masked,
                            shadowed: Vec::new(),
                        },
                    );
                }
            }
        }
    }
    by_name.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o() -> Origin {
        Origin {
            file: "f.conf".into(),
            line: 1,
        }
    }

    #[test]
    fn lines_parse_as_systemd_reads_them() {
        assert_eq!(parse_line("  ; x", &o()).unwrap(), Line::Comment);
        assert!(matches!(
            parse_line("-net.ipv4.conf.lxc*.rp_filter", &o()).unwrap(),
            Line::Exclude { .. }
        ));
        assert!(matches!(
            parse_line("-net.netfilter.nf_conntrack_count = 2944", &o()).unwrap(),
            Line::Assign {
                ignore_failure: true,
                ..
            }
        ));
        let e = parse_line("nonsense", &o()).unwrap_err().to_string();
        assert!(e.starts_with("f.conf:1:"), "{e}");
    }
}
