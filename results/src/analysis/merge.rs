//! Joining the records of a multi-host run into one exact record (`connstorm merge`).
//!
//! Input: the load records of `N` generators (`load --segment i/N --out`), each covering one
//! share of the run, and optionally the records of the servers they loaded (`server --out`).
//! Output: one [`RunRecord`] of role [`Role::Merged`] whose phases hold
//! - counts summed (attempts, successes, failures by errno, late, dropped),
//! - histograms added bucket by bucket (HdrHistogram `add`: exact; histograms of different
//!   bounds or precision are refused, never rescaled),
//! - per-second timelines aligned on wall-clock seconds (each row keyed by the wall-clock second
//!   it started in, to the nearest second),
//! - the measured time as the span from the earliest start to the latest end, so the achieved
//!   rate is the whole fleet's,
//! - and, with server records, a cross-check of the servers' accepts (and the server
//!   namespaces' `Tcp.PassiveOpens`) against the generators' handshakes.
//!
//! Generators sharing a network namespace each hold the whole namespace's counter deltas: the
//! counters are counted once per namespace and cross-checked per namespace (`merge/netns.rs`).
//!
//! Refused with one line naming the files: load records that are not segments (`load` without
//! `--segment`, beside another load record); segments that overlap, are missing, out of range or
//! disagree on `N`; segments of different runs (a different whole-run rate or concurrency,
//! duration, warm-up, close mode, open vs closed loop, arrival, connect timeout, `--http` or
//! `--expect-bytes`, or planned `--start-at`; `merge/segments.rs`); load records whose measured
//! windows do not overlap, or a server record from another time window; records of different
//! schema versions; different phase names; a bench record (already a whole run). There is no
//! override: such a merge would add up connections of different experiments into a figure no
//! run had. Warned: start skew above [`SKEW_BOUND_MS`], a start later than planned, clocks not
//! known to be synchronised, records that do not keep the whole run's plan or their namespace.

mod netns;
mod segments;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;

use crate::record::{decode_histogram, encode_histogram, HistogramError};
use crate::record::{
    CpuUsage, Histograms, Latency, PhaseRecord, Role, RunRecord, ServerSide, SideCpu, TimelineRow,
};

/// Largest start skew between generators, or clock offset from the time source, that passes
/// without a warning: 10 ms (a per-second timeline row of two generators that started further
/// apart mixes seconds that did not coincide; NTP on a LAN keeps clocks within about 1 ms).
pub const SKEW_BOUND_MS: u64 = 10;

/// One record to merge and the file it came from.
#[derive(Debug, Clone)]
pub struct MergeInput {
    /// The file (named in every error and warning).
    pub path: PathBuf,
    /// The schema version the file declared (before any upgrade on reading).
    pub schema_version: u32,
    /// The record as read.
    pub record: RunRecord,
}

impl MergeInput {
    /// Reads a record file to merge ([`RunRecord::read`]) with the schema version it declares.
    ///
    /// # Errors
    /// As [`RunRecord::read`]: the file cannot be read or is not a record.
    pub fn read(path: &Path) -> Result<MergeInput, crate::record::RecordError> {
        let record = RunRecord::read(path)?;
        Ok(MergeInput {
            path: path.to_path_buf(),
            schema_version: declared_schema(path),
            record,
        })
    }
}

/// The schema version a record file declares, before any upgrade on reading (0 when absent:
/// [`RunRecord::read`] refuses such a file anyway).
fn declared_schema(path: &Path) -> u32 {
    #[derive(serde::Deserialize)]
    struct Head {
        schema_version: Option<u32>,
    }
    common::files::read_regular(path, crate::record::MAX_RECORD_BYTES)
        .ok()
        .and_then(|b| serde_json::from_slice::<Head>(&b).ok())
        .and_then(|h| h.schema_version)
        .unwrap_or(0)
}

