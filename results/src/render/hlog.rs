//! HdrHistogram interval logs (`.hlog`) from run records, for HdrHistogram's own tools (Java
//! `HistogramLogProcessor`, HdrHistogramVisualizer, Python `hdrh.log`).
//!
//! One log per phase. Schema-2 records: one untagged handshake interval per second of the
//! phase's measured part (from [`crate::record::TimelineRow::handshake`]), each starting at its
//! real time, then the whole-phase service and first-byte histograms as one interval each,
//! tagged `service` and `first_byte` (read them with `-tag service`). Schema-1 records (no
//! per-second histograms, no phase start): one interval per histogram covering the phase, at the
//! sum of the earlier phases' measured seconds (the best that record allows, stated in a
//! comment line).
//!
//! Times: `#[StartTime: …]` and `#[BaseTime: …]` are the run's start with millisecond
//! resolution ([`crate::record::RunInfo::started_unix_ms`]); an interval's timestamp is seconds
//! after it: the phase's `start_offset_ms` plus the second's offset in the measured part. Values
//! are nanoseconds; the max column is in milliseconds (`MaxValueDivisor` 1e6, Java's default
//! output ratio). Format per the HdrHistogram interval-log docs (docs.rs hdrhistogram `serialization::interval_log`, Java `HistogramLogReader`): Java `HistogramLogWriter` headers
//! (`#[Histogram log format version 1.3]`, the legend line), V2 + DEFLATE histograms.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::record::{parse_rfc3339_utc, HistogramError, Latency, RunRecord};

/// Why an interval log could not be written.
#[derive(Debug, thiserror::Error)]
pub enum HlogError {
    /// A histogram in the record does not decode.
    #[error("histogram {phase}.{which} does not decode: {source}; the record is damaged: re-run the benchmark")]
    Histogram {
        /// Phase name.
        phase: String,
        /// `handshake`, `service` or `first_byte`.
        which: &'static str,
        /// The decoder's complaint.
        #[source]
        source: HistogramError,
    },
    /// Writing the log failed.
    #[error("cannot write interval log {}: {source}; check free space and permissions of the directory", .path.display())]
    Write {
        /// The file (or `-` for a writer that is not a file).
        path: PathBuf,
        /// The OS error (or the serializer's, as `Other`).
        #[source]
        source: io::Error,
    },
}

/// Java's legend line, which the Rust writer does not emit (Java `HistogramLogWriter.outputLegend`).
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// Writes the interval log of one phase (by index into `record.phases`) to `out`.
///
/// # Errors
/// [`HlogError::Histogram`] if a stored histogram does not decode; [`HlogError::Write`] (with
/// path `-`) if `out` fails.
///
/// # Panics
/// If `phase_index` is out of range.
pub fn write_hlog<W: Write>(
    out: &mut W,
    record: &RunRecord,
    phase_index: usize,
) -> Result<(), HlogError> {
    let phase = &record.phases[phase_index];
    let io_err = |source: io::Error| HlogError::Write {
        path: PathBuf::from("-"),
        source,
    };
    let start = match record.run.started_unix_ms {
        Some(ms) => SystemTime::UNIX_EPOCH + Duration::from_millis(ms),
        None => parse_rfc3339_utc(&record.run.started_at).unwrap_or(SystemTime::UNIX_EPOCH),
    };
    let per_second = phase.start_offset_ms.is_some()
        && !phase.timeline.is_empty()
        && phase.timeline.iter().all(|r| r.handshake.is_some());
    // Schema 1: no phase start recorded; phases assumed back to back (warm-ups unknown).
    let phase_at = phase.start_offset_ms.map_or_else(
        || {
            record.phases[..phase_index]
                .iter()
                .map(|p| p.measured_secs)
                .sum::<f64>()
        },
        |ms| ms / 1e3,
    );
    let mut serializer = V2DeflateSerializer::new();
    let mut builder = IntervalLogWriterBuilder::new();
    builder
        .add_comment(&format!(
            "[Logged with connstorm {} ({}), run record label {:?}, phase {:?}, values in ns]",
            record.run.connstorm_version, record.run.git_commit, record.label, phase.name
        ))
        .add_comment("[Histogram log format version 1.3]");
    if !per_second {
        builder.add_comment(
            "[Record without per-second histograms or phase start (schema 1): one interval per phase; start assumes phases ran back to back]",
        );
    }
    let mut log = builder
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1e6)
        .begin_log_with(out, &mut serializer)
        .map_err(io_err)?;
    log.write_comment(LEGEND).map_err(io_err)?;
    let decode_err = |which: Latency| {
        let name = phase.name.clone();
        move |source| HlogError::Histogram {
            phase: name,
            which: which.name(),
            source,
        }
    };
    let whole = Duration::from_secs_f64(phase.measured_secs.max(0.0));
    let at = |secs: f64| Duration::from_secs_f64(secs.max(0.0));
    let mut write = |h: &hdrhistogram::Histogram<u64>, start: Duration, len: Duration, tag| {
        log.write_histogram(h, start, len, tag)
            .map_err(|e| io_err(io::Error::other(e.to_string())))
    };
    for which in Latency::ALL {
        if which == Latency::Handshake && per_second {
            for row in &phase.timeline {
                let encoded = row.handshake.as_deref().expect("checked above");
                let h = crate::record::decode_histogram(encoded).map_err(decode_err(which))?;
                // A row ends at t_secs after the measured part began and lasts length_secs
                // (the last may be partial).
                let begin = row.start_secs().max(0.0);
                write(&h, at(phase_at + begin), at(row.t_secs - begin), None)?;
            }
            continue;
        }
        let h = phase.histograms.decode(which).map_err(decode_err(which))?;
        let Some(h) = h else { continue };
        let tag = match which {
            Latency::Handshake => None,
            other => Tag::new(other.name()),
        };
        write(&h, at(phase_at), whole, tag)?;
    }
    Ok(())
}

