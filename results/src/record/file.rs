//! A record as a file: writing it atomically, reading it back, the schema version and the
//! upgrade of older ones, and the checks that refuse a record that contradicts itself (each
//! error names the file).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::failure::{after_handshake_failures, never_accepted_total};
use super::{Latency, RecordError, Role, RunRecord};

/// The record format this build writes and reads. Bumped on any change that old readers would
/// misread; adding an optional field does not bump it.
///
/// History: 1 — first format. 2 — phase start times (`start_unix_ms`, `start_offset_ms`,
/// `run.started_unix_ms`), per-second handshake histograms, dropped and late per second, and
/// per-connection CPU figures `null` (not 0) with no connection. [`RunRecord::from_slice`]
/// reads schema 1 through [`upgrade_v1`].
pub const SCHEMA_VERSION: u32 = 2;

/// Largest record file [`RunRecord::read`] accepts (256 MiB; a 10-minute run's record is a few
/// MiB): a device or a wrong file must not exhaust memory.
pub const MAX_RECORD_BYTES: u64 = 256 << 20;

/// The longest label a record holds, bytes (`bench --label` refuses longer ones; a record read
/// with a longer one is refused: reports repeat the label in every table and plot).
pub const MAX_LABEL_BYTES: usize = 1024;

/// Oldest record format this build still reads.
pub const OLDEST_READABLE_SCHEMA_VERSION: u32 = 1;

