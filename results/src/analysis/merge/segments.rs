//! Whether the records given to `merge` are the shares of one run: the load records' segments
//! cover `0..N` exactly once, they planned the same whole run (settings and `--start-at`), their
//! measured windows overlap, and every server record was measured while they ran. Also the
//! warnings about when the generators started.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;

use super::{MergeError, MergeInput, SKEW_BOUND_MS};

/// Load settings each generator picks for its own host; they may differ between the generators
/// of one run: the addresses it reaches the server by (`targets`: each host may use its own
/// route or address of the server), its CPUs, its source addresses, its in-flight bound, and
/// the segment itself.
/// With `--tls`, also the name it checks and sends (`tls.server_name`: by default the target's
/// host, which each host may reach by its own address) and where its CA file lies (only
/// whether the certificate is checked is compared: `tls.verify` is cut to its kind).
const PER_HOST: &[&str] = &[
    "targets",
    "cpus",
    "sources",
    "max_in_flight",
    "segment",
    "tls.server_name",
];

/// The settings a segment's share changes (compared only in the whole run's configuration).
const SHARES: &[&str] = &["pattern.rate_per_sec", "pattern.concurrency"];

fn seg(i: &MergeInput) -> (u32, u32) {
    i.record
        .segment
        .as_ref()
        .map_or((0, 1), |s| (s.index, s.count))
}

/// Checks that the load records' segments cover `0..N` exactly once: every index inside
/// `0..N`, no index twice, none missing, one `N` for all. A load record without a segment is a
/// whole run by itself (`load` without `--segment`): alone it is the run, next to another load
/// record it is refused as [`MergeError::NotSegmented`], not as an overlap of "segment 0/1".
pub(super) fn check_segments(loads: &[&MergeInput]) -> Result<(), MergeError> {
    let first = loads.first().ok_or(MergeError::NoLoad)?;
    if loads.len() > 1 {
        if let Some(i) = loads.iter().position(|l| l.record.segment.is_none()) {
            // Name another record without a segment when there is one, else the first other.
            let j = (0..loads.len())
                .filter(|&j| j != i)
                .min_by_key(|&j| loads[j].record.segment.is_some())
                .expect("two load records or more");
            return Err(MergeError::NotSegmented {
                path_a: loads[i].path.clone(),
                path_b: loads[j].path.clone(),
                why: if loads[j].record.segment.is_none() {
                    "neither was run with --segment, so each is a whole run by itself"
                } else {
                    "the first was run without --segment, so it is a whole run by itself"
                },
            });
        }
    }
    let count = seg(first).1;
    let mut owner: BTreeMap<u32, &Path> = BTreeMap::new();
    for l in loads {
        let (index, n) = seg(l);
        if index >= n {
            return Err(MergeError::OutOfRange {
                path: l.path.clone(),
                index,
                count: n,
            });
        }
        if n != count {
            return Err(MergeError::CountMismatch {
                path_a: first.path.clone(),
                a: count,
                path_b: l.path.clone(),
                b: n,
            });
        }
        if let Some(prev) = owner.insert(index, &l.path) {
            return Err(MergeError::Overlap {
                path_a: prev.to_path_buf(),
                path_b: l.path.clone(),
                index,
                count,
            });
        }
    }
    let missing: Vec<u32> = (0..count).filter(|i| !owner.contains_key(i)).collect();
    if !missing.is_empty() {
        let given: Vec<String> = owner
            .iter()
            .map(|(i, p)| format!("{}={i}", p.display()))
            .collect();
        return Err(MergeError::Missing {
            missing: missing
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            count,
            given: given.join(", "),
        });
    }
    Ok(())
}