/// The merged record and what a reader must know about it.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The merged record (role [`Role::Merged`]); also in it: the same warnings.
    pub record: RunRecord,
    /// Start skew, unsynchronised clocks, server accepts that do not match.
    pub warnings: Vec<String>,
}

/// Why records cannot be merged. Every variant names the file(s).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Fewer than one load record.
    #[error(
        "no load record among the inputs: give the records `load --segment i/N --out DIR` wrote"
    )]
    NoLoad,
    /// Two files declare different schema versions.
    #[error("{} is schema {a} but {} is schema {b}: records of one run come from one connstorm version; re-run the older side with the same build", .path_a.display(), .path_b.display())]
    SchemaMismatch {
        /// First file.
        path_a: PathBuf,
        /// Its version.
        a: u32,
        /// The other file.
        path_b: PathBuf,
        /// Its version.
        b: u32,
    },
    /// A bench (or already merged) record among the inputs.
    #[error("{} is a {role} record (a whole run), not one generator's or server's share: merge only `load --out` and `server --out` records", .path.display())]
    NotAShare {
        /// The file.
        path: PathBuf,
        /// Its role.
        role: &'static str,
    },
    /// Several load records, and at least one of them is not a segment (`load` ran without
    /// `--segment`): each such record is a whole run by itself.
    #[error("{} and {} are not segments of one run: {why}; merge joins the shares of one multi-host run: run every generator with `--segment K/N` (K = 0..N-1, the same N) and the same `--start-at`, then merge their records", .path_a.display(), .path_b.display())]
    NotSegmented {
        /// A load record without a segment.
        path_a: PathBuf,
        /// Another load record.
        path_b: PathBuf,
        /// Which of them has no segment, and what that makes it.
        why: &'static str,
    },
    /// One record given twice (the same path, or two files holding the same record): its
    /// connections would be counted twice.
    #[error("{} and {} are the same record: its connections would be counted twice; give each record once", .path_a.display(), .path_b.display())]
    SameRecord {
        /// First file.
        path_a: PathBuf,
        /// The other file.
        path_b: PathBuf,
    },
    /// Two generators ran the same segment.
    #[error("segments overlap: {} and {} are both segment {index}/{count}; give each generator its own --segment", .path_a.display(), .path_b.display())]
    Overlap {
        /// First file.
        path_a: PathBuf,
        /// Second file.
        path_b: PathBuf,
        /// The segment.
        index: u32,
        /// N.
        count: u32,
    },
    /// A segment index outside `0..N` (a record edited by hand: `load` refuses `--segment 4/4`).
    #[error("{}: segment {index} of {count} is out of range ({}); `load --segment i/N` takes i in 0..N-1: fix or drop the record", .path.display(), if *.count == 0 { "N must be at least 1".to_string() } else { format!("0..{}", .count - 1) })]
    OutOfRange {
        /// The file.
        path: PathBuf,
        /// Its index.
        index: u32,
        /// Its N.
        count: u32,
    },
    /// Two load records planned different runs.
    #[error("{} and {} are not segments of one run: {setting} is {a} in the first and {b} in the second; merge only the records of one run (every generator given the same settings and --start-at)", .path_a.display(), .path_b.display())]
    Setting {
        /// First file.
        path_a: PathBuf,
        /// Second file.
        path_b: PathBuf,
        /// The setting, as the command line names it.
        setting: String,
        /// Its value in the first.
        a: String,
        /// Its value in the second.
        b: String,
    },
    /// Two records measured at times that do not overlap.
    #[error("{} measured {a} but {} measured {b}: the {what} do not overlap in time, so they are not one run; merge the records of one run", .path_a.display(), .path_b.display())]
    Apart {
        /// First file.
        path_a: PathBuf,
        /// Its window.
        a: String,
        /// Second file.
        path_b: PathBuf,
        /// Its window (or the load records' span).
        b: String,
        /// `"load records"` or `"server record and the load records"`.
        what: &'static str,
    },
    /// Generators disagree on N.
    #[error("{} is a segment of {a} but {} of {b}: every generator of one run takes --segment i/N with the same N", .path_a.display(), .path_b.display())]
    CountMismatch {
        /// First file.
        path_a: PathBuf,
        /// Its N.
        a: u32,
        /// Second file.
        path_b: PathBuf,
        /// Its N.
        b: u32,
    },
    /// Some segments of 0..N have no record.
    #[error("segments missing: {missing} of 0..{} (the files give {given}); add their records or re-run those generators", .count - 1)]
    Missing {
        /// The missing indices, comma-separated.
        missing: String,
        /// N.
        count: u32,
        /// `file=index` for each given file.
        given: String,
    },
    /// The records have different phases or patterns.
    #[error("{} and {} did not run the same load: {what}", .path_a.display(), .path_b.display())]
    Different {
        /// First file.
        path_a: PathBuf,
        /// Second file.
        path_b: PathBuf,
        /// What differs.
        what: String,
    },
    /// Histograms of different bounds or precision (an exact sum is impossible).
    #[error("{} and {}: the {which} histograms of phase {phase:?} differ in range or precision ({bounds}); they cannot be added exactly: run every generator with the same --connect-timeout and build", .path_a.display(), .path_b.display())]
    HistogramBounds {
        /// First file.
        path_a: PathBuf,
        /// Second file.
        path_b: PathBuf,
        /// Phase name.
        phase: String,
        /// `handshake`, `service`, `first_byte`.
        which: &'static str,
        /// Bounds of both, `low..high ns @ sigfig digits vs ...`.
        bounds: String,
    },
    /// A record's TLS counts contradict each other (a record edited by hand or damaged): the
    /// merged counts would be wrong without saying so.
    #[error("{}: phase {phase:?}: the TLS counts contradict each other: {what}; `load --tls` and `server --tls` write them consistent: re-run that host or fix the record", .path.display())]
    TlsCounts {
        /// The file.
        path: PathBuf,
        /// Phase name.
        phase: String,
        /// The fields and their values, e.g. `tls.full 1000000000 + tls.resumed 0 ≠
        /// tls.handshakes 400`.
        what: String,
    },
    /// A histogram does not decode.
    #[error("{}: phase {phase:?}: {source}", .path.display())]
    Histogram {
        /// The file.
        path: PathBuf,
        /// Phase name.
        phase: String,
        /// Decoder's complaint.
        #[source]
        source: HistogramError,
    },
}

