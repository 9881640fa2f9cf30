//! `tune import`: shell scripts that tune a host by hand, turned into a sysctl.d file.
//!
//! Understood (one command per line, optionally after `sudo`):
//! - `echo [-n] VALUE > /proc/sys/a/b/c` (also `>>`, and `echo VALUE | [sudo] tee [-a] FILE`);
//! - `sysctl [-w] [-q] [-e] KEY=VALUE...` (procps sysctl(8); `-e` ignores unknown keys, so those
//!   entries get the sysctl.d `-` prefix);
//! - `echo "KEY = VALUE" >> /etc/sysctl.conf` (or a `*.conf` in a sysctl.d directory), and a
//!   here-document into one (`cat >> /etc/sysctl.d/x.conf <<EOF` ... `EOF`), line by line.
//!
//! A line may hold several commands (`a; b`, `a && b`, `a || b`): each is read. Descriptor
//! redirections follow the shell: `2>/dev/null` and `>/dev/null 2>&1` are ignored, and
//! `echo 1>FILE` redirects descriptor 1 (it writes an empty line, not `1`), so it is not
//! imported. Loops and conditions (`for`, `if`, ...) are not run: listed as not understood.
//!
//! Comments, blank lines and shell boilerplate (`#!`, `set -e`) are skipped. Every other line is
//! listed as not understood, with what to do instead (`ulimit` → LimitNOFILE= / limits.d,
//! `modprobe` → modules-load.d, writes to /sys → udev rules or tmpfiles.d, ...). Quoting follows
//! the shell for `'...'` and `"..."`; a value using `$VARIABLE` or `$(command)` is not
//! understood (its value is unknown until the script runs).

use serde::Serialize;

use crate::sysctl::{normalize, Key};

/// What one script line became.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ImportOutcome {
    /// A sysctl write.
    Sysctl {
        /// Key.
        key: Key,
        /// Value (normalized).
        value: String,
        /// From `sysctl -e`: an unknown key is ignored.
        ignore_failure: bool,
    },
    /// Nothing to import (comment, blank, shell boilerplate).
    Skipped {
        /// What it is.
        why: String,
    },
    /// Not understood, with advice.
    NotUnderstood {
        /// What to do instead.
        advice: String,
    },
}

/// One script line.
#[derive(Debug, Clone, Serialize)]
pub struct ImportLine {
    /// 1-based line number.
    pub line: usize,
    /// The line (trimmed).
    pub text: String,
    /// What it became (a `sysctl -w a=1 b=2` line gives two outcomes).
    pub outcomes: Vec<ImportOutcome>,
}

/// Splits a shell line into words, honouring `'...'`, `"..."` and `\x`; `None` on an unclosed
/// quote. Redirections `>`/`>>`/`|` become their own words.
fn words(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut has = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                has = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        x => cur.push(x),
                    }
                }
            }
            '"' => {
                has = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        // sh(1): inside double quotes a backslash escapes only $ ` " \ and a
                        // newline; before anything else it stays (`"4096\t8192"` keeps `\t`
                        // for echo -e / dash's echo to turn into a tab).
                        '\\' => match chars.next()? {
                            x @ ('$' | '`' | '"' | '\\' | '\n') => cur.push(x),
                            x => {
                                cur.push('\\');
                                cur.push(x);
                            }
                        },
                        x => cur.push(x),
                    }
                }
            }
            '\\' => {
                has = true;
                cur.push(chars.next()?);
            }
            '>' | '|' | ';' | '&' => {
                // `2>/dev/null`, `1>FILE`: a descriptor number glued to `>` is part of it.
                let fd =
                    c == '>' && has && !cur.is_empty() && cur.chars().all(|d| d.is_ascii_digit());
                let mut op = if fd {
                    has = false;
                    std::mem::take(&mut cur)
                } else {
                    String::new()
                };
                if has {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
                op.push(c);
                if c == '>' && chars.peek() == Some(&'>') {
                    chars.next();
                    op.push('>');
                }
                // `2>&1`, `>&2`, `&>FILE`: descriptor duplication, not a command separator.
                if (c == '>' && chars.peek() == Some(&'&'))
                    || (c == '&' && chars.peek() == Some(&'>'))
                {
                    op.push(chars.next().unwrap_or_default());
                }
                out.push(op);
            }
            c if c.is_whitespace() => {
                if has {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            c => {
                has = true;
                cur.push(c);
            }
        }
    }
    if has {
        out.push(cur);
    }
    Some(out)
}

