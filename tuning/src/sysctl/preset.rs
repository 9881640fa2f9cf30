//! Sysctl presets: connstorm's TOML preset files, and the plain sysctl.conf / sysctl.d files
//! (sysctl.conf(5), sysctl.d(5)) that users already deploy.
//!
//! Preset format (the files in the repository's `presets/` directory):
//! ```toml
//! name = "c1m-server"
//! description = "accept side of a connection-rate run"
//!
//! [[sysctl]]
//! key = "net.core.somaxconn"
//! value = 65535            # integer or string ("1024 65535")
//! op = "at-least"          # "set" (default): exactly; "at-least": a limit never lowered; "at-most"
//! optional = false         # true: missing on this kernel is reported but not an error
//! manual = false           # true: only right under the condition in `reason`; never applied,
//!                          # exported commented out
//! reason = "listen() backlogs are capped to somaxconn"
//! source = "Documentation/networking/ip-sysctl.rst"
//!
//! [[cmdline]]
//! param = "skew_tick=1"
//! reason = "..."
//! source = "tuned network-latency"
//! ```
//! Unknown fields, wrong types, duplicate keys, invalid keys and garbage are errors naming
//! `file:line`. In sysctl.conf files, `#` and `;` start comments and a leading `-` means "ignore
//! a failure for this key" (procps-ng 3.3.17+ / systemd-sysctl), loaded as `optional`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::entry::{Entry, Op, PresetError, MAX_FILE_BYTES};
use super::key::Key;
use super::sysctld::LineNote;

/// One recommended kernel command-line parameter (exported, never applied at run time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CmdlineParam {
    /// `name=value` or `name`.
    pub param: String,
    /// Why.
    pub reason: String,
    /// Where from.
    pub source: String,
}

/// A loaded preset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preset {
    /// Name (`c1m-server`; a sysctl.conf file is named after its file name).
    pub name: String,
    /// One line of what it is for.
    pub description: String,
    /// The file it came from (or `builtin:<name>`).
    pub origin: String,
    /// Sysctls, in file order.
    pub sysctls: Vec<Entry>,
    /// Kernel command-line parameters.
    pub cmdline: Vec<CmdlineParam>,
    /// sysctl.d files: every line and what became of it (empty for TOML presets).
    #[serde(skip)]
    pub lines: Vec<LineNote>,
}