/// A configuration as `setting → value`: top-level keys, the load pattern split into its
/// fields (`pattern.kind`, `pattern.rate_per_sec`, ...), [`PER_HOST`] settings left out, and
/// with `shares` false the [`SHARES`] too.
fn settings(config: &Value, shares: bool) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let Some(obj) = config.as_object() else {
        return out;
    };
    for (k, v) in obj {
        match (k.as_str(), v.as_object()) {
            ("pattern", Some(p)) => {
                for (pk, pv) in p {
                    out.insert(format!("pattern.{pk}"), pv.clone());
                }
            }
            ("tls", Some(t)) => {
                for (tk, tv) in t {
                    // `{"ca": "/path"}` → `"ca"`: the path is each host's own.
                    let tv = match (tk.as_str(), tv.as_object()) {
                        ("verify", Some(o)) if o.len() == 1 => {
                            Value::String(o.keys().next().cloned().unwrap_or_default())
                        }
                        _ => tv.clone(),
                    };
                    out.insert(format!("tls.{tk}"), tv);
                }
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out.retain(|k, _| !PER_HOST.contains(&k.as_str()) && (shares || !SHARES.contains(&k.as_str())));
    out
}

/// The command-line name of a load setting, for the refusal.
fn setting_name(key: &str) -> String {
    match key {
        "pattern.kind" => "the load pattern (--rate: open loop, --concurrency: closed loop)".into(),
        "pattern.rate_per_sec" => "the whole run's --rate".into(),
        "pattern.concurrency" => "the whole run's --concurrency".into(),
        "pattern.arrival" => "--arrival".into(),
        "connect_timeout" | "expect_bytes" | "late_threshold" | "duration" | "warmup" | "close"
        | "http" => format!("--{}", key.replace('_', "-")),
        other => format!("setting `{other}`"),
    }
}

/// A setting's value for people: durations as `3s`, `250ms`; rates with `/s`; `null` as `none`.
fn show(key: &str, v: Option<&Value>) -> String {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return "none".into();
    };
    if let (Some(s), Some(n), Some(2)) = (
        v.get("secs").and_then(Value::as_u64),
        v.get("nanos").and_then(Value::as_u64),
        v.as_object().map(serde_json::Map::len),
    ) {
        return humantime::format_duration(Duration::new(s, n as u32)).to_string();
    }
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) if key == "pattern.rate_per_sec" => {
            format!("{}/s", crate::numfmt::exact(n.as_f64().unwrap_or(f64::NAN)))
        }
        other => other.to_string(),
    };
    // An HTTP body may be megabytes: the start tells the two apart well enough.
    match text.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn show_start(ms: Option<u64>) -> String {
    ms.map_or("none (each generator started when ready)".into(), |ms| {
        humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
    })
}

/// Checks that every load record planned the same whole run as the first: the same settings
/// (see [`PER_HOST`] for those that may differ) and the same `--start-at` instant. Returns a
/// warning when some records do not keep the whole run's configuration (older builds): then
/// the shares' settings are compared, and the planned total cannot be.
///
/// # Errors
/// [`MergeError::Setting`] naming both files and the first setting that differs.
pub(super) fn check_settings(loads: &[&MergeInput]) -> Result<Vec<String>, MergeError> {
    let whole = |i: &MergeInput| {
        i.record
            .segment
            .as_ref()
            .and_then(|s| s.whole_config.clone())
    };
    let all_whole = loads.iter().all(|l| whole(l).is_some());
    let of = |i: &MergeInput| match whole(i).filter(|_| all_whole) {
        Some(w) => settings(&w, true),
        None => settings(&i.record.config, false),
    };
    let first = loads[0];
    let base = of(first);
    for l in &loads[1..] {
        let other = of(l);
        let keys: BTreeSet<&String> = base.keys().chain(other.keys()).collect();
        for k in keys {
            let (a, b) = (base.get(k), other.get(k));
            let none = |v: Option<&Value>| v.is_none_or(Value::is_null);
            if a != b && !(none(a) && none(b)) {
                return Err(MergeError::Setting {
                    path_a: first.path.clone(),
                    path_b: l.path.clone(),
                    setting: setting_name(k),
                    a: show(k, a),
                    b: show(k, b),
                });
            }
        }
        let planned = |i: &MergeInput| i.record.segment.as_ref()?.planned_start_unix_ms;
        if planned(first) != planned(l) {
            return Err(MergeError::Setting {
                path_a: first.path.clone(),
                path_b: l.path.clone(),
                setting: "the planned start (--start-at)".into(),
                a: show_start(planned(first)),
                b: show_start(planned(l)),
            });
        }
    }
    let old: Vec<String> = loads
        .iter()
        .filter(|l| whole(l).is_none())
        .map(|l| l.path.display().to_string())
        .collect();
    Ok(if old.is_empty() || loads.len() < 2 {
        Vec::new()
    } else {
        vec![format!(
            "{} keep only their segment's share of the load settings (written by an older build): the shares' settings agree, but the whole run's planned rate or concurrency could not be checked",
            old.join(", ")
        )]
    })
}

