//! May this process take a kernel profile? Read from a procfs root, so fixture trees test it.
//!
//! Rules (Linux source):
//! - `include/linux/perf_event.h` `perf_allow_cpu()`: a CPU-wide event (pid = -1, cpu = N) needs
//!   `kernel.perf_event_paranoid <= 0` unless the process is `perfmon_capable()` (CAP_PERFMON,
//!   Linux 5.8, or CAP_SYS_ADMIN). Kernel samples need `<= 1` under the same exception
//!   (`perf_allow_kernel()`), which `<= 0` implies. Debian/Ubuntu's value 3+ forbids all events
//!   without the capabilities, which the same test covers.
//! - `kernel/ksyms_common.c` `kallsyms_show_value()`: `/proc/kallsyms` shows real addresses when
//!   `kptr_restrict` is 0 and `perf_event_paranoid <= 1`, or when `kptr_restrict <= 1` and the
//!   reader has CAP_SYSLOG; otherwise every address reads 0. The first line of the file is read
//!   too, which is the final word (an LSM or a kernel without CONFIG_KALLSYMS_ALL).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::ProfileError;

/// capability.h bit numbers.
const CAP_SYS_ADMIN: u32 = 21;
const CAP_SYSLOG: u32 = 34;
const CAP_PERFMON: u32 = 38;

/// What the check found (for the record and the report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// `kernel.perf_event_paranoid`.
    pub paranoid: i64,
    /// `kernel.kptr_restrict` (`None`: the file is missing).
    pub kptr_restrict: Option<i64>,
    /// CAP_PERFMON or CAP_SYS_ADMIN in the effective set.
    pub perfmon_capable: bool,
    /// CAP_SYSLOG in the effective set.
    pub syslog_capable: bool,
}

/// Checks that this process may sample every task on a CPU with kernel callchains and read
/// kernel symbol addresses, from the procfs mounted at `proc` (`/proc` on a real host; the
/// capabilities come from `proc/self/status`).
///
/// # Errors
/// [`ProfileError::NoPerfEvents`] (no `sys/kernel/perf_event_paranoid`),
/// [`ProfileError::Paranoid`], [`ProfileError::KallsymsHidden`] (settings or a zero address in
/// `kallsyms`), [`ProfileError::Proc`] (unreadable or unparsable files). Each says what to change.
pub fn check_access(proc: &Path) -> Result<Access, ProfileError> {
    let paranoid_path = proc.join("sys/kernel/perf_event_paranoid");
    let paranoid = match std::fs::read_to_string(&paranoid_path) {
        Ok(t) => parse_int(&paranoid_path, &t)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ProfileError::NoPerfEvents {
                path: paranoid_path,
            })
        }
        Err(e) => return Err(proc_err(&paranoid_path, e.to_string())),
    };
    let kptr_path = proc.join("sys/kernel/kptr_restrict");
    let kptr_restrict = match std::fs::read_to_string(&kptr_path) {
        Ok(t) => Some(parse_int(&kptr_path, &t)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(proc_err(&kptr_path, e.to_string())),
    };
    let caps = effective_caps(&proc.join("self/status"))?;
    let has = |bit: u32| caps & (1u64 << bit) != 0;
    let access = Access {
        paranoid,
        kptr_restrict,
        perfmon_capable: has(CAP_PERFMON) || has(CAP_SYS_ADMIN),
        syslog_capable: has(CAP_SYSLOG),
    };
    if access.paranoid > 0 && !access.perfmon_capable {
        return Err(ProfileError::Paranoid { paranoid });
    }
    let kallsyms = proc.join("kallsyms");
    let hidden = || ProfileError::KallsymsHidden {
        path: kallsyms.clone(),
        kptr_restrict: kptr_restrict.unwrap_or(-1),
        paranoid,
    };
    let shown = match kptr_restrict.unwrap_or(0) {
        0 => paranoid <= 1 || access.syslog_capable,
        1 => access.syslog_capable,
        _ => false,
    };
    if !shown {
        return Err(hidden());
    }
    if first_kallsyms_address(&kallsyms)? == 0 {
        return Err(hidden());
    }
    Ok(access)
}

fn proc_err(path: &Path, detail: String) -> ProfileError {
    ProfileError::Proc {
        path: path.to_path_buf(),
        detail,
    }
}

fn parse_int(path: &Path, text: &str) -> Result<i64, ProfileError> {
    text.trim()
        .parse()
        .map_err(|_| proc_err(path, format!("not an integer: {:?}", text.trim())))
}

/// The `CapEff:` mask of a `/proc/PID/status` file (proc(5), hexadecimal).
fn effective_caps(path: &Path) -> Result<u64, ProfileError> {
    let text = std::fs::read_to_string(path).map_err(|e| proc_err(path, e.to_string()))?;
    let hex = text
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .ok_or_else(|| proc_err(path, "no CapEff line".into()))?;
    u64::from_str_radix(hex.trim(), 16)
        .map_err(|_| proc_err(path, format!("CapEff is not hexadecimal: {:?}", hex.trim())))
}

/// The address on the first line of a kallsyms file (`ffffffff81000000 T _stext`).
fn first_kallsyms_address(path: &PathBuf) -> Result<u64, ProfileError> {
    let file = std::fs::File::open(path).map_err(|e| {
        let detail = if e.kind() == std::io::ErrorKind::NotFound {
            "missing: the kernel was built without CONFIG_KALLSYMS, so kernel frames cannot be \
             named"
                .to_string()
        } else {
            e.to_string()
        };
        proc_err(path, detail)
    })?;
    let mut line = String::new();
    BufReader::new(file)
        .read_line(&mut line)
        .map_err(|e| proc_err(path, e.to_string()))?;
    let addr = line.split_whitespace().next().unwrap_or("");
    u64::from_str_radix(addr, 16).map_err(|_| {
        proc_err(
            path,
            format!("first line is not `ADDRESS TYPE NAME`: {line:?}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capeff_bits_are_read_in_hex() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("status");
        std::fs::write(&p, "Name:\tx\nCapEff:\t000001ffffffffff\n").unwrap();
        assert_eq!(effective_caps(&p).unwrap(), 0x1ff_ffff_ffff);
        std::fs::write(&p, "Name:\tx\n").unwrap();
        assert!(effective_caps(&p).is_err());
    }
}
