//! HdrHistogram interval logs (`.hlog`) from run records, for HdrHistogram's own tools (Java
//! `HistogramLogProcessor`, HdrHistogramVisualizer, Python `hdrh.log`).
//!
//! One log per phase: one interval line per histogram of the phase, covering the phase's
//! measured part. The handshake histogram is untagged (what `HistogramLogProcessor` reads by
//! default); service and first-byte latency are tagged `service` and `first_byte` (read them
//! with `-tag service`). Values are nanoseconds; the max column is in milliseconds
//! (`MaxValueDivisor` 1e6). Interval start times are seconds since the run started
//! (`BaseTime` = `StartTime` = the record's `started_at`); phases follow each other, so phase
//! *k* starts at the sum of the measured seconds of the phases before it.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::histogram::HistogramError;
use crate::record::{Latency, RunRecord};
use crate::timestamp;

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

/// Writes the interval log of one phase (by index into `record.phases`) to `out`.
///
/// # Errors
/// [`HlogError::Histogram`] if a stored histogram does not decode; [`HlogError::Write`] (with
/// path `-`) if `out` fails.
///
/// # Panics
/// If `phase_index` is out of range.
pub fn write_phase<W: Write>(
    out: &mut W,
    record: &RunRecord,
    phase_index: usize,
) -> Result<(), HlogError> {
    let phase = &record.phases[phase_index];
    let io_err = |source: io::Error| HlogError::Write {
        path: PathBuf::from("-"),
        source,
    };
    let start =
        timestamp::parse_rfc3339_utc(&record.run.started_at).unwrap_or(SystemTime::UNIX_EPOCH);
    let offset_secs: f64 = record.phases[..phase_index]
        .iter()
        .map(|p| p.measured_secs)
        .sum();
    let mut serializer = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "[Logged with connstorm {} ({}), run record label {:?}, phase {:?}, values in ns]",
            record.run.connstorm_version, record.run.git_commit, record.label, phase.name
        ))
        .add_comment("[Histogram log format version 1.3]")
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1e6)
        .begin_log_with(out, &mut serializer)
        .map_err(io_err)?;
    let length = Duration::from_secs_f64(phase.measured_secs.max(0.0));
    let at = Duration::from_secs_f64(offset_secs.max(0.0));
    for which in Latency::ALL {
        let h = phase
            .histograms
            .decode(which)
            .map_err(|source| HlogError::Histogram {
                phase: phase.name.clone(),
                which: which.name(),
                source,
            })?;
        let Some(h) = h else { continue };
        let tag = match which {
            Latency::Handshake => None,
            other => Tag::new(other.name()),
        };
        log.write_histogram(&h, at, length, tag)
            .map_err(|e| io_err(io::Error::other(e.to_string())))?;
    }
    Ok(())
}

/// Writes one `.hlog` per phase into `dir` (created if missing), named
/// `<stem>.<phase>.hlog`, and returns their paths in phase order.
///
/// `stem` is usually the record file's name without `.json`.
///
/// # Errors
/// [`HlogError::Write`] naming the file, or [`HlogError::Histogram`].
pub fn write_all(record: &RunRecord, stem: &str, dir: &Path) -> Result<Vec<PathBuf>, HlogError> {
    fs::create_dir_all(dir).map_err(|source| HlogError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut paths = Vec::new();
    for (i, phase) in record.phases.iter().enumerate() {
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
        let path = dir.join(format!("{stem}.{safe}.hlog"));
        let mut buf = Vec::new();
        write_phase(&mut buf, record, i)?;
        fs::write(&path, buf).map_err(|source| HlogError::Write {
            path: path.clone(),
            source,
        })?;
        paths.push(path);
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn each_phase_log_holds_its_histograms_at_their_offsets() {
        let rec = RunRecord::example();
        let mut buf = Vec::new();
        write_phase(&mut buf, &rec, 1).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.contains("#[StartTime: "), "{text}");
        let mut intervals = Vec::new();
        for entry in IntervalLogIterator::new(&buf) {
            if let LogEntry::Interval(ilh) = entry.unwrap() {
                let h = crate::histogram::decode(ilh.encoded_histogram()).unwrap();
                intervals.push((
                    ilh.tag().map(|t| t.as_str().to_string()),
                    ilh.start_timestamp(),
                    h,
                ));
            }
        }
        assert_eq!(intervals.len(), 2, "handshake and service, no first byte");
        let phase = &rec.phases[1];
        let want_at = Duration::from_secs_f64(rec.phases[0].measured_secs);
        let (tag, at, h) = &intervals[0];
        assert_eq!(tag, &None);
        assert_eq!(*at, want_at);
        assert_eq!(
            Some(h.clone()),
            phase.histograms.decode(Latency::Handshake).unwrap()
        );
        assert_eq!(intervals[1].0.as_deref(), Some("service"));
    }

    #[test]
    fn write_all_names_files_after_the_phases() {
        let dir = tempfile::tempdir().unwrap();
        let paths = write_all(&RunRecord::example(), "run", dir.path()).unwrap();
        let names: Vec<_> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, ["run.peak.hlog", "run.latency.hlog"]);
    }
}