fn not_understood(advice: impl Into<String>) -> Vec<ImportOutcome> {
    vec![ImportOutcome::NotUnderstood {
        advice: advice.into(),
    }]
}

/// The key for a file under /proc/sys, if it is one.
fn proc_sys_key(path: &str) -> Result<Key, String> {
    let rest = path
        .strip_prefix("/proc/sys/")
        .ok_or_else(|| format!("{path} is not under /proc/sys"))?;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    Key::from_components(&parts).map_err(|e| e.to_string())
}

fn advice_for_path(path: &str) -> String {
    if path.starts_with("/proc/irq/") {
        "an IRQ affinity: use `connstorm tune irq --dev DEV --plan ...` (it saves a snapshot and can revert)".into()
    } else if path.contains("/queues/") && (path.contains("rps_") || path.contains("xps_")) {
        "RPS/XPS steering in sysfs: a udev rule (ACTION==\"add\", SUBSYSTEM==\"net\") or a tmpfiles.d `w` line; not a sysctl".into()
    } else if path.starts_with("/sys/") {
        "a sysfs attribute, not a sysctl: a tmpfiles.d(5) `w PATH - - - - VALUE` line or a udev rule makes it persistent".into()
    } else {
        format!("{path} is not under /proc/sys: not a sysctl")
    }
}

/// True for the files sysctl(8) and systemd-sysctl read: `/etc/sysctl.conf` and `*.conf` in
/// a sysctl.d directory.
fn is_sysctl_file(path: &str) -> bool {
    path == "/etc/sysctl.conf"
        || (path.ends_with(".conf")
            && crate::sysctl::SYSCTL_D_DIRS.iter().any(|d| {
                path.strip_prefix('/')
                    .is_some_and(|p| p.starts_with(&format!("{d}/")))
            }))
}

/// A line a script writes into a sysctl file (`echo "k = v" >> /etc/sysctl.conf`, or a
/// here-document's body): the assignment it holds.
fn conf_line(text: &str, file: &str) -> Vec<ImportOutcome> {
    let origin = crate::sysctl::Origin {
        file: file.to_string(),
        line: 0,
    };
    if has_expansion(text) {
        return not_understood("uses a shell variable or command substitution: its value is known only when the script runs; write the result as `key = value`");
    }
    match crate::sysctl::parse_line(text, &origin) {
        Ok(crate::sysctl::Line::Blank) => vec![ImportOutcome::Skipped {
            why: format!("a blank line written to {file}"),
        }],
        Ok(crate::sysctl::Line::Comment) => vec![ImportOutcome::Skipped {
            why: format!("a comment written to {file}"),
        }],
        Ok(crate::sysctl::Line::Assign {
            pattern,
            value,
            ignore_failure,
        }) => match pattern.key() {
            Ok(key) => vec![ImportOutcome::Sysctl {
                key,
                value,
                ignore_failure,
            }],
            Err(_) => not_understood(format!(
                "a glob written to {file}: copy `{}` into the sysctl.d file by hand (globs expand over the keys of the host that applies it)",
                text.trim()
            )),
        },
        Ok(crate::sysctl::Line::Exclude { .. }) => not_understood(format!(
            "an exclusion written to {file}: copy `{}` into the sysctl.d file by hand",
            text.trim()
        )),
        Err(e) => not_understood(format!(
            "written to {file}, but not a sysctl.d line: {}",
            e.to_string().trim_start_matches(&format!("{file}:0: "))
        )),
    }
}

fn has_expansion(s: &str) -> bool {
    s.contains('$') || s.contains('`')
}

