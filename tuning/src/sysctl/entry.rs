//! One sysctl setting of a preset or sysctl.d file ([`Entry`], compared by [`Op`]), and why a
//! file of them is refused ([`PresetError`]): the vocabulary the preset files
//! (`preset.rs`) and the sysctl.d files (`sysctld.rs`) share.

use serde::{Deserialize, Serialize};

use super::key::{Key, KeyError};

/// How a recommended value relates to the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    /// The value must be exactly this.
    #[default]
    Set,
    /// A limit: the current value is fine when every number in it is ≥ the recommended one; a
    /// preset never lowers it.
    AtLeast,
    /// The current value is fine when every number in it is ≤ the recommended one.
    AtMost,
}

/// One recommended sysctl.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The key.
    pub key: Key,
    /// Recommended value, whitespace-normalized.
    pub value: String,
    /// How to compare with the current value.
    pub op: Op,
    /// Missing on this kernel is not an error (sysctl.conf `-` prefix).
    pub optional: bool,
    /// Only right under a condition its reason states (e.g. isolated CPUs and a watchdog):
    /// `check` shows it, `apply` never writes it, exports write it commented out.
    #[serde(default)]
    pub manual: bool,
    /// Why.
    pub reason: String,
    /// Where the recommendation comes from (kernel doc, man page, tuned profile).
    pub source: String,
    /// Line in the preset file (1-based).
    pub line: usize,
    /// `file:line` the value comes from (sysctl.d files; empty for TOML presets).
    #[serde(default)]
    pub origin: String,
    /// Earlier lines this value replaced, as `file:line (value)` (sysctl.d files).
    #[serde(default)]
    pub overrides: Vec<String>,
}

/// A preset or sysctl.conf file is unusable. Every variant names the file and line.
#[derive(Debug, thiserror::Error)]
pub enum PresetError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The path is not a regular file (a directory, FIFO, socket or device): reading it could
    /// block forever (a FIFO without a writer) or mean nothing.
    #[error("{path} is {what}, not a sysctl.d or preset file: pass a regular file")]
    NotAFile {
        /// The path.
        path: String,
        /// What it is (`a directory`, `a FIFO`, ...).
        what: &'static str,
    },
    /// Larger than [`MAX_FILE_BYTES`].
    #[error("{path} is {} bytes, more than the {} bytes a sysctl.d or preset file may have: is it the right file?", common::numfmt::count(*.bytes), common::numfmt::count(MAX_FILE_BYTES))]
    TooLarge {
        /// The path.
        path: String,
        /// Its size.
        bytes: u64,
    },
    /// TOML syntax error, unknown field or wrong type.
    #[error("{origin}:{line}: {message} (see presets/README.md for the format)")]
    Syntax {
        /// The file.
        origin: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// An invalid sysctl key.
    #[error("{origin}:{line}: {source}")]
    Key {
        /// The file.
        origin: String,
        /// 1-based line.
        line: usize,
        /// Why the key is invalid.
        source: KeyError,
    },
    /// A value of the wrong type or shape.
    #[error("{origin}:{line}: value of {key}: {message}")]
    Value {
        /// The file.
        origin: String,
        /// 1-based line.
        line: usize,
        /// The key.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// The same key twice.
    #[error("{origin}:{line}: duplicate key {key} (first at line {first_line}); keep one")]
    Duplicate {
        /// The file.
        origin: String,
        /// Line of the second occurrence.
        line: usize,
        /// Line of the first.
        first_line: usize,
        /// The key.
        key: String,
    },
}

/// Largest sysctl.d or preset file read, in bytes (real ones are a few KiB).
pub const MAX_FILE_BYTES: u64 = 1 << 20;