/// Merges the records of one multi-host run (see the module docs).
///
/// Load records without a segment count as segment 0/1. Server records ([`Role::Server`]) each
/// hold one phase whose [`PhaseRecord::server`] gives accepts; they are summed into every merged
/// phase's `server` (so `report` shows per-worker accepts of all servers) and its cross-check.
///
/// # Errors
/// [`MergeError`], each naming the files.
pub fn merge(inputs: &[MergeInput]) -> Result<Merged, MergeError> {
    let first = inputs.first().ok_or(MergeError::NoLoad)?;
    for i in inputs {
        if i.schema_version != first.schema_version {
            return Err(MergeError::SchemaMismatch {
                path_a: first.path.clone(),
                a: first.schema_version,
                path_b: i.path.clone(),
                b: i.schema_version,
            });
        }
        if matches!(i.record.role, Role::Bench | Role::Merged) {
            return Err(MergeError::NotAShare {
                path: i.path.clone(),
                role: i.record.role.name(),
            });
        }
    }
    for i in inputs {
        check_tls_counts(i)?;
    }
    let loads: Vec<&MergeInput> = inputs
        .iter()
        .filter(|i| i.record.role == Role::Load)
        .collect();
    let servers: Vec<&MergeInput> = inputs
        .iter()
        .filter(|i| i.record.role == Role::Server)
        .collect();
    // One record given twice was reported as two generators of the same segment.
    for (i, a) in inputs.iter().enumerate() {
        if let Some(b) = inputs[..i]
            .iter()
            .find(|b| b.path == a.path || b.record == a.record)
        {
            return Err(MergeError::SameRecord {
                path_a: b.path.clone(),
                path_b: a.path.clone(),
            });
        }
    }
    segments::check_segments(&loads)?;
    let mut warnings = segments::check_settings(&loads)?;
    segments::check_windows(&loads, &servers)?;
    warnings.extend(segments::start_warnings(&loads));
    let groups = netns::groups(&loads);
    if let Err(files) = &groups {
        warnings.push(netns::unknown_warning(files));
    }
    let base = loads[0];
    let mut phases = Vec::with_capacity(base.record.phases.len());
    for (k, p) in base.record.phases.iter().enumerate() {
        let mut parts = Vec::with_capacity(loads.len());
        for l in &loads {
            let q = l
                .record
                .phases
                .get(k)
                .filter(|q| q.name == p.name)
                .ok_or_else(|| MergeError::Different {
                    path_a: base.path.clone(),
                    path_b: l.path.clone(),
                    what: format!("phase {:?} is missing or in another place", p.name),
                })?;
            parts.push((l.path.as_path(), q));
        }
        phases.push(merge_phase(&parts, groups.as_deref().ok())?);
    }
    if let Some(l) = loads
        .iter()
        .find(|l| l.record.phases.len() != base.record.phases.len())
    {
        return Err(MergeError::Different {
            path_a: base.path.clone(),
            path_b: l.path.clone(),
            what: format!(
                "{} phases vs {}",
                base.record.phases.len(),
                l.record.phases.len()
            ),
        });
    }
    if !servers.is_empty() {
        let mut server_side = merged_server_side(&servers);
        // Servers sharing a namespace each hold its whole counters (Tcp.PassiveOpens,
        // ListenOverflows, …): once per namespace. They stay apart from the generators'.
        let passive: Option<i64> = match netns::groups(&servers) {
            Ok(g) => {
                let parts: Vec<&PhaseRecord> = servers
                    .iter()
                    .flat_map(|s| s.record.phases.first())
                    .collect();
                if parts.len() == servers.len() {
                    server_side.counters = netns::counters(&parts, &g);
                }
                server_side.counters.get("Tcp.PassiveOpens").copied()
            }
            Err(files) => {
                warnings.push(netns::unknown_warning(&files));
                None
            }
        };
        // The servers' counts cover their whole run: they are compared with the generators'
        // whole-run handshakes (warm-up included), summed over every phase.
        let handshakes: u64 = phases
            .iter()
            .map(|p| {
                p.cross_check
                    .as_ref()
                    .map_or(p.successes, |c| c.load_successes)
            })
            .sum();
        let accepted = server_side.accepted();
        let agree = accepted == handshakes && passive.is_none_or(|p| p == accepted as i64);
        let note = format!(
            "servers accepted {} connections, server namespaces' Tcp.PassiveOpens {}, generators completed {} handshakes (whole run, warm-up included)",
            crate::numfmt::count(accepted),
            passive.map_or("unknown".to_string(), crate::numfmt::signed),
            crate::numfmt::count(handshakes)
        );
        if !agree {
            warnings.push(format!("counts do not agree: {note}"));
        }
        for p in &mut phases {
            p.server = Some(server_side.clone());
            if let Some(c) = p.cross_check.as_mut() {
                // The generators' own check (Tcp.ActiveOpens per namespace) stays part of it
                // when its counter was known.
                let generators_ok = c.kernel_active_opens.is_none() || c.agree;
                c.server_accepted = Some(accepted);
                c.kernel_passive_opens = passive;
                c.agree = agree && generators_ok;
                c.note = format!("{note}; {}", c.note);
            }
        }
    }
    let mut record = base.record.clone();
    record.role = Role::Merged;
    record.label = format!("merged-{}", loads.len());
    record.segment = None;
    record.counters_netns = None;
    record.scale = None;
    record.profile_overhead = None;
    record.run.command = "merge".into();
    record.run.interrupted = loads.iter().any(|l| l.record.run.interrupted);
    record.run.load_cpus = Vec::new();
    if let Some(start) = loads
        .iter()
        .filter_map(|l| l.record.run.started_unix_ms)
        .min()
    {
        record.run.started_unix_ms = Some(start);
    }
    if let Some(started) = loads.iter().map(|l| &l.record.run.started_at).min() {
        record.run.started_at = started.clone();
    }
    record.run.wall_secs = loads
        .iter()
        .map(|l| l.record.run.wall_secs)
        .fold(0.0, f64::max);
    record.config = serde_json::json!({
        "merged_from": inputs.iter().map(|i| i.path.display().to_string()).collect::<Vec<_>>(),
        "hosts": inputs.iter().map(|i| i.record.host.hostname.clone()).collect::<Vec<_>>(),
        "configs": inputs.iter().map(|i| i.record.config.clone()).collect::<Vec<_>>(),
    });
    record.phases = phases;
    record.warnings = inputs
        .iter()
        .flat_map(|i| {
            i.record
                .warnings
                .iter()
                .map(move |w| format!("{}: {w}", i.path.display()))
        })
        .chain(warnings.iter().cloned())
        .collect();
    Ok(Merged { record, warnings })
}