/// The files [`write_hlogs`] writes for `record`: one `<stem>.<phase>.hlog` per phase in `dir`,
/// in phase order (anything but `A-Z a-z 0-9 . _ -` in a phase name becomes `-`). Callers check
/// them against their inputs before anything is written.
pub fn hlog_paths(record: &RunRecord, stem: &str, dir: &Path) -> Vec<PathBuf> {
    record
        .phases
        .iter()
        .map(|phase| {
            let safe: String = phase
                .name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._-".contains(c) {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            dir.join(format!("{stem}.{safe}.hlog"))
        })
        .collect()
}

/// Writes one `.hlog` per phase into `dir` (created if missing), at [`hlog_paths`], and returns
/// them in phase order.
///
/// `stem` is usually the record file's name without `.json`.
///
/// # Errors
/// [`HlogError::Write`] naming the file, or [`HlogError::Histogram`].
pub fn write_hlogs(record: &RunRecord, stem: &str, dir: &Path) -> Result<Vec<PathBuf>, HlogError> {
    fs::create_dir_all(dir).map_err(|source| HlogError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut written = Vec::new();
    for (i, path) in hlog_paths(record, stem, dir).into_iter().enumerate() {
        let mut buf = Vec::new();
        write_hlog(&mut buf, record, i)?;
        fs::write(&path, buf).map_err(|source| HlogError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    /// (tag, start since StartTime, length, histogram) of every interval in a log.
    pub(crate) fn intervals(
        buf: &[u8],
    ) -> Vec<(
        Option<String>,
        Duration,
        Duration,
        hdrhistogram::Histogram<u64>,
    )> {
        IntervalLogIterator::new(buf)
            .filter_map(|e| match e.unwrap() {
                LogEntry::Interval(ilh) => Some((
                    ilh.tag().map(|t| t.as_str().to_string()),
                    ilh.start_timestamp(),
                    ilh.duration(),
                    crate::record::decode_histogram(ilh.encoded_histogram()).unwrap(),
                )),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn one_handshake_interval_per_second_at_the_phase_start() {
        let rec = RunRecord::example();
        let mut buf = Vec::new();
        write_hlog(&mut buf, &rec, 1).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.contains("#[StartTime: 1795990503.250 "), "{text}");
        assert!(
            text.contains("\"StartTimestamp\",\"Interval_Length\""),
            "{text}"
        );
        let ivs = intervals(&buf);
        let phase = &rec.phases[1];
        let hs: Vec<_> = ivs.iter().filter(|i| i.0.is_none()).collect();
        assert_eq!(
            hs.len(),
            phase.timeline.len(),
            "one handshake interval per second"
        );
        for (i, (_, start, len, h)) in hs.iter().enumerate() {
            let want = phase.start_offset_ms.unwrap() / 1e3 + i as f64;
            assert!(
                (start.as_secs_f64() - want).abs() < 0.010,
                "{i}: {start:?} vs {want}"
            );
            assert_eq!(*len, Duration::from_secs(1));
            assert_eq!(h.len(), phase.timeline[i].successes);
        }
        assert_eq!(
            ivs.iter()
                .filter(|i| i.0.as_deref() == Some("service"))
                .count(),
            1
        );
    }

    #[test]
    fn schema_one_records_get_one_interval_per_phase() {
        let mut rec = RunRecord::example();
        for p in &mut rec.phases {
            p.start_offset_ms = None;
            for r in &mut p.timeline {
                r.handshake = None;
            }
        }
        let mut buf = Vec::new();
        write_hlog(&mut buf, &rec, 1).unwrap();
        let ivs = intervals(&buf);
        assert_eq!(ivs.len(), 2, "handshake and service, no first byte");
        assert_eq!(
            ivs[0].1,
            Duration::from_secs_f64(rec.phases[0].measured_secs)
        );
        assert_eq!(
            Some(ivs[0].3.clone()),
            rec.phases[1].histograms.decode(Latency::Handshake).unwrap()
        );
        assert!(String::from_utf8(buf).unwrap().contains("schema 1"));
    }

    #[test]
    fn write_all_names_files_after_the_phases() {
        let dir = tempfile::tempdir().unwrap();
        let paths = write_hlogs(&RunRecord::example(), "run", dir.path()).unwrap();
        let names: Vec<_> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, ["run.peak.hlog", "run.latency.hlog"]);
        assert_eq!(
            paths,
            super::hlog_paths(&RunRecord::example(), "run", dir.path())
        );
    }
}
