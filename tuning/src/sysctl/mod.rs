//! Sysctls: the keys and what connstorm knows about them, and the files that set them.
//!
//! Files: `key` ([`Key`]: validation, per-namespace vs global [`Scope`], reading and writing
//! under `<root>/proc/sys`), `rules` (the one table of what connstorm knows about individual
//! keys, each rule with its source), `entry` (one setting of a file, [`Entry`], and why a file
//! is refused, [`PresetError`]), `preset` ([`Preset`]: connstorm's TOML presets and plain
//! sysctl.conf files), `sysctld` (sysctl.d files as systemd-sysctl reads them), `builtin` (the
//! presets shipped in the binary) and `import` (shell scripts that tune a host by hand, read as
//! sysctl settings).
//!
//! Reading only: nothing here writes a key but [`crate::plan`] and the A/B toggles, through
//! `key`'s one write.

mod builtin;
mod entry;
mod import;
mod key;
mod preset;
pub(crate) mod rules;
mod sysctld;

pub use builtin::{builtin_preset, builtin_presets, named_preset, BUILTIN_PRESETS};
pub use entry::{Entry, Op, PresetError, MAX_FILE_BYTES};
pub use import::{import_script, imported_sysctl_d, ImportLine, ImportOutcome};
pub use key::{normalize, Key, KeyError, Scope, SysctlError, MAX_KEY_LEN};
pub(crate) use key::{read, writable, write};
pub use preset::{read_text, CmdlineParam, Preset};
pub use sysctld::{
    fnmatch, parse_line, resolve_sysctl_d, system_files, Fate, Line, LineNote, Origin, Pattern,
    Resolved, SourceFile, SystemFile, MAX_OVERRIDES, SYSCTL_D_DIRS,
};