/// Refuses a record whose TLS counts contradict each other ([`MergeError::TlsCounts`]): every
/// client handshake is full or resumed, TLS 1.3 or 1.2, at most one ALPN, suite and key exchange
/// group each, at most one per attempt, and without `--http` each is a success (the handshake is
/// the exchange); a server's resumed TLS accepts are some of its TLS accepts.
fn check_tls_counts(i: &MergeInput) -> Result<(), MergeError> {
    for p in &i.record.phases {
        if let Some(what) = p.tls_counts_contradiction() {
            return Err(MergeError::TlsCounts {
                path: i.path.clone(),
                phase: p.name.clone(),
                what,
            });
        }
    }
    Ok(())
}

/// The servers' phases' accepts, every worker of every server, and their accept errors summed.
fn merged_server_side(servers: &[&MergeInput]) -> ServerSide {
    let mut side = ServerSide::default();
    let mut first = true;
    for s in servers {
        for p in &s.record.phases {
            if let Some(srv) = &p.server {
                side.workers.extend(srv.workers.iter().copied());
                for (k, v) in &srv.accept_errors {
                    *side.accept_errors.entry(k.clone()).or_insert(0) += v;
                }
                side.emfile_backoffs = add_known(side.emfile_backoffs, srv.emfile_backoffs, first);
                side.left_in_queue = add_known(side.left_in_queue, srv.left_in_queue, first);
                side.tls_accepted = add_tls(side.tls_accepted, srv.tls_accepted);
                side.tls_resumed = add_tls(side.tls_resumed, srv.tls_resumed);
                for (k, v) in &srv.tls_failures {
                    *side.tls_failures.entry(k.clone()).or_insert(0) += v;
                }
                if let Some(s) = &srv.syn_cpu {
                    side.syn_cpu.get_or_insert_with(Default::default).add(s);
                }
                // Kept when every TLS server said the same; unknown once they differ.
                side.tls_resumption = match (first, side.tls_resumption, srv.tls_resumption) {
                    (true, _, b) => b,
                    (false, Some(a), Some(b)) if a == b => Some(a),
                    _ => None,
                };
                first = false;
            }
        }
    }
    side
}