/// What one line means.
fn classify(line: &str) -> Vec<ImportOutcome> {
    let t = line.trim();
    if t.is_empty() {
        return vec![ImportOutcome::Skipped {
            why: "blank".into(),
        }];
    }
    if t.starts_with('#') {
        return vec![ImportOutcome::Skipped {
            why: "comment".into(),
        }];
    }
    let Some(all) = words(t) else {
        return not_understood("an unclosed quote: fix the line, then import again");
    };
    const COMPOUND: &[&str] = &[
        "for", "while", "until", "if", "case", "do", "done", "then", "else", "elif", "fi", "esac",
        "function", "{", "}",
    ];
    if all.first().is_some_and(|w| COMPOUND.contains(&w.as_str())) {
        return not_understood(if t.contains("/proc/sys/") {
            "a shell loop or condition writing /proc/sys: import does not run it; for a loop over interfaces write a glob in the sysctl.d file (`net.ipv4.conf.*.rp_filter = 0`, expanded over the keys that exist when it is applied)"
        } else {
            "a shell loop or condition: import does not run it; write what it sets as `key = value` lines"
        });
    }
    // One line may hold several commands: `a; b`, `a && b`, `a || b`, `a & b`.
    let mut out = Vec::new();
    let mut cmd: Vec<String> = Vec::new();
    let mut it = all.into_iter().peekable();
    while let Some(w) = it.next() {
        let sep = match w.as_str() {
            ";" | "&" => true,
            "|" if it.peek().is_some_and(|n| n == "|") => {
                it.next();
                true
            }
            _ => false,
        };
        if sep {
            if !cmd.is_empty() {
                out.extend(command(std::mem::take(&mut cmd), t));
            }
            while it.peek().is_some_and(|n| n == "&") {
                it.next();
            }
        } else {
            cmd.push(w);
        }
    }
    if !cmd.is_empty() {
        out.extend(command(cmd, t));
    }
    if out.is_empty() {
        out.push(ImportOutcome::Skipped {
            why: "blank".into(),
        });
    }
    out
}

/// What one command (its words, without `;`/`&&` separators) means; `t` is the whole line.
fn command(mut w: Vec<String>, t: &str) -> Vec<ImportOutcome> {
    // Descriptor redirections: `1>` is `>`; `2>FILE` (stderr) is dropped with its target.
    let mut i = 0;
    while i < w.len() {
        match w[i].as_str() {
            "1>" | "1>>" => {
                w[i] = w[i][1..].to_string();
                i += 1;
            }
            x if x.contains(">&") || x == "&>" => {
                w.drain(i..(i + 2).min(w.len()));
            }
            x if x.ends_with('>') && x.len() > 1 && x.as_bytes()[0].is_ascii_digit() => {
                w.drain(i..(i + 2).min(w.len()));
            }
            x if x.ends_with(">>") && x.len() > 2 && x.as_bytes()[0].is_ascii_digit() => {
                w.drain(i..(i + 2).min(w.len()));
            }
            _ => i += 1,
        }
    }
    while w.first().is_some_and(|x| x == "sudo" || x == "exec") {
        w.remove(0);
    }
    let Some(cmd) = w.first().map(String::as_str) else {
        return vec![ImportOutcome::Skipped {
            why: "blank".into(),
        }];
    };
    match cmd {
        "set" | "export" | "true" | ":" => {
            return vec![ImportOutcome::Skipped {
                why: "shell boilerplate".into(),
            }]
        }
        "echo" | "printf" => return echo(&w),
        "sysctl" | "/sbin/sysctl" | "/usr/sbin/sysctl" => return sysctl(&w),
        "ulimit" => return not_understood("a per-process limit, not a sysctl: set LimitNOFILE= in the service's unit or a file in /etc/security/limits.d/ (connstorm raises its own soft RLIMIT_NOFILE to the hard limit); the ceiling is fs.nr_open"),
        "modprobe" | "insmod" => return not_understood(format!("load the module at boot with /etc/modules-load.d/{}.conf (modules-load.d(5)); its sysctls exist only once it is loaded", w.get(1).map_or("NAME", String::as_str))),
        "ethtool" => return not_understood("NIC settings, not sysctls: a systemd .link file (systemd.link(5)), NetworkManager, or a udev rule"),
        "ip" | "tc" | "ifconfig" => return not_understood("network configuration, not sysctls: systemd-networkd, NetworkManager or your distribution's network scripts"),
        "cpupower" | "tuned-adm" | "x86_energy_perf_policy" => return not_understood("CPU power settings: a tuned profile (`connstorm tune export --as tuned`) or the tool's own service"),
        "systemctl" | "service" => return not_understood("service management, not a setting: keep it in the script or a unit"),
        "swapoff" | "mount" => return not_understood("host configuration, not a sysctl: /etc/fstab or a unit"),
        _ => {}
    }
    if t.starts_with("#!") {
        return vec![ImportOutcome::Skipped {
            why: "shebang".into(),
        }];
    }
    not_understood("no sysctl write found: if it sets a kernel value, write it as `key = value` in a sysctl.d file")
}

