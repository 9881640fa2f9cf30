//! CPU lists in the kernel's format: `0-3,8,10-11` (see Documentation/admin-guide/cputopology.rst
//! and the "cpu lists" section of Documentation/admin-guide/kernel-parameters.rst).
//!
//! Used for sysfs files (`/sys/devices/system/cpu/online`, `isolated`, `nodeN/cpulist`,
//! `smp_affinity_list`), kernel command-line values (`isolcpus=`, `nohz_full=`) and the `--cpus`
//! options of the CLI. The `N` suffix form (`0-3:1/2` strides) is also accepted.

use std::fmt;

/// Largest CPU id accepted (the kernel's NR_CPUS is at most 8192 on x86_64).
pub const MAX_CPU: usize = 8191;

/// A cpulist that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    /// A part is not a number, a range `a-b` or a strided range `a-b:used/group`.
    #[error("invalid CPU list {list:?}: {part:?} is not a CPU number or a range like 0-3 (use e.g. `0-3,8`)")]
    Syntax {
        /// The whole list.
        list: String,
        /// The part that failed.
        part: String,
    },
    /// A range whose end is below its start.
    #[error("invalid CPU list {list:?}: range {part:?} ends before it starts (write low-high)")]
    Reversed {
        /// The whole list.
        list: String,
        /// The part that failed.
        part: String,
    },
    /// A CPU id above [`MAX_CPU`].
    #[error("invalid CPU list {list:?}: CPU {cpu} is above the largest possible id {MAX_CPU}")]
    TooLarge {
        /// The whole list.
        list: String,
        /// The offending id.
        cpu: usize,
    },
    /// The list names no CPU (only for [`parse_nonempty`]).
    #[error("empty CPU list: name at least one CPU, e.g. `0` or `0-3`")]
    Empty,
}

/// Parses a cpulist into ascending, de-duplicated CPU ids. An empty or all-blank string is the
/// empty list (as in an empty `/sys/devices/system/cpu/isolated`).
///
/// # Errors
/// [`CpuListError`] naming the offending part.
pub fn parse(list: &str) -> Result<Vec<usize>, CpuListError> {
    let trimmed = list.trim();
    let mut cpus = Vec::new();
    if trimmed.is_empty() {
        return Ok(cpus);
    }
    let syntax = |part: &str| CpuListError::Syntax {
        list: list.to_string(),
        part: part.to_string(),
    };
    for part in trimmed.split(',') {
        let part = part.trim();
        let (range, stride) = match part.split_once(':') {
            Some((r, s)) => {
                let (used, group) = s.split_once('/').ok_or_else(|| syntax(part))?;
                let used: usize = used.parse().map_err(|_| syntax(part))?;
                let group: usize = group.parse().map_err(|_| syntax(part))?;
                if group == 0 || used == 0 || used > group {
                    return Err(syntax(part));
                }
                (r, Some((used, group)))
            }
            None => (part, None),
        };
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (
                a.trim().parse::<usize>().map_err(|_| syntax(part))?,
                b.trim().parse::<usize>().map_err(|_| syntax(part))?,
            ),
            None => {
                if stride.is_some() {
                    return Err(syntax(part));
                }
                let v = range.parse::<usize>().map_err(|_| syntax(part))?;
                (v, v)
            }
        };
        if hi < lo {
            return Err(CpuListError::Reversed {
                list: list.to_string(),
                part: part.to_string(),
            });
        }
        if hi > MAX_CPU {
            return Err(CpuListError::TooLarge {
                list: list.to_string(),
                cpu: hi,
            });
        }
        for cpu in lo..=hi {
            let keep = match stride {
                Some((used, group)) => (cpu - lo) % group < used,
                None => true,
            };
            if keep {
                cpus.push(cpu);
            }
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Like [`parse`], but an empty list is an error (for `--cpus` options).
///
/// # Errors
/// [`CpuListError::Empty`] or a parse error.
pub fn parse_nonempty(list: &str) -> Result<Vec<usize>, CpuListError> {
    let cpus = parse(list)?;
    if cpus.is_empty() {
        return Err(CpuListError::Empty);
    }
    Ok(cpus)
}

/// Formats ascending CPU ids in the kernel's compact form (`0-3,8`).
pub fn format(cpus: &[usize]) -> String {
    CpuListDisplay(cpus).to_string()
}

struct CpuListDisplay<'a>(&'a [usize]);

impl fmt::Display for CpuListDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sorted = self.0.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut i = 0;
        let mut first = true;
        while i < sorted.len() {
            let start = sorted[i];
            let mut end = start;
            while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
                i += 1;
                end = sorted[i];
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_singles_and_strides() {
        assert_eq!(parse("0-3,8,10-11").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse("  \n").unwrap(), Vec::<usize>::new());
        assert_eq!(parse("3,1,1").unwrap(), vec![1, 3]);
        assert_eq!(parse("0-7:2/4").unwrap(), vec![0, 1, 4, 5]);
        assert_eq!(parse("1,3-191").unwrap().len(), 190);
    }

    #[test]
    fn rejects_garbage_reversed_and_huge() {
        assert!(matches!(parse("a"), Err(CpuListError::Syntax { .. })));
        assert!(matches!(parse("1-"), Err(CpuListError::Syntax { .. })));
        assert!(matches!(parse("3-1"), Err(CpuListError::Reversed { .. })));
        assert!(matches!(parse("99999"), Err(CpuListError::TooLarge { .. })));
        assert!(matches!(parse_nonempty(""), Err(CpuListError::Empty)));
        assert!(matches!(parse("-1"), Err(CpuListError::Syntax { .. })));
    }

    #[test]
    fn formats_compactly_and_round_trips() {
        assert_eq!(format(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format(&[]), "");
        let l = "1,3-5,7,100-101";
        assert_eq!(format(&parse(l).unwrap()), l);
    }
}
