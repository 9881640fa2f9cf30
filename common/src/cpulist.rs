//! CPU lists in the kernel's format, read and written the way the kernel does
//! (Documentation/admin-guide/kernel-parameters.rst, "cpu lists"; lib/bitmap.c
//! `bitmap_parselist`; Documentation/admin-guide/kernel-parameters.rst, "cpu lists"):
//!
//! - CPUs and ascending ranges separated by commas (or whitespace): `0,2-5,9`;
//! - strides `a-b:used/group`, the first `used` CPUs of every `group` in `a-b`:
//!   `0-7:2/4` = 0,1,4,5 (Linux 4.9);
//! - `N`, the numerically last CPU, wherever a number goes: `0-N`, `1-N:2/4`, `N` (Linux 5.13);
//! - `all` in any letter case = `0-N`, which may take a stride: `all:1/2` (Linux 5.14).
//!
//! One parser for every `--cpus` option and every sysfs list (`/sys/devices/system/cpu/online`,
//! `isolated`, `nodeN/cpulist`, `smp_affinity_list`, `isolcpus=` / `nohz_full=` values), so every
//! command says the same thing about the same list. [`parse_with_last`] is pure (the last CPU is an
//! argument); [`parse`] reads it from the host, and only when the list uses `N` or `all`.
//!
//! Differences from the kernel, both on the side of refusing: a stride with `used` 0 (the kernel
//! reads `0-7:0/2` as the empty set) is refused, since an empty selection is always a typo here;
//! and ids above [`MAX_CPU`] are refused even when the last CPU is not known.

use std::fmt;
use std::path::Path;

/// Largest CPU id accepted (the kernel's NR_CPUS is at most 8192 on x86_64).
pub const MAX_CPU: usize = 8191;

/// The file the last CPU (`N`) is read from by [`parse`], relative to the host root:
/// `sys/devices/system/cpu/possible`.
///
/// The kernel parses cpulists with `nmaskbits = nr_cpu_ids` and `N = nmaskbits - 1`
/// (lib/bitmap.c `bitmap_getnum`); `nr_cpu_ids` is one past the last *possible* CPU, and
/// `possible` is the sysfs file that shows exactly that range (Documentation/ABI/testing/
/// sysfs-devices-system-cpu). `online` would make `0-N` mean fewer CPUs than on the kernel command
/// line whenever the last CPU is offline; with `possible` the list means the same CPUs in both
/// places, and a user of an offline CPU is told so by whoever checks the CPUs (e.g. the server's
/// "offline, absent or not allowed (usable CPUs: ...)").
pub const POSSIBLE_CPUS: &str = "sys/devices/system/cpu/possible";

/// The one wording for a CPU that is offline, absent or outside this process's affinity mask
/// (sched_getaffinity(2)), with the usable CPUs as a cpulist: every command says it the same way.
pub fn unavailable_message(cpu: usize, usable: &[usize]) -> String {
    format!(
        "CPU {cpu} is offline, absent or not allowed for this process (usable CPUs: {}): pick CPUs from that list",
        format(usable)
    )
}

/// The CPUs this process may run on now, ascending: sched_getaffinity(2), which the kernel
/// answers with the affinity mask (taskset, cpuset) already masked by the active CPUs
/// (kernel/sched/core.c `sched_getaffinity`: `cpus_mask & cpu_active_mask`), so an offline CPU
/// is never in it. Empty only when the call fails. The one answer every command and test uses.
pub fn usable() -> Vec<usize> {
    let Ok(set) = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) else {
        return Vec::new();
    };
    (0..nix::sched::CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect()
}

/// `Ok` when every CPU of `cpus` is [`usable`]; else [`unavailable_message`] for the first that
/// is not.
///
/// # Errors
/// The message, for the caller to prefix with its option's name.
pub fn check_usable(cpus: &[usize]) -> Result<(), String> {
    let usable = usable();
    match cpus.iter().find(|c| !usable.contains(c)) {
        Some(&c) => Err(unavailable_message(c, &usable)),
        None => Ok(()),
    }
}

/// [`check_usable`] for the CPUs given to a command-line option: the message starts with the
/// option's name (`--cpus: CPU 5 is offline, …`), so every command (`server`, `load`, `bench`,
/// `sweep`, `ab`) says it the same way.
///
/// # Errors
/// `"{option}: "` and [`unavailable_message`] for the first CPU that is not usable.
pub fn check_option(option: &str, cpus: &[usize]) -> Result<(), String> {
    check_usable(cpus).map_err(|e| format!("{option}: {e}"))
}