fn echo(w: &[String]) -> Vec<ImportOutcome> {
    // echo [-n|-e] VALUE... (>|>>) FILE   or   echo VALUE... | [sudo] tee [-a] FILE
    let mut args: Vec<&str> = w[1..].iter().map(String::as_str).collect();
    if w[0] == "printf" {
        // printf 'VALUE' > FILE, or printf '%s\n' VALUE > FILE.
        if args.first().is_some_and(|f| f.contains('%')) {
            args.remove(0);
        }
    } else {
        while args
            .first()
            .is_some_and(|a| matches!(*a, "-n" | "-e" | "-ne" | "-en"))
        {
            args.remove(0);
        }
    }
    let (value_words, file): (Vec<&str>, Option<&str>) =
        if let Some(pos) = args.iter().position(|a| *a == ">" || *a == ">>") {
            (args[..pos].to_vec(), args.get(pos + 1).copied())
        } else if let Some(pos) = args.iter().position(|a| *a == "|") {
            let mut rest: Vec<&str> = args[pos + 1..].to_vec();
            if rest.first() == Some(&"sudo") {
                rest.remove(0);
            }
            if rest.first() != Some(&"tee") {
                return not_understood(
                    "a pipe into something other than tee: write the sysctl as `key = value`",
                );
            }
            let file = rest[1..].iter().find(|a| !a.starts_with('-')).copied();
            (args[..pos].to_vec(), file)
        } else {
            return vec![ImportOutcome::Skipped {
                why: "echo without a redirection (prints only)".into(),
            }];
        };
    let Some(file) = file else {
        return not_understood("a redirection without a file");
    };
    // `\t` and `\n` (echo -e, dash's echo, printf) are whitespace between the numbers of a
    // vector value (tcp_rmem), which the kernel splits on any whitespace.
    let value = normalize(
        &value_words
            .join(" ")
            .replace("\\n", " ")
            .replace("\\t", " "),
    );
    if has_expansion(&value) || has_expansion(file) {
        return not_understood("uses a shell variable or command substitution: its value is known only when the script runs; write the result as `key = value`");
    }
    if is_sysctl_file(file) {
        return conf_line(&value, file);
    }
    if !file.starts_with("/proc/sys/") {
        return not_understood(advice_for_path(file));
    }
    if value.is_empty() {
        return not_understood("writes an empty value (`echo 1>FILE` redirects descriptor 1 and writes nothing: write `echo 1 > FILE`)");
    }
    match proc_sys_key(file) {
        Ok(key) => vec![ImportOutcome::Sysctl {
            key,
            value,
            ignore_failure: false,
        }],
        Err(e) => not_understood(format!("{e}: check the path")),
    }
}