/// TLS accepts of servers: summed over the servers that ran `--tls` (a plain server adds none).
fn add_tls(acc: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (acc, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// The running sum `acc` plus `b`: unknown once any part is unknown (`first`: `acc` holds nothing
/// yet).
fn add_known(acc: Option<u64>, b: Option<u64>, first: bool) -> Option<u64> {
    if first {
        b
    } else {
        Some(acc? + b?)
    }
}

fn bounds(h: &Histogram<u64>) -> String {
    format!("{}..{} ns @ {} digits", h.low(), h.high(), h.sigfig())
}

/// Adds `b` into `acc` when both have the same bounds and precision.
fn add_exact(
    acc: &mut Histogram<u64>,
    b: &Histogram<u64>,
    err: impl FnOnce(String) -> MergeError,
) -> Result<(), MergeError> {
    if (acc.low(), acc.high(), acc.sigfig()) != (b.low(), b.high(), b.sigfig()) {
        return Err(err(format!("{} vs {}", bounds(acc), bounds(b))));
    }
    acc.add(b)
        .expect("histograms of equal bounds and precision always add");
    Ok(())
}

/// Merges one phase of every generator (`parts`: file and phase).
/// `groups`: the generators grouped by network namespace, `None` when unknown.
fn merge_phase(
    parts: &[(&Path, &PhaseRecord)],
    groups: Option<&[Vec<usize>]>,
) -> Result<PhaseRecord, MergeError> {
    let (path0, p0) = parts[0];
    let mut out = p0.clone();
    for (path, p) in &parts[1..] {
        let same_kind = std::mem::discriminant(&p.pattern) == std::mem::discriminant(&p0.pattern);
        if !same_kind {
            return Err(MergeError::Different {
                path_a: path0.to_path_buf(),
                path_b: path.to_path_buf(),
                what: format!("phase {:?}: open loop and closed loop mixed", p0.name),
            });
        }
    }
    // Histograms: every kind, exactly.
    let mut hists = Vec::new();
    for which in Latency::ALL {
        let mut acc: Option<Histogram<u64>> = None;
        for (i, (path, p)) in parts.iter().enumerate() {
            let h = p
                .histograms
                .decode(which)
                .map_err(|source| MergeError::Histogram {
                    path: path.to_path_buf(),
                    phase: p.name.clone(),
                    source,
                })?;
            match h {
                Some(h) if i == 0 => acc = Some(h),
                None if i == 0 => {}
                Some(h) if acc.is_some() => add_exact(
                    acc.as_mut().expect("checked: some"),
                    &h,
                    |bounds| MergeError::HistogramBounds {
                        path_a: path0.to_path_buf(),
                        path_b: path.to_path_buf(),
                        phase: p.name.clone(),
                        which: which.name(),
                        bounds,
                    },
                )?,
                None if acc.is_none() => {}
                _ => {
                    return Err(MergeError::Different {
                        path_a: path0.to_path_buf(),
                        path_b: path.to_path_buf(),
                        what: format!(
                            "phase {:?}: the {} histogram is measured in one and not the other (--expect-bytes, --http, --tls)",
                            p.name,
                            which.name()
                        ),
                    })
                }
            }
        }
        hists.push(acc);
    }
    // Every kind a record holds (`Latency::ALL`), the generator's own lag and the TLS
    // full/resumed split included: none is dropped.
    let mut merged = Histograms::default();
    for (which, h) in Latency::ALL.into_iter().zip(&hists) {
        merged.set(which, h.as_ref().map(encode_histogram));
    }
    out.histograms = merged;
    // HTTP counts: summed when every part has them (a part without is refused above by its
    // missing HTTP histograms).
    out.http = parts
        .iter()
        .try_fold(None::<crate::record::HttpCounts>, |acc, (_, p)| {
            let h = p.http.as_ref()?;
            Some(Some(match acc {
                Some(mut a) => {
                    a.add(h);
                    a
                }
                None => h.clone(),
            }))
        })
        .flatten();
    // TLS counts: summed the same way (a part without is refused by its missing histogram).
    out.tls = parts
        .iter()
        .try_fold(None::<crate::record::TlsCounts>, |acc, (_, p)| {
            let t = p.tls.as_ref()?;
            Some(Some(match acc {
                Some(mut a) => {
                    a.add(t);
                    a
                }
                None => t.clone(),
            }))
        })
        .flatten();
    // Counts.
    out.attempts = parts.iter().map(|(_, p)| p.attempts).sum();
    out.successes = parts.iter().map(|(_, p)| p.successes).sum();
    out.late = parts.iter().map(|(_, p)| p.late).sum();
    out.dropped = parts.iter().map(|(_, p)| p.dropped).sum();
    out.failures = sum_maps(parts.iter().map(|(_, p)| &p.failures));
    let phases: Vec<&PhaseRecord> = parts.iter().map(|(_, p)| *p).collect();
    out.counters = match groups {
        Some(g) => netns::counters(&phases, g),
        None => BTreeMap::new(),
    };
    out.load_workers = parts
        .iter()
        .flat_map(|(_, p)| p.load_workers.iter().copied())
        .collect();
    out.offered_per_sec = parts
        .iter()
        .map(|(_, p)| p.offered_per_sec)
        .sum::<Option<f64>>();
    out.pattern = match p0.pattern {
        crate::record::Pattern::Open { arrival, .. } => crate::record::Pattern::Open {
            rate_per_sec: parts
                .iter()
                .map(|(_, p)| match p.pattern {
                    crate::record::Pattern::Open { rate_per_sec, .. } => rate_per_sec,
                    crate::record::Pattern::Closed { .. } => 0.0,
                })
                .sum(),
            arrival,
        },
        crate::record::Pattern::Closed { .. } => crate::record::Pattern::Closed {
            concurrency: parts
                .iter()
                .map(|(_, p)| match p.pattern {
                    crate::record::Pattern::Closed { concurrency } => concurrency,
                    crate::record::Pattern::Open { .. } => 0,
                })
                .sum(),
        },
    };
    // Time: the span from the earliest measured start to the latest measured end.
    let starts: Option<Vec<u64>> = parts.iter().map(|(_, p)| p.start_unix_ms).collect();
    match starts {
        Some(starts) => {
            let begin = *starts.iter().min().expect("at least one part");
            let end = parts
                .iter()
                .zip(&starts)
                .map(|((_, p), s)| *s as f64 + p.measured_secs * 1e3)
                .fold(0.0, f64::max);
            out.start_unix_ms = Some(begin);
            out.measured_secs = (end - begin as f64) / 1e3;
            out.timeline = merge_timeline(parts, &starts, begin);
        }
        None => {
            out.start_unix_ms = None;
            out.measured_secs = parts
                .iter()
                .map(|(_, p)| p.measured_secs)
                .fold(0.0, f64::max);
            out.timeline = merge_timeline(parts, &vec![0; parts.len()], 0);
        }
    }
    out.set_rates();
    out.cpu = CpuUsage {
        server: None,
        load: merged_cpu(parts, out.successes),
    };
    out.forget_unmeasured();
    out.cross_check = netns::cross_check(&phases, groups);
    out.cpu_busy_pct = BTreeMap::new();
    out.cpu_softirq_pct = BTreeMap::new();
    out.net_softirqs = BTreeMap::new();
    // One host's profile is not the merged run's: each segment's record keeps its own.
    out.profile = None;
    out.settings = BTreeMap::new();
    Ok(out)
}

/// Sums maps of counts key by key.
fn sum_maps<'a, V>(maps: impl Iterator<Item = &'a BTreeMap<String, V>>) -> BTreeMap<String, V>
where
    V: Copy + Default + std::ops::AddAssign + 'a,
{
    let mut out = BTreeMap::new();
    for m in maps {
        for (k, v) in m {
            *out.entry(k.clone()).or_default() += *v;
        }
    }
    out
}

/// The generators' CPU time summed; wall time the longest, CPUs the sum (so
/// [`SideCpu::sys_pct`] is the fleet's share of its capacity). A load record's CPU time covers
/// its whole run, warm-up included, so per connection it is divided by the whole runs'
/// handshakes (each part's `cross_check.load_successes`), falling back to `successes` (the
/// measured parts') when a part has no cross-check.
fn merged_cpu(parts: &[(&Path, &PhaseRecord)], successes: u64) -> SideCpu {
    let sides: Vec<&SideCpu> = parts.iter().map(|(_, p)| &p.cpu.load).collect();
    let successes = parts
        .iter()
        .map(|(_, p)| p.cross_check.as_ref().map(|c| c.load_successes))
        .sum::<Option<u64>>()
        .unwrap_or(successes);
    let cpu = SideCpu::new(
        sides.iter().map(|s| s.user_ns).sum(),
        sides.iter().map(|s| s.sys_ns).sum(),
        sides.iter().map(|s| s.wall_ns).max().unwrap_or(0),
        sides.iter().map(|s| s.cpus).sum(),
        successes,
    );
    let cpu = match sides.iter().map(|s| s.run_ns).sum::<Option<u64>>() {
        Some(run) => cpu.with_run_ns(run, successes),
        None => cpu,
    };
    // The spin before due starts is part of each side's CPU time: summed with it (segments
    // without any keep none).
    cpu.with_spin_ns(sides.iter().filter_map(|s| s.spin_ns).sum(), successes)
}

/// Per-second rows keyed by the wall-clock second each started in (`start_ms + (t − 1) s`,
/// rounded to the nearest second), summed, with `t_secs` counted from the merged start `begin`.
/// Per-second histograms are added when every row has one (then p50/p99 are the merged
/// histogram's); otherwise p50 is the largest row's p50 and p99 the largest p99 (an upper bound).
fn merge_timeline(parts: &[(&Path, &PhaseRecord)], starts: &[u64], begin: u64) -> Vec<TimelineRow> {
    struct Acc {
        row: TimelineRow,
        hist: Option<Histogram<u64>>,
        all_hist: bool,
    }
    let mut by_sec: BTreeMap<i64, Acc> = BTreeMap::new();
    let base = (begin as i64 + 500).div_euclid(1000);
    for ((_, p), &start) in parts.iter().zip(starts) {
        for r in &p.timeline {
            let row_start_ms = start as f64 + (r.t_secs - 1.0) * 1e3;
            let key = (row_start_ms / 1e3).round() as i64 - base;
            let acc = by_sec.entry(key).or_insert_with(|| Acc {
                row: TimelineRow {
                    t_secs: (key + 1) as f64,
                    ..TimelineRow::default()
                },
                hist: None,
                all_hist: true,
            });
            let a = &mut acc.row;
            a.attempts += r.attempts;
            a.successes += r.successes;
            a.dropped += r.dropped;
            a.late += r.late;
            for (k, v) in &r.failures {
                *a.failures.entry(k.clone()).or_insert(0) += v;
            }
            a.p50_ns = a.p50_ns.max(r.p50_ns);
            a.p99_ns = a.p99_ns.max(r.p99_ns);
            match r.handshake.as_deref().map(decode_histogram) {
                Some(Ok(h)) if acc.all_hist => {
                    if let Some(sum) = acc.hist.as_mut() {
                        let same = (sum.low(), sum.high(), sum.sigfig())
                            == (h.low(), h.high(), h.sigfig());
                        if !same || sum.add(&h).is_err() {
                            acc.all_hist = false;
                        }
                    } else {
                        acc.hist = Some(h);
                    }
                }
                _ => acc.all_hist = false,
            }
        }
    }
    by_sec
        .into_values()
        .map(|mut acc| {
            match acc.hist.filter(|_| acc.all_hist) {
                Some(h) => {
                    if !h.is_empty() {
                        acc.row.p50_ns = h.value_at_quantile(0.5);
                        acc.row.p99_ns = h.value_at_quantile(0.99);
                    }
                    acc.row.handshake = Some(encode_histogram(&h));
                }
                None => acc.row.handshake = None,
            }
            acc.row
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
