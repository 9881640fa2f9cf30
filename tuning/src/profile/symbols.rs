//! Addresses → function names with blazesym: kernel addresses from a `kallsyms` file, user
//! addresses of our own process from the ELF symbols of its mappings; other processes' user code
//! is named by its command (`nginx [other process]`), which costs one small file read per
//! process.

use std::collections::HashMap;
use std::path::Path;

use blazesym::symbolize::source::{Kernel, Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use blazesym::{MaybeDefault, Pid};

/// Names of `addrs` (kernel addresses) from the kallsyms file at `kallsyms`; an address no
/// symbol covers is absent from the map.
///
/// # Errors
/// When blazesym cannot read or parse the file: the message, for the profile's notes.
pub(crate) fn kernel_names(kallsyms: &Path, addrs: &[u64]) -> Result<HashMap<u64, String>, String> {
    let src = Source::Kernel(Kernel {
        kallsyms: MaybeDefault::Some(kallsyms.to_path_buf()),
        // kallsyms is all the report needs (function names); a vmlinux search reads hundreds of
        // MB of DWARF.
        vmlinux: MaybeDefault::None,
        debug_syms: false,
        ..Kernel::default()
    });
    names(&src, addrs).map_err(|e| format!("kernel symbols from {}: {e}", kallsyms.display()))
}

/// Names of `addrs` (user addresses of this process) from the ELF symbols of its mappings.
///
/// # Errors
/// When blazesym cannot read `/proc/self/maps` or an ELF file: the message.
pub(crate) fn own_user_names(addrs: &[u64]) -> Result<HashMap<u64, String>, String> {
    let mut p = Process::new(Pid::Slf);
    p.debug_syms = false;
    p.perf_map = false;
    // Symbolic paths from /proc/self/maps: map_files needs CAP_SYS_ADMIN.
    p.map_files = false;
    names(&Source::Process(p), addrs).map_err(|e| format!("user symbols of this process: {e}"))
}

fn names(src: &Source<'_>, addrs: &[u64]) -> Result<HashMap<u64, String>, blazesym::Error> {
    let symbolizer = Symbolizer::builder()
        .enable_code_info(false)
        .enable_inlined_fns(false)
        .build();
    let mut out = HashMap::with_capacity(addrs.len());
    if addrs.is_empty() {
        return Ok(out);
    }
    let syms = symbolizer.symbolize(src, Input::AbsAddr(addrs))?;
    for (addr, sym) in addrs.iter().zip(syms) {
        if let Symbolized::Sym(s) = sym {
            out.insert(*addr, s.name.into_owned());
        }
    }
    Ok(out)
}

/// `COMM [other process]` for another process's user code, from `proc/PID/comm`
/// (`pid N [other process]` once the process is gone).
pub(crate) fn foreign_user_name(proc: &Path, pid: u32) -> String {
    match std::fs::read_to_string(proc.join(pid.to_string()).join("comm")) {
        Ok(c) if !c.trim().is_empty() => format!("{} {OTHER_PROCESS}", c.trim()),
        _ => format!("pid {pid} {OTHER_PROCESS}"),
    }
}

/// Suffix of the one frame that stands for another process's user code.
pub(crate) const OTHER_PROCESS: &str = "[other process]";