fn sysctl(w: &[String]) -> Vec<ImportOutcome> {
    let mut ignore = false;
    let mut out = Vec::new();
    let mut args = w[1..].iter().map(String::as_str).peekable();
    while let Some(a) = args.next() {
        if a == "-p" || a == "--load" || a.starts_with("--load=") || a == "--system" {
            let file = if a == "--system" {
                "--system".to_string()
            } else {
                args.next().unwrap_or("/etc/sysctl.conf").to_string()
            };
            return not_understood(format!(
                "loads a file: check it directly with `connstorm tune check {}`",
                if file == "--system" {
                    "--system".into()
                } else {
                    format!("--file {file}")
                }
            ));
        }
        if a.starts_with('-') && !a.contains('=') {
            if a.contains('e') && !a.starts_with("--") {
                ignore = true;
            }
            if a.contains('a') || a.contains('A') || a.contains('n') {
                return vec![ImportOutcome::Skipped {
                    why: "reads sysctls only".into(),
                }];
            }
            continue;
        }
        if matches!(a, ">" | ">>" | "|" | ";" | "&") {
            break;
        }
        let Some((k, v)) = a.split_once('=') else {
            out.push(ImportOutcome::Skipped {
                why: format!("reads {a} only"),
            });
            continue;
        };
        if has_expansion(v) {
            return not_understood("uses a shell variable or command substitution: its value is known only when the script runs; write the result as `key = value`");
        }
        match crate::sysctl::Pattern::parse(k.trim())
            .and_then(|p| p.key().map_err(|e| e.to_string()))
        {
            Ok(key) => out.push(ImportOutcome::Sysctl {
                key,
                value: normalize(v),
                ignore_failure: ignore,
            }),
            Err(e) => out.push(ImportOutcome::NotUnderstood {
                advice: format!("{e}: check the key"),
            }),
        }
    }
    if out.is_empty() {
        return vec![ImportOutcome::Skipped {
            why: "sysctl without an assignment".into(),
        }];
    }
    out
}

/// A here-document start (`cat >> FILE <<EOF`, `tee -a FILE <<'EOF'`, `cat <<-EOF > FILE`):
/// its delimiter and the file it goes to (`None` when it is not redirected into one).
fn heredoc(line: &str) -> Option<(String, Option<String>)> {
    let t = line.trim();
    if t.starts_with('#') {
        return None;
    }
    let at = t.find("<<")?;
    if t[at..].starts_with("<<<") {
        return None;
    }
    let rest = t[at + 2..].trim_start_matches('-').trim_start();
    let delim: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ';' | '>' | '|' | '&'))
        .filter(|c| !matches!(c, '\'' | '"'))
        .collect();
    if delim.is_empty() {
        return None;
    }
    let w = words(t).unwrap_or_default();
    let w: Vec<&str> = w
        .iter()
        .map(String::as_str)
        .filter(|x| !x.starts_with("<<"))
        .collect();
    let target = if let Some(p) = w.iter().position(|x| *x == ">" || *x == ">>") {
        w.get(p + 1).map(|x| x.to_string())
    } else if let Some(p) = w.iter().position(|x| *x == "tee") {
        w[p + 1..]
            .iter()
            .find(|x| !x.starts_with('-') && **x != delim)
            .map(|x| x.to_string())
    } else {
        None
    };
    Some((delim, target))
}

/// Reads a script. Here-documents written into a sysctl file (`cat >> /etc/sysctl.conf
/// <<EOF`) are imported line by line; every other line is classified on its own.
pub fn import_script(script: &str) -> Vec<ImportLine> {
    let lines: Vec<&str> = script.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let raw = lines[i];
        let Some((delim, target)) = heredoc(raw) else {
            out.push(ImportLine {
                line: i + 1,
                text: raw.trim().to_string(),
                outcomes: classify(raw),
            });
            i += 1;
            continue;
        };
        let start = i + 1;
        let into = target.as_deref().filter(|f| is_sysctl_file(f));
        let outcomes = match (into, target.as_deref()) {
            (Some(f), _) => vec![ImportOutcome::Skipped {
                why: format!("a here-document into {f}: its lines are imported one by one"),
            }],
            (None, Some(f)) => {
                not_understood(format!("a here-document into {f}: {}", advice_for_path(f)))
            }
            (None, None) => vec![ImportOutcome::Skipped {
                why: "a here-document that is not written to a file".into(),
            }],
        };
        out.push(ImportLine {
            line: start,
            text: raw.trim().to_string(),
            outcomes,
        });
        i += 1;
        while i < lines.len() {
            let body = lines[i];
            let end = body.trim() == delim;
            let outcomes = if end {
                vec![ImportOutcome::Skipped {
                    why: format!("end of the here-document of line {start}"),
                }]
            } else if let Some(f) = into {
                conf_line(body, f)
            } else {
                vec![ImportOutcome::Skipped {
                    why: format!("inside the here-document of line {start}, not a sysctl file"),
                }]
            };
            out.push(ImportLine {
                line: i + 1,
                text: body.trim().to_string(),
                outcomes,
            });
            i += 1;
            if end {
                break;
            }
        }
    }
    out
}