impl RunRecord {
    /// Writes the record under `dir` (created if missing) and returns the file's path.
    ///
    /// Atomic: the JSON goes to a temporary file in `dir`, is fsynced, renamed to its final
    /// name ([`RunRecord::file_name`] with 8 random hex digits), and the directory is fsynced;
    /// a reader never sees a partial record, and a crash leaves at most a `.tmp` file.
    ///
    /// # Errors
    /// [`RecordError::CreateDir`] if `dir` cannot be created, [`RecordError::Write`] if writing,
    /// syncing or renaming fails (the temporary file is removed).
    pub fn write_atomic(&self, dir: &Path) -> Result<PathBuf, RecordError> {
        fs::create_dir_all(dir).map_err(|source| RecordError::CreateDir {
            dir: dir.to_path_buf(),
            source,
        })?;
        let name = self.file_name(&format!("{:08x}", rand::random::<u32>()));
        let path = dir.join(&name);
        let tmp = dir.join(format!(".{name}.tmp"));
        let json = self.to_json();
        let written = (|| {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(json.as_bytes())?;
            f.write_all(b"\n")?;
            f.sync_all()
        })();
        if let Err(source) = written {
            let _ = fs::remove_file(&tmp);
            return Err(RecordError::Write { path: tmp, source });
        }
        if let Err(source) = fs::rename(&tmp, &path) {
            let _ = fs::remove_file(&tmp);
            return Err(RecordError::Write { path, source });
        }
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|source| RecordError::Write {
                path: dir.to_path_buf(),
                source,
            })?;
        Ok(path)
    }

    /// Reads and checks a record file.
    ///
    /// # Errors
    /// Each names the file: [`RecordError::Read`] (cannot open), [`RecordError::Empty`],
    /// [`RecordError::Truncated`], [`RecordError::NotJson`], [`RecordError::NoSchemaVersion`],
    /// [`RecordError::NewerSchema`] / [`RecordError::OlderSchema`], [`RecordError::Invalid`]
    /// (missing field or wrong type, the message names the field), [`RecordError::Histogram`]
    /// (a histogram does not decode).
    pub fn read(path: &Path) -> Result<RunRecord, RecordError> {
        // stat(2) before open(2): a FIFO is refused, not waited on for ever.
        let bytes = common::files::read_regular(path, MAX_RECORD_BYTES).map_err(|e| {
            let hint = match e.kind() {
                std::io::ErrorKind::InvalidInput => {
                    " (a record is a .json file written by `connstorm bench`)"
                }
                std::io::ErrorKind::InvalidData => ": larger than any run record",
                _ => "",
            };
            RecordError::Read {
                path: path.to_path_buf(),
                source: std::io::Error::new(e.kind(), format!("{e}{hint}")),
            }
        })?;
        RunRecord::from_slice(&bytes, path)
    }

    /// Parses and checks record JSON; `path` is only used in errors.
    ///
    /// # Errors
    /// As [`RunRecord::read`], without [`RecordError::Read`].
    pub fn from_json(text: &str, path: &Path) -> Result<RunRecord, RecordError> {
        RunRecord::from_slice(text.as_bytes(), path)
    }

    /// [`RunRecord::from_json`] on bytes (which need not be UTF-8: non-JSON is
    /// [`RecordError::NotJson`]).
    ///
    /// # Errors
    /// As [`RunRecord::from_json`].
    pub fn from_slice(bytes: &[u8], path: &Path) -> Result<RunRecord, RecordError> {
        let path_buf = || path.to_path_buf();
        if bytes.trim_ascii().is_empty() {
            return Err(RecordError::Empty { path: path_buf() });
        }
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            if e.is_eof() {
                RecordError::Truncated {
                    path: path_buf(),
                    line: e.line(),
                    column: e.column(),
                }
            } else {
                RecordError::NotJson {
                    path: path_buf(),
                    source: e,
                }
            }
        })?;
        let found = value
            .get("schema_version")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| RecordError::NoSchemaVersion { path: path_buf() })?;
        if found > u64::from(SCHEMA_VERSION) {
            return Err(RecordError::NewerSchema {
                path: path_buf(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        if found < u64::from(OLDEST_READABLE_SCHEMA_VERSION) {
            return Err(RecordError::OlderSchema {
                path: path_buf(),
                found,
                supported: OLDEST_READABLE_SCHEMA_VERSION,
            });
        }
        let mut record: RunRecord =
            serde_path_to_error::deserialize(value).map_err(|source| RecordError::Invalid {
                path: path_buf(),
                source,
            })?;
        if found == 1 {
            upgrade_v1(&mut record);
        }
        forget_unmeasured_figures(&mut record);
        if record.label.len() > MAX_LABEL_BYTES {
            return Err(RecordError::TooLong {
                path: path_buf(),
                field: "label",
                bytes: record.label.len(),
                max: MAX_LABEL_BYTES,
            });
        }
        // A hand-edited label with control characters (`a\x1b[2J\nb`) cleared the terminal
        // and broke the report's lines: shown escaped (`a\u{1b}[2J\nb`), as every reader
        // prints it.
        if record.label.chars().any(char::is_control) {
            record.label = record
                .label
                .chars()
                .map(|c| {
                    if c.is_control() {
                        c.escape_default().to_string()
                    } else {
                        c.to_string()
                    }
                })
                .collect();
        }
        if record.phases.is_empty() {
            return Err(RecordError::Inconsistent {
                path: path_buf(),
                phase: "(none)".into(),
                what: "the record has no phase (every run connstorm writes has at least one)"
                    .into(),
            });
        }
        for phase in &record.phases {
            if let Some(what) = phase.inconsistency().or_else(|| {
                phase.cross_check_contradiction(record.run.netns && record.role == Role::Bench)
            }) {
                return Err(RecordError::Inconsistent {
                    path: path_buf(),
                    phase: phase.name.clone(),
                    what,
                });
            }
            // Each success has its handshake sample, and so has each handshake the server
            // never accepted (the client saw it complete) and each attempt whose HTTP exchange
            // or TLS handshake failed after its TCP handshake (`load --http`/`--tls`: they were
            // refused as damaged), and at most each attempt cut by a signal: a record whose
            // counts were scaled by hand would otherwise print a CPM beside a histogram of
            // other connections.
            if let Ok(Some(h)) = phase.histograms.decode(Latency::Handshake) {
                let never = never_accepted_total(&phase.failures);
                let after = after_handshake_failures(&phase.failures);
                let least = phase.successes + never + after;
                if h.len() < least || h.len() > least + phase.abandoned {
                    let cut = if phase.abandoned > 0 {
                        format!(
                            " (and up to {} attempts cut by a signal)",
                            crate::numfmt::count(phase.abandoned)
                        )
                    } else {
                        String::new()
                    };
                    return Err(RecordError::Inconsistent {
                        path: path_buf(),
                        phase: phase.name.clone(),
                        what: format!(
                            "the handshake histogram holds {} samples but the phase has {} successes, {} handshakes never accepted and {} failed after their TCP handshake (HTTP/TLS){cut}",
                            crate::numfmt::count(h.len()),
                            crate::numfmt::count(phase.successes),
                            crate::numfmt::count(never),
                            crate::numfmt::count(after)
                        ),
                    });
                }
            }
            for which in Latency::ALL {
                if let Err(source) = phase.histograms.decode(which) {
                    return Err(RecordError::Histogram {
                        path: path_buf(),
                        phase: phase.name.clone(),
                        which: which.name(),
                        source,
                    });
                }
            }
        }
        // After the checks: a stored `agree` that contradicts the kernel's counts is refused
        // above as the hand edit it is; one beside handshakes never accepted was this
        // project's older rule.
        disagree_on_never_accepted(&mut record);
        Ok(record)
    }
}

/// Reads a schema-1 record as schema 2: the new fields it lacks stay `None`/0 (phase start
/// times and per-second histograms are unknown: `report --hlog` then writes one interval per
/// phase), and the per-connection CPU figures it stored as 0 for a phase with no connection
/// become `None` (they never existed).
pub fn upgrade_v1(record: &mut RunRecord) {
    if record.role != Role::Server {
        for p in &mut record.phases {
            p.forget_unmeasured();
        }
    }
    record.schema_version = SCHEMA_VERSION;
}

/// What records of older builds (any schema) stored that was never measured, read as this build
/// writes it: a phase without a success in its measured part has no rates and no CPU per
/// connection ([`PhaseRecord::forget_unmeasured`]: they stored 0, and CPU per connection of the
/// warm-up). A server record's phase counts accepts, not successes: its CPU per connection (per
/// accept) stays.
fn forget_unmeasured_figures(record: &mut RunRecord) {
    if record.role == Role::Server {
        return;
    }
    for p in &mut record.phases {
        p.forget_unmeasured();
    }
}

/// A cross-check that found handshakes the server never accepted does not agree
/// ([`CrossCheck::never_accepted`]); older builds stored `agree: true` beside the note that
/// said so.
fn disagree_on_never_accepted(record: &mut RunRecord) {
    for c in record
        .phases
        .iter_mut()
        .filter_map(|p| p.cross_check.as_mut())
    {
        c.agree &= c.never_accepted() == 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::PhaseRecord;

    #[test]
    fn write_then_read_gives_the_same_record() {
        let dir = tempfile::tempdir().unwrap();
        let rec = RunRecord::example();
        let path = rec.write_atomic(&dir.path().join("runs")).unwrap();
        assert_eq!(RunRecord::read(&path).unwrap(), rec);
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("2026-11-29T22-15-03Z-example-"), "{name}");
        // Nothing but the record is left in the directory.
        let entries: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(entries.len(), 1);
    }

    /// Hand edits the figures cannot back: no phase at all, or `agree: true` beside a server
    /// that accepted more than the kernel created (any namespace), or, in private namespaces,
    /// anything but equal counts.
    #[test]
    fn a_record_without_phases_or_with_an_agreeing_cross_check_that_contradicts_itself_is_refused()
    {
        let dir = tempfile::tempdir().unwrap();
        let write = |rec: &RunRecord, name: &str| {
            let p = dir.path().join(name);
            fs::write(&p, serde_json::to_string(rec).unwrap()).unwrap();
            p
        };
        let mut empty = RunRecord::example();
        empty.phases.clear();
        let err = RunRecord::read(&write(&empty, "empty.json")).unwrap_err();
        assert!(err.to_string().contains("has no phase"), "{err}");

        let base = RunRecord::example();
        assert!(base.phases.iter().any(|p| p.cross_check.is_some()));
        let edited = |exact: bool, accepted: u64, passive: i64| {
            let mut r = base.clone();
            r.run.netns = exact;
            let c = r.phases[0].cross_check.as_mut().unwrap();
            c.agree = true;
            c.server_accepted = Some(accepted);
            c.kernel_passive_opens = Some(passive);
            r
        };
        for (exact, accepted, passive, refused) in [
            (false, 1_000, 999, true),
            (true, 1_000, 999, true),
            (true, 1_000, 1_001, true),
            (false, 1_000, 1_001, false),
            (true, 1_000, 1_000, false),
        ] {
            let p = write(&edited(exact, accepted, passive), "edited.json");
            let got = RunRecord::read(&p);
            assert_eq!(
                got.is_err(),
                refused,
                "{exact} {accepted} {passive}: {got:?}"
            );
            if let Err(e) = got {
                assert!(
                    e.to_string()
                        .contains("says the counts agree, but the server accepted 1,000"),
                    "{e}"
                );
            }
        }
    }

    #[test]
    fn devices_and_directories_are_refused_without_reading_them() {
        for p in ["/dev/zero", "/dev/urandom", "/tmp"] {
            let err = RunRecord::read(Path::new(p)).unwrap_err();
            assert!(matches!(err, RecordError::Read { .. }), "{p}: {err}");
            assert!(err.to_string().contains(p), "{err}");
        }
    }

    #[test]
    fn a_label_with_control_characters_is_read_escaped() {
        let mut rec = RunRecord::example();
        rec.label = "a\u{1b}[2J\nb".into();
        let back = RunRecord::from_json(&rec.to_json(), Path::new("x.json")).unwrap();
        assert_eq!(back.label, "a\\u{1b}[2J\\nb");
    }

    #[test]
    fn a_label_longer_than_connstorm_writes_is_refused_naming_it() {
        let mut rec = RunRecord::example();
        rec.label = "x".repeat(MAX_LABEL_BYTES);
        assert!(RunRecord::from_json(&rec.to_json(), Path::new("ok.json")).is_ok());
        rec.label.push('y');
        let e = RunRecord::from_json(&rec.to_json(), Path::new("long.json"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "long.json: its label is 1,025 bytes, longer than connstorm writes (at most 1,024)"
            ),
            "{e}"
        );
    }

    #[test]
    fn file_name_sanitizes_the_label() {
        let mut rec = RunRecord::example();
        rec.label = "kernel 6.12/patched".into();
        assert_eq!(
            rec.file_name("ab"),
            "2026-11-29T22-15-03Z-kernel-6.12-patched-ab.json"
        );
        rec.label.clear();
        assert!(rec.file_name("ab").ends_with("-run-ab.json"));
    }

    #[test]
    fn write_into_an_unwritable_place_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain-file");
        fs::write(&file, "x").unwrap();
        let err = RunRecord::example()
            .write_atomic(&file.join("runs"))
            .unwrap_err();
        assert!(matches!(err, RecordError::CreateDir { .. }), "{err}");
        assert!(err.to_string().contains("plain-file"), "{err}");
    }

    fn read_err(text: &str) -> RecordError {
        RunRecord::from_json(text, Path::new("/runs/x.json")).unwrap_err()
    }

    type Expect = fn(&RecordError) -> bool;

    #[test]
    fn bad_inputs_get_their_own_error_naming_the_file() {
        let good = RunRecord::example().to_json();
        let cases: Vec<(String, Expect)> = vec![
            (String::new(), |e| matches!(e, RecordError::Empty { .. })),
            (good[..good.len() / 2].to_string(), |e| {
                matches!(e, RecordError::Truncated { .. })
            }),
            ("PNG\u{1}garbage".into(), |e| {
                matches!(e, RecordError::NotJson { .. })
            }),
            ("{\"label\": 1}".into(), |e| {
                matches!(e, RecordError::NoSchemaVersion { .. })
            }),
            (
                good.replacen("\"schema_version\": 2", "\"schema_version\": 3", 1),
                |e| matches!(e, RecordError::NewerSchema { found: 3, .. }),
            ),
            (
                good.replacen("\"schema_version\": 2", "\"schema_version\": 0", 1),
                |e| matches!(e, RecordError::OlderSchema { found: 0, .. }),
            ),
            (good.replacen("\"phases\"", "\"phasez\"", 1), |e| {
                matches!(e, RecordError::Invalid { .. }) && e.to_string().contains("phases")
            }),
        ];
        for (text, expected) in cases {
            let err = read_err(&text);
            assert!(expected(&err), "unexpected error {err:?} for {text:.60}");
            assert!(err.to_string().contains("/runs/x.json"), "{err}");
        }
    }

    #[test]
    fn a_wrong_type_names_the_field_path() {
        let mut v: serde_json::Value =
            serde_json::from_str(&RunRecord::example().to_json()).unwrap();
        v["phases"][1]["successes"] = serde_json::json!(-5);
        let err = read_err(&serde_json::to_string_pretty(&v).unwrap());
        assert!(matches!(err, RecordError::Invalid { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains(
                "is damaged: phases[1].successes: invalid value: integer `-5`, expected u64"
            ),
            "{msg}"
        );
        v["phases"][1]["successes"] = serde_json::json!(1);
        v["phases"][0]["timeline"][2]["p50_ns"] = serde_json::json!("fast");
        let msg = read_err(&serde_json::to_string(&v).unwrap()).to_string();
        assert!(
            msg.contains(
                "phases[0].timeline[2].p50_ns: invalid type: string \"fast\", expected u64"
            ),
            "{msg}"
        );
    }

    #[test]
    fn a_damaged_histogram_is_reported_with_its_phase() {
        let mut rec = RunRecord::example();
        rec.phases[1].histograms.service = "AAAA".into();
        let err = read_err(&rec.to_json());
        let msg = err.to_string();
        assert!(
            matches!(
                err,
                RecordError::Histogram {
                    which: "service",
                    ..
                }
            ),
            "{msg}"
        );
        assert!(msg.contains("latency.service"), "{msg}");
    }

    /// Older builds stored, for a phase whose measured window had no success, `cpm: 0.0`,
    /// `achieved_per_sec: 0.0`, CPU per connection of the warm-up's accepts, and
    /// `cross_check.agree: true` beside "N of M handshakes ... never accepted". Read back, the
    /// rates and CPU per connection are unknown and the cross-check does not agree; a server
    /// record keeps its CPU per accept.
    #[test]
    fn nothing_measured_reads_as_unknown_in_records_of_older_builds() {
        let mut v: serde_json::Value =
            serde_json::from_str(&RunRecord::example().to_json()).unwrap();
        let p = &mut v["phases"][0];
        p["successes"] = 0.into();
        p["achieved_per_sec"] = 0.0.into();
        p["cpm"] = 0.0.into();
        p["failures"] = serde_json::json!({"never accepted": 23, "ECONNREFUSED": 1});
        p["attempts"] = 24.into();
        let mut h = crate::record::new_latency_histogram();
        h.record_n(1_000, 23).unwrap();
        p["histograms"]["handshake"] = crate::record::encode_histogram(&h).into();
        for side in ["server", "load"] {
            p["cpu"][side]["us_per_conn_user"] = 41.6.into();
            p["cpu"][side]["us_per_conn_sys"] = 31.8.into();
            p["cpu"][side]["us_per_conn_run"] = 71.3.into();
        }
        p["cross_check"]["server_accepted"] = 57.into();
        p["cross_check"]["load_successes"] = 80.into();
        p["cross_check"]["kernel_passive_opens"] = 57.into();
        p["cross_check"]["agree"] = true.into();
        let text = serde_json::to_string(&v).unwrap();
        let rec = RunRecord::from_json(&text, Path::new("old.json")).unwrap();
        let p = &rec.phases[0];
        assert_eq!((p.achieved_per_sec, p.cpm), (None, None));
        for side in [p.cpu.server.unwrap(), p.cpu.load] {
            assert_eq!(side.us_per_conn_user, None);
            assert_eq!(side.us_per_conn_sys, None);
            assert_eq!(side.us_per_conn_run, None);
            assert_eq!(side.us_per_conn(), None);
        }
        let c = p.cross_check.as_ref().unwrap();
        assert!(!c.agree, "{c:?}");
        assert_eq!(c.never_accepted(), 23);
        // Written again, they are null.
        let again: serde_json::Value = serde_json::from_str(&rec.to_json()).unwrap();
        assert!(again["phases"][0]["cpm"].is_null());
        assert!(again["phases"][0]["achieved_per_sec"].is_null());
        assert!(again["phases"][0]["cpu"]["load"]["us_per_conn_run"].is_null());
        // The measured phase beside it keeps its figures.
        assert!(rec.phases[1].cpm.is_some() && rec.phases[1].cpu.load.us_per_conn().is_some());

        let mut server = RunRecord::example();
        server.role = Role::Server;
        server.phases.truncate(1);
        let p = &mut server.phases[0];
        p.successes = 0;
        p.set_rates();
        p.histograms.handshake =
            crate::record::encode_histogram(&crate::record::new_latency_histogram());
        p.failures.clear();
        let read = RunRecord::from_json(&server.to_json(), Path::new("s.json")).unwrap();
        assert!(read.phases[0].cpu.server.unwrap().us_per_conn().is_some());
    }

    #[test]
    fn a_phase_that_contradicts_itself_is_refused() {
        type Edit = fn(&mut PhaseRecord);
        let edits: [(Edit, &str); 8] = [
            (
                |p| p.measured_secs = 0.0,
                "successes in a measured time of 0 s",
            ),
            (|p| p.successes = p.attempts + 1, "exceed attempts"),
            (
                |p| p.cpm = p.cpm.map(|v| v * 2.0),
                "is not 60 × achieved_per_sec",
            ),
            (|p| p.cpm = None, "cpm null is not 60 × achieved_per_sec"),
            (
                |p| p.achieved_per_sec = Some(-5.0),
                "not a finite number ≥ 0",
            ),
            (
                |p| p.achieved_per_sec = None,
                "achieved_per_sec is null but",
            ),
            (|p| p.successes /= 2, "is not successes / measured_secs"),
            (
                |p| {
                    // Scaled consistently, but the histogram still holds the old samples.
                    p.successes *= 2;
                    p.attempts *= 2;
                    p.set_rates();
                },
                "the handshake histogram holds",
            ),
        ];
        for (edit, want) in edits {
            let mut rec = RunRecord::example();
            edit(&mut rec.phases[0]);
            let err = read_err(&rec.to_json());
            let msg = err.to_string();
            assert!(matches!(err, RecordError::Inconsistent { .. }), "{msg}");
            assert!(msg.contains(want) && msg.contains("/runs/x.json"), "{msg}");
        }
        assert!(RunRecord::example()
            .phases
            .iter()
            .all(|p| p.inconsistency().is_none()));
    }

    /// Files people bring: a hand-edited record whose worker rows contradict themselves or the
    /// phase (a load row's successes above its attempts, whole-run counts below the measured
    /// part, rows adding up to more than the phase, a row on a CPU far longer than its side's
    /// wall time) is refused naming the row and fields; a
    /// record from before `run_attempts` (rows held the whole run) still reads.
    #[test]
    fn a_record_whose_load_worker_rows_contradict_is_refused_and_an_old_one_still_reads() {
        let measured = |p: &mut PhaseRecord| {
            let w = &mut p.load_workers[0];
            w.run_attempts = Some(w.attempts + 10);
            w.run_successes = Some(w.successes + 10);
            w.cpu_run_ns = Some(50_000_000);
        };
        type Edit = fn(&mut PhaseRecord);
        let edits: [(Edit, &str); 7] = [
            (
                |p| p.load_workers[0].successes = p.load_workers[0].attempts + 1,
                "load_workers[0]: successes",
            ),
            (
                |p| p.load_workers[0].run_attempts = Some(3),
                "load_workers[0]: run_attempts 3 (the whole run) are fewer than attempts",
            ),
            (
                |p| p.load_workers[0].run_successes = Some(0),
                "load_workers[0]: run_successes 0 (the whole run) are fewer than successes",
            ),
            (
                |p| p.load_workers[0].run_successes = Some(1_000_000_000),
                "load_workers[0]: run_successes 1,000,000,000 exceed run_attempts",
            ),
            (
                |p| {
                    let mut w = p.load_workers[0];
                    w.cpu = 2;
                    p.load_workers.push(w);
                },
                "the load workers' attempts add up to",
            ),
            (
                |p| p.load_workers[0].cpu_run_ns = Some(u64::MAX),
                "load_workers[0]: cpu_run_ns 18,446,744,073,709,551,615 is more on-CPU time than one thread has",
            ),
            (
                |p| p.server.as_mut().unwrap().workers[0].cpu_run_ns = Some(u64::MAX),
                "server.workers[0]: cpu_run_ns 18,446,744,073,709,551,615 is more on-CPU time",
            ),
        ];
        for (edit, want) in edits {
            let mut rec = RunRecord::example();
            measured(&mut rec.phases[0]);
            assert!(rec.phases[0].inconsistency().is_none());
            edit(&mut rec.phases[0]);
            let err = read_err(&rec.to_json());
            let msg = err.to_string();
            assert!(matches!(err, RecordError::Inconsistent { .. }), "{msg}");
            assert!(msg.contains(want) && msg.contains("/runs/x.json"), "{msg}");
        }
        // An older record: no run_attempts, rows of the whole run (above the phase's measured
        // attempts) read as they always did.
        let mut rec = RunRecord::example();
        let w = &mut rec.phases[0].load_workers[0];
        w.attempts += 500;
        w.successes += 500;
        assert!(rec.phases[0].inconsistency().is_none());
        let json = rec.to_json();
        assert!(!json.contains("run_attempts"), "{json}");
        let back = RunRecord::from_json(&json, Path::new("/runs/old.json")).unwrap();
        assert_eq!(back.phases[0].load_workers[0].run_attempts, None);
        assert_eq!(
            back.phases[0].load_workers[0].cpu_span_attempts(),
            back.phases[0].load_workers[0].attempts
        );
    }
}