/// A cpulist that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    /// A part is not a number, a range `a-b`, a strided range `a-b:used/group`, `N` or `all`.
    #[error(
        "invalid CPU list {list:?}: {part:?} is not a CPU number, a range (`0-3`), a strided range \
         (`0-7:1/2`), `N` (the last CPU) or `all`; write e.g. `0-3,8` or `1-N`"
    )]
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
    /// A stride `used/group` with `used` 0, `group` 0 or `used` above `group`.
    #[error(
        "invalid CPU list {list:?}: stride in {part:?} must have 1 <= used <= group, e.g. \
         `0-7:1/2` (every other CPU)"
    )]
    Stride {
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
        /// The offending id, as written (or as `N` resolved).
        cpu: String,
    },
    /// The list names no CPU (only for [`parse_nonempty`]).
    #[error("empty CPU list: name at least one CPU, e.g. `0`, `0-3` or `all`")]
    Empty,
    /// The list uses `N` or `all` and the last CPU could not be read from the host.
    #[error(
        "CPU list {list:?} uses `N` or `all`, but the last CPU is unknown ({reason}); write the \
         CPU numbers instead, e.g. `0-3`"
    )]
    LastCpuUnknown {
        /// The whole list.
        list: String,
        /// Why `/sys/devices/system/cpu/possible` gave no last CPU.
        reason: String,
    },
}