/// The sysctl.d file for the understood lines (a later write of the same key wins, as when the
/// script runs), with the lines not understood listed as comments at the end. `origin` names the
/// script.
pub fn imported_sysctl_d(lines: &[ImportLine], origin: &str) -> String {
    let mut keys: Vec<(Key, String, bool, usize)> = Vec::new();
    for l in lines {
        for o in &l.outcomes {
            if let ImportOutcome::Sysctl {
                key,
                value,
                ignore_failure,
            } = o
            {
                keys.retain(|(k, ..)| k != key);
                keys.push((key.clone(), value.clone(), *ignore_failure, l.line));
            }
        }
    }
    let mut out = format!("# sysctl.d file imported by connstorm from {origin}\n");
    for (k, v, ig, line) in &keys {
        out.push_str(&format!(
            "# {origin}:{line}\n{}{k} = {v}\n",
            if *ig { "-" } else { "" }
        ));
    }
    let bad: Vec<String> = lines
        .iter()
        .flat_map(|l| {
            l.outcomes.iter().filter_map(move |o| match o {
                ImportOutcome::NotUnderstood { advice } => Some(format!(
                    "# {origin}:{} not imported: {}\n#   -> {advice}\n",
                    l.line, l.text
                )),
                _ => None,
            })
        })
        .collect();
    if !bad.is_empty() {
        out.push_str("\n# Lines not imported (not sysctls, or not understood):\n");
        for b in bad {
            out.push_str(&b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sysctl writes understood, as `key=value`.
    fn written(lines: &[ImportLine]) -> Vec<String> {
        lines
            .iter()
            .flat_map(|l| l.outcomes.iter())
            .filter_map(|o| match o {
                ImportOutcome::Sysctl { key, value, .. } => Some(format!("{key}={value}")),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn escapes_in_double_quotes_stay_for_echo_and_become_whitespace() {
        let s = "echo -e \"4096\\t8192\\t16384\" > /proc/sys/net/ipv4/tcp_rmem\nprintf '4096\\t87380\\n' > /proc/sys/net/ipv4/tcp_wmem\necho \"a\\\"b\" > /proc/sys/kernel/hostname\n";
        let keys = written(&import_script(s));
        assert_eq!(
            keys,
            [
                "net.ipv4.tcp_rmem=4096 8192 16384",
                "net.ipv4.tcp_wmem=4096 87380",
                "kernel.hostname=a\"b"
            ]
        );
    }

    #[test]
    fn echo_and_sysctl_lines_become_keys() {
        let s = "#!/bin/sh\nset -e\necho 1 > /proc/sys/net/ipv4/tcp_tw_reuse\nsudo sysctl -w net.core.somaxconn=65535 'net.ipv4.ip_local_port_range=1024 65535'\necho \"2\" | sudo tee /proc/sys/net/ipv4/conf/eth0.100/rp_filter\nulimit -n 1048576\nmodprobe nf_conntrack\necho $X > /proc/sys/fs/file-max\n";
        let l = import_script(s);
        let keys = written(&l);
        assert_eq!(
            keys,
            [
                "net.ipv4.tcp_tw_reuse=1",
                "net.core.somaxconn=65535",
                "net.ipv4.ip_local_port_range=1024 65535",
                "net.ipv4.conf.eth0/100.rp_filter=2"
            ]
        );
        let bad: Vec<usize> = l
            .iter()
            .filter(|l| {
                l.outcomes
                    .iter()
                    .any(|o| matches!(o, ImportOutcome::NotUnderstood { .. }))
            })
            .map(|l| l.line)
            .collect();
        assert_eq!(bad, [6, 7, 8]);
        let text = imported_sysctl_d(&l, "s.sh");
        let p = crate::sysctl::Preset::parse_sysctl_conf(&text, "out.conf").unwrap();
        assert_eq!(p.sysctls.len(), 4);
        assert!(
            text.contains("limits.d") && text.contains("modules-load.d"),
            "{text}"
        );
    }
}