/// Reads a sysctl.d or preset file as text: a regular file (or `/dev/null`, read as empty, as
/// systemd reads a masked name) of at most [`MAX_FILE_BYTES`], in UTF-8. Lines may end in LF or
/// CRLF.
///
/// # Errors
/// [`PresetError::NotAFile`] for a directory, FIFO, socket or other device (checked before
/// opening, so a FIFO never blocks), [`PresetError::TooLarge`], [`PresetError::Read`], and
/// [`PresetError::Syntax`] naming the `file:line` of the first byte that is not UTF-8.
pub fn read_text(path: &Path) -> Result<String, PresetError> {
    use std::os::unix::fs::FileTypeExt;
    let name = path.display().to_string();
    let read_err = |source| PresetError::Read {
        path: name.clone(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(read_err)?;
    let t = meta.file_type();
    if t.is_char_device()
        && path
            .canonicalize()
            .is_ok_and(|p| p == Path::new("/dev/null"))
    {
        return Ok(String::new());
    }
    let what = if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() || t.is_block_device() {
        Some("a device")
    } else {
        None
    };
    if let Some(what) = what {
        return Err(PresetError::NotAFile { path: name, what });
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(PresetError::TooLarge {
            path: name,
            bytes: meta.len(),
        });
    }
    let mut bytes = Vec::new();
    {
        use std::io::Read;
        std::fs::File::open(path)
            .map_err(read_err)?
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read_err)?;
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(PresetError::TooLarge {
            path: name,
            bytes: bytes.len() as u64,
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let b = e.as_bytes();
        let line = b[..at].iter().filter(|&&c| c == b'\n').count() + 1;
        let column = at - b[..at].iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1) + 1;
        PresetError::Syntax {
            origin: name.clone(),
            line,
            message: format!(
                "byte 0x{:02x} at column {column} is not UTF-8 text: sysctl keys are ASCII; re-save the file as UTF-8",
                b[at]
            ),
        }
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPreset {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    sysctl: Vec<RawEntry>,
    #[serde(default)]
    cmdline: Vec<CmdlineParam>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    key: Spanned<String>,
    value: Spanned<toml::Value>,
    #[serde(default)]
    op: Op,
    #[serde(default)]
    optional: bool,
    #[serde(default)]
    manual: bool,
    reason: String,
    source: String,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Checks a value's shape: non-empty, one line, at most 256 bytes; numbers for at-least/at-most.
fn check_value(value: &str, op: Op) -> Result<String, String> {
    let v = crate::sysctl::normalize(value);
    if v.is_empty() {
        return Err("empty value".into());
    }
    if value.contains('\n') || v.len() > 256 {
        return Err("a value is one line of at most 256 bytes".into());
    }
    if op != Op::Set && v.split(' ').any(|n| n.parse::<i64>().is_err()) {
        return Err(format!(
            "{v:?} is not a number (or numbers) but op is at-least/at-most"
        ));
    }
    Ok(v)
}

impl Preset {
    /// True when this came from sysctl.conf / sysctl.d files (not a TOML preset or a built-in
    /// one): every TOML source has the origin `builtin:NAME` or a `*.toml` path, because
    /// [`Preset::load_all`] takes a TOML file only alone.
    pub fn is_sysctl_d(&self) -> bool {
        !self.origin.starts_with("builtin:") && !self.origin.ends_with(".toml")
    }

    /// How messages name this source: `preset NAME (ORIGIN)` for presets, `sysctl.d file PATH`
    /// or `sysctl.d files A, B` for sysctl.d files.
    pub fn title(&self) -> String {
        if !self.is_sysctl_d() {
            format!("preset {} ({})", self.name, self.origin)
        } else if self.origin.contains(", ") {
            format!("sysctl.d files {}", self.origin)
        } else {
            format!("sysctl.d file {}", self.origin)
        }
    }

    /// Parses a preset in the TOML format. `origin` names the file in errors.
    ///
    /// # Errors
    /// [`PresetError`] with `origin:line`.
    pub fn parse_toml(text: &str, origin: &str) -> Result<Preset, PresetError> {
        let raw: RawPreset = toml::from_str(text).map_err(|e| PresetError::Syntax {
            origin: origin.to_string(),
            line: e.span().map_or(1, |s| line_of(text, s.start)),
            message: e.message().trim().to_string(),
        })?;
        let mut sysctls: Vec<Entry> = Vec::new();
        for r in raw.sysctl {
            let line = line_of(text, r.key.span().start);
            let key = Key::parse(r.key.get_ref()).map_err(|source| PresetError::Key {
                origin: origin.to_string(),
                line,
                source,
            })?;
            let vline = line_of(text, r.value.span().start);
            let bad = |message: String| PresetError::Value {
                origin: origin.to_string(),
                line: vline,
                key: key.to_string(),
                message,
            };
            let text_value = match r.value.get_ref() {
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::String(s) => s.clone(),
                other => {
                    return Err(bad(format!(
                        "a {} is not a sysctl value: write an integer or a string",
                        other.type_str()
                    )))
                }
            };
            let value = check_value(&text_value, r.op).map_err(bad)?;
            push_unique(
                &mut sysctls,
                origin,
                Entry {
                    key,
                    value,
                    op: r.op,
                    optional: r.optional,
                    manual: r.manual,
                    reason: r.reason,
                    source: r.source,
                    line,
                    origin: String::new(),
                    overrides: Vec::new(),
                },
            )?;
        }
        Ok(Preset {
            name: raw.name,
            description: raw.description,
            origin: origin.to_string(),
            sysctls,
            cmdline: raw.cmdline,
            lines: Vec::new(),
        })
    }

    /// Parses one sysctl.conf / sysctl.d file with the full sysctl.d(5) syntax (see the sysctl.d
    /// reader, [`crate::sysctl::resolve_sysctl_d`]); globs expand over the keys of this host's
    /// `/proc/sys`. Every entry gets `op = set` and `reason = "from <file>:<line>"`.
    ///
    /// # Errors
    /// [`PresetError`] with `origin:line` for a line that is not an assignment, an invalid key,
    /// an empty value or a trailing comment.
    pub fn parse_sysctl_conf(text: &str, origin: &str) -> Result<Preset, PresetError> {
        Preset::from_sysctl_d(
            &[crate::sysctl::SourceFile {
                name: origin.to_string(),
                text: text.to_string(),
            }],
            Path::new("/"),
        )
    }

    /// Resolves several sysctl.d files, read in the given order, against the keys under
    /// `<root>/proc/sys` (see [`crate::sysctl::resolve_sysctl_d`]). The preset is named after the
    /// first file; [`Preset::lines`] says what became of every line.
    ///
    /// # Errors
    /// [`PresetError`] naming `file:line`.
    pub fn from_sysctl_d(
        files: &[crate::sysctl::SourceFile],
        root: &Path,
    ) -> Result<Preset, PresetError> {
        let r = crate::sysctl::resolve_sysctl_d(files, root)?;
        let first = files.first().map_or("-", |f| f.name.as_str());
        let name = Path::new(first)
            .file_stem()
            .map_or(first.to_string(), |s| s.to_string_lossy().to_string());
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        Ok(Preset {
            name,
            description: format!("sysctl.d {}", names.join(", ")),
            origin: names.join(", "),
            sysctls: r.entries,
            cmdline: Vec::new(),
            lines: r.lines,
        })
    }

    /// Reads files: one `*.toml` preset, or any number of sysctl.d files resolved together
    /// against `<root>/proc/sys`.
    ///
    /// # Errors
    /// [`PresetError`]; a TOML preset mixed with other files is refused.
    pub fn load_all(paths: &[PathBuf], root: &Path) -> Result<Preset, PresetError> {
        if paths
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "toml"))
        {
            if let [one] = paths {
                return Preset::load(one);
            }
            return Err(PresetError::Syntax {
                origin: paths[0].display().to_string(),
                line: 1,
                message: "a TOML preset cannot be combined with other files: pass it alone".into(),
            });
        }
        let mut files = Vec::new();
        for p in paths {
            let name = p.display().to_string();
            let text = read_text(p)?;
            files.push(crate::sysctl::SourceFile { name, text });
        }
        Preset::from_sysctl_d(&files, root)
    }

    /// Loads a file: `*.toml` as a preset, anything else as a sysctl.conf file.
    ///
    /// # Errors
    /// [`PresetError`].
    pub fn load(path: &Path) -> Result<Preset, PresetError> {
        let origin = path.display().to_string();
        let text = read_text(path)?;
        if path.extension().is_some_and(|e| e == "toml") {
            Preset::parse_toml(&text, &origin)
        } else {
            Preset::parse_sysctl_conf(&text, &origin)
        }
    }
}

/// Appends `entry`, refusing a key the file already set (with both lines in the error).
fn push_unique(sysctls: &mut Vec<Entry>, origin: &str, entry: Entry) -> Result<(), PresetError> {
    if let Some(first) = sysctls.iter().find(|e| e.key == entry.key) {
        return Err(PresetError::Duplicate {
            origin: origin.to_string(),
            line: entry.line,
            first_line: first.line,
            key: entry.key.to_string(),
        });
    }
    sysctls.push(entry);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_conf_trailing_comment_is_refused_with_its_line() {
        let err =
            Preset::parse_sysctl_conf("# ok\nnet.ipv4.tcp_syncookies = 1 # trailing\n", "f.conf")
                .unwrap_err()
                .to_string();
        assert!(err.contains("f.conf:2"), "{err}");
        assert!(err.contains("own line"), "{err}");
    }

    const GOOD: &str = r#"name = "t"
description = "test"

[[sysctl]]
key = "net.core.somaxconn"
value = 65535
op = "at-least"
reason = "r"
source = "s"

[[sysctl]]
key = "net.ipv4.ip_local_port_range"
value = "1024   65535"
reason = "r"
source = "s"

[[cmdline]]
param = "skew_tick=1"
reason = "r"
source = "s"
"#;

    #[test]
    fn parses_a_good_preset() {
        let p = Preset::parse_toml(GOOD, "t.toml").unwrap();
        assert_eq!(p.sysctls.len(), 2);
        assert_eq!(p.sysctls[0].op, Op::AtLeast);
        assert_eq!(p.sysctls[0].value, "65535");
        assert_eq!(p.sysctls[1].value, "1024 65535");
        assert_eq!(p.sysctls[1].line, 12);
        assert_eq!(p.cmdline[0].param, "skew_tick=1");
    }

    fn err(text: &str) -> String {
        Preset::parse_toml(text, "bad.toml")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn bad_presets_name_file_and_line() {
        let unknown = GOOD.replace("op = \"at-least\"", "opp = \"at-least\"");
        assert!(
            err(&unknown).starts_with("bad.toml:7:"),
            "{}",
            err(&unknown)
        );
        assert!(err(&unknown).contains("opp"));
        let wrong_type = GOOD.replace("value = 65535", "value = true");
        assert!(
            err(&wrong_type).starts_with("bad.toml:6:") && err(&wrong_type).contains("boolean"),
            "{}",
            err(&wrong_type)
        );
        let not_number = GOOD.replace("value = 65535", "value = \"lots\"");
        assert!(err(&not_number).contains("not a number"));
        let dup = GOOD.replace("net.ipv4.ip_local_port_range", "net.core.somaxconn");
        assert!(
            err(&dup)
                .starts_with("bad.toml:12: duplicate key net.core.somaxconn (first at line 5)"),
            "{}",
            err(&dup)
        );
        let bad_key = GOOD.replace("net.core.somaxconn", "net/../../x");
        assert!(
            err(&bad_key).starts_with("bad.toml:5:"),
            "{}",
            err(&bad_key)
        );
        let garbage = format!("{GOOD}\n@@@ garbage\n");
        assert!(
            err(&garbage).starts_with("bad.toml:22:"),
            "{}",
            err(&garbage)
        );
        let bad_op = GOOD.replace("at-least", "sometimes");
        assert!(err(&bad_op).starts_with("bad.toml:7:"), "{}", err(&bad_op));
    }

    #[test]
    fn parses_sysctl_conf_with_comments_and_ignore_prefix() {
        let text = "# c\n; c\n\nnet.core.somaxconn = 1024\n-net.ipv4.tcp_tw_recycle=1\nfs.file-max =  100 \n";
        let p = Preset::parse_sysctl_conf(text, "/etc/sysctl.d/99-x.conf").unwrap();
        assert_eq!(p.name, "99-x");
        assert_eq!(p.sysctls.len(), 3);
        assert!(p.sysctls[1].optional && !p.sysctls[0].optional);
        assert_eq!(p.sysctls[2].value, "100");
        assert_eq!(p.sysctls[2].line, 6);
        let e = |t: &str| {
            Preset::parse_sysctl_conf(t, "f.conf")
                .unwrap_err()
                .to_string()
        };
        assert!(e("a.b = 1\nnonsense\n").starts_with("f.conf:2:"));
        assert!(e("net/../x = 1\n").starts_with("f.conf:1:"));
        assert!(e("a.b =   \n").contains("empty value"));
        let dup =
            Preset::parse_sysctl_conf("fs.file-max = 1\n\nfs.file-max = 2\n", "f.conf").unwrap();
        assert_eq!(dup.sysctls.len(), 1);
        assert_eq!(dup.sysctls[0].value, "2");
        assert_eq!(dup.sysctls[0].origin, "f.conf:3");
        assert_eq!(dup.sysctls[0].overrides, ["f.conf:1 (1)"]);
    }
}
