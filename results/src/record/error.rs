//! Why a run record could not be written or read.

use std::io;
use std::path::PathBuf;

use super::HistogramError;

/// Why a run record could not be written or read. Every variant names the file (or directory).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The output directory could not be created.
    #[error("cannot create the run record directory {}: {source}; choose a writable directory with --out", .dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Writing, syncing or renaming the record failed (disk full, read-only file system...).
    #[error("cannot write run record {}: {source}; check free space and permissions, or choose another directory with --out", .path.display())]
    Write {
        /// The file being written (the temporary file or the final name).
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The file could not be opened or read.
    #[error("cannot read run record {}: {source}; check the path", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The file is empty.
    #[error("run record {} is empty; it was not written completely: re-run the benchmark", .path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The JSON ends early: the file was cut short (copied partially, disk full).
    #[error("run record {} is truncated (JSON ends early at line {line}, column {column}); it was not written or copied completely: re-run or copy it again", .path.display())]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Line where the text ends (1-based).
        line: usize,
        /// Column where the text ends (1-based).
        column: usize,
    },
    /// The file is not JSON at all.
    #[error("{} is not a connstorm run record: not JSON ({source}); give a .json file written by `connstorm bench`, `load`, `server`, `sweep`, `ab` or `merge` (`--out`)", .path.display())]
    NotJson {
        /// The file.
        path: PathBuf,
        /// The JSON parser's complaint, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The JSON has no numeric `schema_version` at the top level.
    #[error("{} is not a connstorm run record: it has no numeric \"schema_version\" field; give a .json file written by `connstorm bench`, `load`, `server`, `sweep`, `ab` or `merge` (`--out`)", .path.display())]
    NoSchemaVersion {
        /// The file.
        path: PathBuf,
    },
    /// Written by a newer connstorm.
    #[error("run record {} has schema version {found}, newer than this connstorm reads ({supported}); upgrade connstorm to read it", .path.display())]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// Version in the file.
        found: u64,
        /// Version this build reads.
        supported: u32,
    },
    /// Written by an older connstorm whose format this build no longer reads.
    #[error("run record {} has schema version {found}, older than this connstorm reads ({supported}); read it with the connstorm release that wrote it, or re-run the benchmark", .path.display())]
    OlderSchema {
        /// The file.
        path: PathBuf,
        /// Version in the file.
        found: u64,
        /// Version this build reads.
        supported: u32,
    },
    /// The JSON is a record of the right version but a field is missing or has the wrong type;
    /// the message names the field by its path, e.g. ``phases[1].successes: invalid value:
    /// integer `-5`, expected u64``.
    #[error("run record {} is damaged: {source}; see docs/record-schema.md for the fields, or re-run the benchmark", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is missing or wrong, and where: the field's path and serde's message.
        #[source]
        source: serde_path_to_error::Error<serde_json::Error>,
    },
    /// A text field is longer than connstorm ever writes (a label of megabytes made every
    /// report repeat it: a 16 MB label gave a 268 MB HTML report).
    #[error("run record {}: its {field} is {} bytes, longer than connstorm writes (at most {}); the file was edited or damaged: shorten the field, or restore the file as connstorm wrote it", .path.display(), crate::numfmt::count(*.bytes as u64), crate::numfmt::count(*.max as u64))]
    TooLong {
        /// The file.
        path: PathBuf,
        /// The field, e.g. `label`.
        field: &'static str,
        /// Its length, bytes.
        bytes: usize,
        /// The most connstorm writes, bytes.
        max: usize,
    },
    /// A phase's figures contradict each other ([`crate::record::PhaseRecord::inconsistency`]).
    #[error("run record {}: phase {phase} is inconsistent: {what}; the file was edited or damaged: re-run the benchmark, or restore the file as connstorm wrote it", .path.display())]
    Inconsistent {
        /// The file.
        path: PathBuf,
        /// Phase name.
        phase: String,
        /// What contradicts what.
        what: String,
    },
    /// A histogram in the record does not decode.
    #[error("run record {}: histogram {phase}.{which} does not decode: {source}", .path.display())]
    Histogram {
        /// The file.
        path: PathBuf,
        /// Phase name.
        phase: String,
        /// `handshake`, `service` or `first_byte`.
        which: &'static str,
        /// The decoder's complaint.
        #[source]
        source: HistogramError,
    },
}