/// Parses a cpulist into ascending, de-duplicated CPU ids, with `N` = `last_cpu` (and `all` =
/// `0-last_cpu`). Pure: the same text and `last_cpu` give the same result on every host.
///
/// Parts are separated by commas or whitespace (empty parts are skipped, as the kernel does); an
/// empty or all-blank string is the empty list (as in an empty `/sys/devices/system/cpu/isolated`).
///
/// # Errors
/// [`CpuListError`] naming the offending part: syntax, a reversed range, a bad stride, or an id
/// above [`MAX_CPU`].
pub fn parse_with_last(list: &str, last_cpu: usize) -> Result<Vec<usize>, CpuListError> {
    let mut cpus = Vec::new();
    for part in list
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
    {
        let region = Region::parse(part, last_cpu).map_err(|kind| kind.error(list, part))?;
        let Region {
            start,
            end,
            used,
            group,
        } = region;
        let mut base = start;
        while base <= end {
            cpus.extend(base..=end.min(base.saturating_add(used - 1)));
            base = base.saturating_add(group);
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Parses a cpulist; `N` and `all` are resolved with the host's last possible CPU
/// ([`POSSIBLE_CPUS`] under `/`, see there for why `possible`), which is read only when the list
/// uses them.
///
/// # Errors
/// See [`parse_with_last`]; [`CpuListError::LastCpuUnknown`] when the list uses `N`/`all` and
/// the possible-CPU file cannot be read.
pub fn parse(list: &str) -> Result<Vec<usize>, CpuListError> {
    if !uses_last_cpu(list) {
        // The value is never used: no part names `N` or `all`.
        return parse_with_last(list, MAX_CPU);
    }
    let last =
        last_possible_cpu(Path::new("/")).map_err(|reason| CpuListError::LastCpuUnknown {
            list: list.to_string(),
            reason,
        })?;
    parse_with_last(list, last)
}

/// Like [`parse`], but an empty list is an error (for `--cpus` options).
///
/// # Errors
/// [`CpuListError::Empty`] or an error of [`parse`].
pub fn parse_nonempty(list: &str) -> Result<Vec<usize>, CpuListError> {
    let cpus = parse(list)?;
    if cpus.is_empty() {
        return Err(CpuListError::Empty);
    }
    Ok(cpus)
}

/// The last possible CPU of the host under `root` (the highest id in `root`/[`POSSIBLE_CPUS`]):
/// what the kernel calls `N` in a cpulist.
///
/// # Errors
/// A one-line reason naming the file when it cannot be read, is malformed or is empty.
pub fn last_possible_cpu(root: &Path) -> Result<usize, String> {
    let path = root.join(POSSIBLE_CPUS);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let cpus = parse_with_last(&text, MAX_CPU)
        .map_err(|e| format!("{} is malformed: {e}", path.display()))?;
    cpus.last()
        .copied()
        .ok_or_else(|| format!("{} lists no CPU", path.display()))
}

/// True when `list` has a part that needs the last CPU (`N` anywhere, or `all`).
fn uses_last_cpu(list: &str) -> bool {
    list.contains('N') || list.to_ascii_lowercase().contains("all")
}

/// One part of a list, as lib/bitmap.c's `struct region`: CPUs `start..=end`, the first `used` of
/// every `group` (a part without a stride has `used == group == end - start + 1`).
struct Region {
    start: usize,
    end: usize,
    used: usize,
    group: usize,
}

/// What was wrong with a part (turned into a [`CpuListError`] with the list and the part).
enum Bad {
    Syntax,
    Reversed,
    Stride,
    TooLarge(String),
}

impl Bad {
    fn error(self, list: &str, part: &str) -> CpuListError {
        let (list, part) = (list.to_string(), part.to_string());
        match self {
            Bad::Syntax => CpuListError::Syntax { list, part },
            Bad::Reversed => CpuListError::Reversed { list, part },
            Bad::Stride => CpuListError::Stride { list, part },
            Bad::TooLarge(cpu) => CpuListError::TooLarge { list, cpu },
        }
    }
}

impl Region {
    /// `all[:u/g]`, `a`, `a-b` or `a-b:u/g`, where a number is decimal digits or `N`.
    fn parse(part: &str, last: usize) -> Result<Region, Bad> {
        let (range, stride) = match part.split_once(':') {
            Some((r, s)) => (r, Some(s)),
            None => (part, None),
        };
        let (start, end) = if range.eq_ignore_ascii_case("all") {
            (0, last)
        } else {
            match range.split_once('-') {
                Some((a, b)) => (number(a, last)?, number(b, last)?),
                // A stride needs a range (`5:1/2` is EINVAL in the kernel too).
                None if stride.is_some() => return Err(Bad::Syntax),
                None => {
                    let v = number(range, last)?;
                    (v, v)
                }
            }
        };
        if end < start {
            return Err(Bad::Reversed);
        }
        if end > MAX_CPU {
            return Err(Bad::TooLarge(end.to_string()));
        }
        let (used, group) = match stride {
            None => (end - start + 1, end - start + 1),
            Some(s) => {
                let (u, g) = s.split_once('/').ok_or(Bad::Syntax)?;
                let (used, group) = (number(u, last)?, number(g, last)?);
                if used == 0 || group == 0 || used > group {
                    return Err(Bad::Stride);
                }
                (used, group)
            }
        };
        Ok(Region {
            start,
            end,
            used,
            group,
        })
    }
}

/// A decimal number (digits only, as the kernel's `_parse_integer`) or `N` (= `last`).
fn number(s: &str, last: usize) -> Result<usize, Bad> {
    if s == "N" {
        return Ok(last);
    }
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Bad::Syntax);
    }
    s.parse::<usize>().map_err(|_| Bad::TooLarge(s.to_string()))
}

/// Formats CPU ids in the kernel's compact form (`0-3,8`), ascending and de-duplicated whatever
/// the input order.
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

    fn p7(s: &str) -> Result<Vec<usize>, CpuListError> {
        parse_with_last(s, 7)
    }

    #[test]
    fn parses_ranges_singles_and_strides() {
        assert_eq!(p7("0-3,8,10-11").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(p7("3,1,1").unwrap(), vec![1, 3]);
        assert_eq!(p7("0-7:2/4").unwrap(), vec![0, 1, 4, 5]);
        assert_eq!(p7("1,3-191").unwrap().len(), 190);
        // The kernel-parameters.rst example: 100-2000:2/25 → 100,101,125,126,...
        let big = p7("100-2000:2/25").unwrap();
        assert_eq!(&big[..4], &[100, 101, 125, 126]);
        // 77 groups start in 100..=2000; the last one (2000) is cut to one CPU by the range end.
        assert_eq!(big.len(), 2 * 76 + 1);
        // A stride whose last group is cut by the range end.
        assert_eq!(p7("0-4:2/4").unwrap(), vec![0, 1, 4]);
    }

    #[test]
    fn n_is_the_last_cpu_wherever_a_number_goes() {
        assert_eq!(p7("N").unwrap(), vec![7]);
        assert_eq!(p7("0-N").unwrap(), (0..=7).collect::<Vec<_>>());
        assert_eq!(p7("1-N:2/4").unwrap(), vec![1, 2, 5, 6]);
        assert_eq!(p7("0-N:1/N").unwrap(), vec![0, 7]);
        assert_eq!(parse_with_last("5-N", 5).unwrap(), vec![5]);
        // `n` is not `N` (the kernel compares the byte).
        assert!(matches!(p7("0-n"), Err(CpuListError::Syntax { .. })));
        // N below the start is a reversed range, as on a host with fewer CPUs.
        assert!(matches!(
            parse_with_last("4-N", 1),
            Err(CpuListError::Reversed { .. })
        ));
    }

    #[test]
    fn all_is_zero_to_n_in_any_case_and_takes_a_stride() {
        let every: Vec<usize> = (0..=7).collect();
        assert_eq!(p7("all").unwrap(), every);
        assert_eq!(p7("ALL").unwrap(), every);
        assert_eq!(p7("All").unwrap(), every);
        assert_eq!(p7("all:1/2").unwrap(), vec![0, 2, 4, 6]);
        assert_eq!(p7("all,3").unwrap(), every);
        assert!(matches!(p7("all-3"), Err(CpuListError::Syntax { .. })));
        assert!(matches!(p7("alle"), Err(CpuListError::Syntax { .. })));
    }

    #[test]
    fn whitespace_and_empty_parts_separate_like_the_kernel() {
        assert_eq!(p7("  \n").unwrap(), Vec::<usize>::new());
        assert_eq!(p7("").unwrap(), Vec::<usize>::new());
        assert_eq!(p7(" 0-1 ,3\n").unwrap(), vec![0, 1, 3]);
        assert_eq!(p7("0 2\t4").unwrap(), vec![0, 2, 4]);
        assert_eq!(p7("0,,2,").unwrap(), vec![0, 2]);
        // Whitespace inside a range splits it (EINVAL in the kernel too).
        assert!(matches!(p7("0 - 3"), Err(CpuListError::Syntax { .. })));
    }

    #[test]
    fn rejects_garbage_reversed_bad_strides_and_huge() {
        assert!(matches!(p7("a"), Err(CpuListError::Syntax { .. })));
        assert!(matches!(p7("1-"), Err(CpuListError::Syntax { .. })));
        assert!(matches!(p7("-1"), Err(CpuListError::Syntax { .. })));
        assert!(matches!(p7("+1"), Err(CpuListError::Syntax { .. })));
        assert!(matches!(p7("5:1/2"), Err(CpuListError::Syntax { .. })));
        assert!(matches!(p7("0-7:1"), Err(CpuListError::Syntax { .. })));
        let e = p7("3-1").unwrap_err();
        assert!(matches!(e, CpuListError::Reversed { .. }), "{e}");
        assert!(e.to_string().contains("\"3-1\""), "{e}");
        for s in ["0-N:0/2", "0-7:3/2", "0-7:1/0"] {
            let e = p7(s).unwrap_err();
            assert!(matches!(e, CpuListError::Stride { .. }), "{s}: {e}");
            assert!(e.to_string().contains("1 <= used <= group"), "{e}");
        }
        assert!(matches!(p7("99999"), Err(CpuListError::TooLarge { .. })));
        let e = p7("0-99999999999999999999999").unwrap_err();
        assert!(e.to_string().contains("99999999999999999999999"), "{e}");
        assert!(matches!(parse_nonempty(""), Err(CpuListError::Empty)));
        assert!(matches!(parse_nonempty(" , "), Err(CpuListError::Empty)));
        let e = p7("x").unwrap_err().to_string();
        assert!(e.contains("`N`") && e.contains("`all`"), "{e}");
    }

    #[test]
    fn the_host_resolves_n_from_possible_cpus() {
        let last = last_possible_cpu(Path::new("/")).unwrap();
        assert_eq!(parse("0-N").unwrap(), (0..=last).collect::<Vec<_>>());
        assert_eq!(parse("all").unwrap(), parse("0-N").unwrap());
        assert_eq!(parse_nonempty("N").unwrap(), vec![last]);
    }

    #[test]
    fn last_possible_cpu_reads_a_fixture_root_and_names_the_file() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("sys/devices/system/cpu");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("possible"), "0-3,6\n").unwrap();
        assert_eq!(last_possible_cpu(root.path()), Ok(6));
        std::fs::write(dir.join("possible"), "\n").unwrap();
        assert!(last_possible_cpu(root.path())
            .unwrap_err()
            .contains("lists no CPU"));
        std::fs::remove_file(dir.join("possible")).unwrap();
        let e = last_possible_cpu(root.path()).unwrap_err();
        assert!(e.contains("sys/devices/system/cpu/possible"), "{e}");
    }

    /// Every string of up to four tokens parses or fails cleanly: no panic, no overflow, ids
    /// ascending, unique and at most [`MAX_CPU`].
    #[test]
    fn token_soup_never_panics() {
        let tokens = [
            "0",
            "1",
            "7",
            "N",
            "all",
            "-",
            ":",
            "/",
            ",",
            " ",
            "8191",
            "18446744073709551615",
        ];
        let mut text = String::new();
        let n = tokens.len();
        for code in 0..n.pow(4) {
            text.clear();
            let mut c = code;
            for _ in 0..4 {
                text.push_str(tokens[c % n]);
                c /= n;
            }
            for last in [0, 7, MAX_CPU] {
                if let Ok(cpus) = parse_with_last(&text, last) {
                    assert!(cpus.windows(2).all(|w| w[0] < w[1]), "{text:?}");
                    assert!(cpus.iter().all(|&c| c <= MAX_CPU), "{text:?}");
                }
            }
        }
        // Strides at the edge of usize.
        let huge = "1-5:18446744073709551615/18446744073709551615";
        assert_eq!(p7(huge).unwrap(), vec![1, 2, 3, 4, 5]);
    }

    #[test]
    fn formats_compactly_and_round_trips() {
        assert_eq!(format(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format(&[]), "");
        assert_eq!(format(&[3, 1, 2, 2]), "1-3");
        let l = "1,3-5,7,100-101";
        assert_eq!(format(&p7(l).unwrap()), l);
    }
}