/// The measured window of a load record, ms since the Unix epoch: from the earliest phase start
/// to the latest phase end; `None` when a phase has no start time (schema-1 records).
fn load_window(i: &MergeInput) -> Option<(u64, u64)> {
    let mut w: Option<(u64, u64)> = None;
    for p in &i.record.phases {
        let s = p.start_unix_ms?;
        let e = s + (p.measured_secs * 1e3).round() as u64;
        w = Some(w.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
    }
    w
}

/// The window a server record counted over, ms since the Unix epoch: from when its listeners
/// listened for its wall time; `None` without a start time.
fn server_window(i: &MergeInput) -> Option<(u64, u64)> {
    let s = i.record.run.started_unix_ms?;
    Some((s, s + (i.record.run.wall_secs * 1e3).round() as u64))
}

fn show_window((s, e): (u64, u64)) -> String {
    format!("{} – {}", show_start(Some(s)), show_start(Some(e)))
}

/// Checks that the load records' measured windows overlap (one run's generators measure at the
/// same time) and that every server record's window overlaps theirs (it is the server of this
/// run, not of another). Records without times are not checked.
///
/// # Errors
/// [`MergeError::Apart`] naming the two files and their windows.
pub(super) fn check_windows(
    loads: &[&MergeInput],
    servers: &[&MergeInput],
) -> Result<(), MergeError> {
    let windows: Vec<(&MergeInput, (u64, u64))> = loads
        .iter()
        .filter_map(|l| Some((*l, load_window(l)?)))
        .collect();
    let (Some(latest_start), Some(earliest_end)) = (
        windows.iter().max_by_key(|w| w.1 .0),
        windows.iter().min_by_key(|w| w.1 .1),
    ) else {
        return Ok(());
    };
    if latest_start.1 .0 >= earliest_end.1 .1 {
        return Err(MergeError::Apart {
            path_a: earliest_end.0.path.clone(),
            a: show_window(earliest_end.1),
            path_b: latest_start.0.path.clone(),
            b: show_window(latest_start.1),
            what: "load records",
        });
    }
    // The generators' schedules began with their warm-up, before the measured windows.
    let begin = loads
        .iter()
        .filter_map(|l| Some(l.record.segment.as_ref()?.real_start_unix_ms))
        .chain(windows.iter().map(|w| w.1 .0))
        .min()
        .expect("at least one window");
    let end = windows.iter().map(|w| w.1 .1).max().expect("at least one");
    for s in servers {
        let Some((s0, s1)) = server_window(s) else {
            continue;
        };
        if s1 <= begin || s0 >= end {
            return Err(MergeError::Apart {
                path_a: s.path.clone(),
                a: show_window((s0, s1)),
                path_b: windows[0].0.path.clone(),
                b: show_window((begin, end)),
                what: "server record and the load records",
            });
        }
    }
    Ok(())
}

/// Warnings about when the generators started: a spread of real starts above
/// [`SKEW_BOUND_MS`], a generator that started later than its planned `--start-at` by more than
/// it (the instant had passed when it was ready), and clocks not known to be synchronised or
/// off by more than it.
pub(super) fn start_warnings(loads: &[&MergeInput]) -> Vec<String> {
    let mut out = Vec::new();
    let starts: Vec<(&Path, u64)> = loads
        .iter()
        .filter_map(|l| {
            Some((
                l.path.as_path(),
                l.record.segment.as_ref()?.real_start_unix_ms,
            ))
        })
        .collect();
    if let (Some(early), Some(late)) = (
        starts.iter().min_by_key(|s| s.1),
        starts.iter().max_by_key(|s| s.1),
    ) {
        let skew = late.1 - early.1;
        if skew > SKEW_BOUND_MS {
            out.push(format!(
                "start skew {skew} ms (above {SKEW_BOUND_MS} ms): {} started first, {} last; give every generator the same --start-at far enough ahead for all to be ready",
                early.0.display(),
                late.0.display()
            ));
        }
    }
    for l in loads {
        let Some(s) = &l.record.segment else { continue };
        if let Some(late) = s
            .planned_start_unix_ms
            .and_then(|p| s.real_start_unix_ms.checked_sub(p))
            .filter(|&late| late > SKEW_BOUND_MS)
        {
            out.push(format!(
                "{}: started {late} ms after its planned --start-at {} (the instant had passed when the generator was ready): give a start time further ahead",
                l.path.display(),
                show_start(s.planned_start_unix_ms)
            ));
        }
        if s.clock_sync != "synchronized" {
            out.push(format!(
                "{}: host clock sync {} ({}): start times across hosts may not line up",
                l.path.display(),
                s.clock_sync,
                if s.clock_source.is_empty() {
                    "no timedatectl or chronyc"
                } else {
                    s.clock_source.as_str()
                }
            ));
        } else if let Some(off) = s.clock_offset_ms.filter(|o| o.abs() > SKEW_BOUND_MS as f64) {
            out.push(format!(
                "{}: host clock is {off:.1} ms off its time source (above {SKEW_BOUND_MS} ms)",
                l.path.display()
            ));
        }
    }
    out
}
