//! Sysctls: the keys and what connstorm knows about them, and the files that set them.
//!
//! Files: `key` ([`Key`]: validation, per-namespace vs global [`Scope`], reading and writing
//! under `<root>/proc/sys`), `io` ([`SysctlIo`]: the seam every read and write of the planner
//! and the checks goes through, where tests inject failures; [`ProcSys`]: the real
//! `/proc/sys`), `rules` (the one table of what connstorm knows about individual keys, each
//! rule with its source), `entry` (one setting of a file, [`Entry`], and why a file is
//! refused, [`PresetError`]), `preset` ([`Preset`]: connstorm's TOML presets and plain
//! sysctl.conf files), `sysctld` (sysctl.d files as systemd-sysctl reads them) with `pattern`
//! (their key globs, [`Pattern`]), `builtin` (the presets shipped in the binary) and `import`
//! (shell scripts that tune a host by hand, read as sysctl settings).
//!
//! Nothing here decides to write a key: the planner (`tuning::plan`) does, through
//! [`SysctlIo`] or `key`'s one write.

mod builtin;
mod entry;
mod import;
mod io;
mod key;
mod pattern;
mod preset;
pub(crate) mod rules;
mod sysctld;

pub use builtin::{builtin_preset, builtin_presets, named_preset, BUILTIN_PRESETS};
pub use entry::{Entry, Op, PresetError, MAX_FILE_BYTES};
pub use import::{import_script, imported_sysctl_d, ImportLine, ImportOutcome};
pub use io::{ProcSys, SysctlIo};
pub use key::{normalize, Key, KeyError, Scope, SysctlError, WriteFailure, MAX_KEY_LEN};
pub(crate) use key::{read, writable, write};
pub use pattern::{fnmatch, Pattern};
pub use preset::{read_text, CmdlineParam, Preset};
pub use sysctld::{
    parse_line, resolve_sysctl_d, system_files, Fate, Line, LineNote, Origin, Resolved, SourceFile,
    SystemFile, MAX_OVERRIDES, SYSCTL_D_DIRS,
};
