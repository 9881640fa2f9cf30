//! Writing an output file so that a reader never sees half of it, and never over a file the
//! same command reads (an input record named as the output).

use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// Reads a file a user named as input, bounded: it must be a regular file (checked with
/// stat(2) before it is opened, so a FIFO never blocks the open) of at most `max` bytes, and it
/// may not grow past `max` while being read. `/dev/zero` would otherwise fill memory until the
/// process is killed, and a FIFO without a writer would hang the command.
///
/// # Errors
/// `InvalidInput` "not a regular file (a FIFO, device or directory): give a file";
/// `InvalidData` "N bytes, more than the M bytes such a file can be" (also when it grew while
/// read); the errno of stat(2), open(2) or read(2).
pub fn read_regular(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    let too_big = |n: u64| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} bytes, more than the {} bytes such a file can be",
                crate::numfmt::count(n),
                crate::numfmt::count(max)
            ),
        )
    };
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, device or directory): give a file",
        ));
    }
    if meta.len() > max {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(path)?
        .take(max + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Largest certificate, key or CA file read (`--cert`, `--key`, `--ca`), bytes: 1 MiB, far more
/// than any PEM chain or bundle (a full public CA bundle is ~220 KiB).
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// Writes `bytes` to `path` through a temporary file `.NAME.tmp` in the same directory and a
/// rename(2) (atomic within one file system), so a failed write (ENOSPC) leaves neither a
/// truncated file nor the temporary one. The caller decides what to do with a `path` that is not
/// a regular file: the rename would replace a device or a symlink.
///
/// # Errors
/// `InvalidInput` when `path` has no file name; the errno of the write or the rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_path(path).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: give a file name", path.display()),
        )
    })?;
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// The temporary file [`write_atomic`] writes before its rename: `.NAME.tmp` beside `path`;
/// `None` when `path` has no file name (`/`, `..`).
pub fn temp_path(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    Some(path.with_file_name(format!(".{}.tmp", name.to_string_lossy())))
}

/// Which file a path names: its device and inode (stat(2), following symlinks), the same for
/// every spelling of one file (`x`, `./x`, `../d/x`, a symlink to it, a hard link); `None` when
/// nothing is there.
fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Where a write to `path` would land, for comparing two outputs that may not exist yet: the
/// file's [`identity`] when it exists, else the canonical directory joined with the file name
/// (the path as given when the directory does not exist either).
fn destination(path: &Path) -> Result<(u64, u64), PathBuf> {
    if let Some(id) = identity(path) {
        return Ok(id);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(dir), path.file_name()) {
        (Ok(d), Some(name)) => Err(d.join(name)),
        _ => Err(path.to_path_buf()),
    }
}

/// Whether writing `a` and writing `b` land in the same file (see `destination`).
pub fn same_destination(a: &Path, b: &Path) -> bool {
    destination(a) == destination(b)
}

/// Refuses an output that is one of the command's input files: `output` (and the temporary
/// file [`write_atomic`] writes beside it) compared by device and inode with each of `inputs`,
/// so `in.json`, `./in.json`, a symlink or a hard link to it are all caught. Writing there
/// would replace what the command read (a run record lost, exit 0). `option` names the option
/// (`-o`, `--hlog`); each input comes with what it is (`input record`, `--key`). An output that
/// does not exist yet is no input; `-` (stdout) is never refused.
///
/// Call it before anything is written.
///
/// # Errors
/// Bad input naming the option, the output and the input it would replace.
pub fn refuse_overwriting_inputs(
    option: &str,
    output: &Path,
    inputs: &[(&str, &Path)],
) -> Result<(), crate::error::BadInput> {
    if output == Path::new("-") {
        return Ok(());
    }
    let targets = [Some(output.to_path_buf()), temp_path(output)];
    for target in targets.iter().flatten() {
        let Some(id) = identity(target) else { continue };
        if let Some((what, input)) = inputs.iter().find(|(_, p)| identity(p) == Some(id)) {
            let same = if target == output {
                String::new()
            } else {
                format!(" (through its temporary file {})", target.display())
            };
            return Err(crate::error::BadInput(format!(
                "{option} {} is the {what} {}{same}: writing it would replace what this command reads; give another output path (nothing was written)",
                output.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

/// Refuses a directory option whose path exists and is not a directory, or lies under a file
/// (`--hlog in.json`, `--hlog in.json/logs`): creating it would fail with EEXIST or ENOTDIR,
/// which reads as an I/O failure, not as the wrong path it is. A missing directory is fine (the
/// command creates it).
///
/// # Errors
/// Bad input naming the option, the path and the file in the way.
pub fn refuse_non_dir(option: &str, dir: &Path) -> Result<(), crate::error::BadInput> {
    for ancestor in dir.ancestors().filter(|a| !a.as_os_str().is_empty()) {
        match std::fs::metadata(ancestor) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) if ancestor == dir => {
                return Err(crate::error::BadInput(format!(
                    "{option} {} is not a directory: give a directory (created if missing)",
                    dir.display()
                )))
            }
            Ok(_) => {
                return Err(crate::error::BadInput(format!(
                    "{option} {}: {} is not a directory: give a directory (created if missing)",
                    dir.display(),
                    ancestor.display()
                )))
            }
            Err(_) => {}
        }
    }
    Ok(())
}

/// Refuses an output path that exists and is not a regular file: the rename that makes
/// [`write_atomic`] atomic would replace a device (`/dev/full`), a symlink or a directory.
/// `option` names the option in the message (e.g. `-o`).
///
/// # Errors
/// Bad input naming the option and the path.
pub fn refuse_non_file(option: &str, path: &Path) -> Result<(), crate::error::BadInput> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => Err(crate::error::BadInput(format!(
            "{option} {}: exists and is not a regular file (a device, symlink or directory would be replaced): give a file path, or - for stdout",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Refuses, before any work, an output file path the command could not write at its end (seen:
/// `report`, `compare` and `plot -o DIR` read and rendered everything, then exited 1 with "Is a
/// directory"; `scale --plot` ran every step, then drew nothing): a directory (or a path ending
/// in `/`), a path whose directory is missing or is a file, or a directory where no file can be
/// made. Writable is tried, not asked: `access(2)` says yes to root in `/proc`, so a probe file
/// is made beside the output and removed at once; nothing else is created. `-` (stdout) passes,
/// and so does an existing device, FIFO or symlink to one (written in place by the caller, or
/// refused by [`refuse_non_file`]). `option` names the option in the message (`-o`, `--plot`).
///
/// # Errors
/// Bad input naming the option, the path and what to give instead.
pub fn check_output_file(option: &str, path: &Path) -> Result<(), crate::error::BadInput> {
    use std::os::unix::ffi::OsStrExt as _;
    if path == Path::new("-") {
        return Ok(());
    }
    let bad = |what: String| crate::error::BadInput(format!("{option} {}: {what}", path.display()));
    let names_dir = path.as_os_str().as_bytes().ends_with(b"/") || path.file_name().is_none();
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(bad(
                "is a directory: name a file to write (nothing was run)".into(),
            ))
        }
        Ok(m) if !m.is_file() => return Ok(()),
        _ if names_dir => {
            return Err(bad(
                "names a directory: name a file to write (nothing was run)".into(),
            ))
        }
        _ => {}
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(bad(format!(
                "{} is not a directory: give a path in a directory (nothing was run)",
                dir.display()
            )))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(bad(format!(
                "directory {} does not exist: create it, or give a path in an existing directory (nothing was run)",
                dir.display()
            )))
        }
        Err(e) => {
            return Err(bad(format!(
                "cannot reach directory {} ({e}): give a path in a directory you can write (nothing was run)",
                dir.display()
            )))
        }
    }
    probe_writable(dir, false).map_err(|e| {
        bad(format!(
            "cannot write in {} ({e}): give a path in a directory you can write (nothing was run)",
            dir.display()
        ))
    })
}

/// Refuses an output directory that cannot take the command's files (`what`: "run records",
/// "interval logs"), before any work: it exists but is not a directory, lies under a file, or
/// neither it nor (where it is missing) its nearest existing ancestor can take a new entry.
/// Writable is tried, not asked, as in [`check_output_file`]: a probe file in the directory (or,
/// where it does not exist yet, a probe directory in its nearest ancestor, as `create_dir_all`
/// would make) is made and removed at once.
///
/// # Errors
/// Bad input naming the option, the path and what to give instead.
pub fn check_output_dir(
    option: &str,
    dir: &Path,
    what: &str,
) -> Result<(), crate::error::BadInput> {
    let mut p = dir;
    loop {
        if p.as_os_str().is_empty() {
            p = Path::new(".");
        }
        if p.exists() {
            if !p.is_dir() {
                return Err(crate::error::BadInput(format!(
                    "{option} {}: {} is not a directory: give a directory for {what}",
                    dir.display(),
                    p.display()
                )));
            }
            return probe_writable(p, p != dir).map_err(|e| {
                crate::error::BadInput(format!(
                    "{option} {}: cannot write in {} ({e}): give a writable directory",
                    dir.display(),
                    p.display()
                ))
            });
        }
        match p.parent() {
            Some(parent) => p = parent,
            None => return Ok(()),
        }
    }
}

/// Makes a probe entry `.connstorm-probe-PID-N` in `dir` (a file, or a directory when
/// `as_dir`) and removes it: whether the command will be able to write there, tried.
fn probe_writable(dir: &Path, as_dir: bool) -> io::Result<()> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let mut last = None;
    for _ in 0..16 {
        let name = format!(
            ".connstorm-probe-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let probe = dir.join(name);
        let made = if as_dir {
            std::fs::create_dir(&probe).and_then(|()| std::fs::remove_dir(&probe))
        } else {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&probe)
                .and_then(|f| {
                    drop(f);
                    std::fs::remove_file(&probe)
                })
        };
        match made {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            r => return r,
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)))
}

#[cfg(test)]
mod tests {
    /// Files people bring: a FIFO is refused without blocking, a device without reading it,
    /// a file over the bound by its size; a regular file within it is read whole.
    #[test]
    fn read_regular_refuses_fifos_devices_and_oversized_files() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = read_regular(&fifo, 10).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = read_regular(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = read_regular(dir.path(), 10).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let big = dir.path().join("big");
        std::fs::write(&big, [b'x'; 11]).unwrap();
        let e = read_regular(&big, 10).unwrap_err();
        assert_eq!(
            e.to_string(),
            "11 bytes, more than the 10 bytes such a file can be"
        );
        assert_eq!(read_regular(&big, 11).unwrap(), vec![b'x'; 11]);
        assert_eq!(
            read_regular(&dir.path().join("none"), 10)
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotFound
        );
    }

    use super::*;

    #[test]
    fn writes_through_a_rename_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let err = write_atomic(Path::new("/"), b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    /// `report in.json -o in.json` (and `./in.json`, a symlink, the temporary file) replaced
    /// the input record and exited 0.
    #[test]
    fn lost_data_an_output_that_is_an_input_is_refused_in_every_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.json");
        std::fs::write(&input, b"record").unwrap();
        let other = dir.path().join("other.json");
        std::fs::write(&other, b"other").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        let hard = dir.path().join("hard.json");
        std::fs::hard_link(&input, &hard).unwrap();
        let dotted = dir.path().join(".").join("sub/../in.json");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let inputs = [
            ("input record", other.as_path()),
            ("input record", input.as_path()),
        ];
        for out in [&input, &link, &hard, &dotted] {
            let err = refuse_overwriting_inputs("-o", out, &inputs).unwrap_err();
            assert_eq!(
                err.0,
                format!(
                    "-o {} is the input record {}: writing it would replace what this command reads; give another output path (nothing was written)",
                    out.display(),
                    input.display()
                )
            );
        }
        // Through the symlink given as the input, too.
        let via_link = [("input record", link.as_path())];
        assert!(refuse_overwriting_inputs("-o", &input, &via_link).is_err());
        // The temporary file write_atomic renames from.
        let tmp_input = dir.path().join(".out.json.tmp");
        std::fs::write(&tmp_input, b"x").unwrap();
        let err = refuse_overwriting_inputs(
            "-o",
            &dir.path().join("out.json"),
            &[("input record", tmp_input.as_path())],
        )
        .unwrap_err();
        assert!(err.0.contains("through its temporary file"), "{err}");
        // A new file, another file and stdout are fine; nothing was touched.
        assert_eq!(
            refuse_overwriting_inputs("-o", &dir.path().join("new.json"), &inputs),
            Ok(())
        );
        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::write(&elsewhere, b"old output").unwrap();
        assert_eq!(refuse_overwriting_inputs("-o", &elsewhere, &inputs), Ok(()));
        assert_eq!(
            refuse_overwriting_inputs("-o", Path::new("-"), &inputs),
            Ok(())
        );
        assert_eq!(std::fs::read(&input).unwrap(), b"record");
    }

    #[test]
    fn same_destination_compares_outputs_that_do_not_exist_yet() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("x.hlog");
        let b = dir.path().join("sub/../x.hlog");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        assert!(same_destination(&a, &b));
        assert!(!same_destination(&a, &dir.path().join("y.hlog")));
        std::fs::write(&a, b"").unwrap();
        assert!(same_destination(&a, &b));
    }

    /// `report R.json --hlog in.json` said "File exists (os error 17); check free space and
    /// permissions" (exit 1) for a path that is a file.
    #[test]
    fn a_directory_option_naming_a_file_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("in.json");
        std::fs::write(&file, b"x").unwrap();
        let err = refuse_non_dir("--hlog", &file).unwrap_err();
        assert_eq!(
            err.0,
            format!(
                "--hlog {} is not a directory: give a directory (created if missing)",
                file.display()
            )
        );
        let under = file.join("logs");
        let err = refuse_non_dir("--hlog", &under).unwrap_err();
        assert!(
            err.0
                .contains(&format!("{} is not a directory", file.display())),
            "{err}"
        );
        assert_eq!(refuse_non_dir("--hlog", dir.path()), Ok(()));
        assert_eq!(
            refuse_non_dir("--hlog", &dir.path().join("new/logs")),
            Ok(())
        );
        assert_eq!(refuse_non_dir("--hlog", Path::new("relative-new")), Ok(()));
    }

    /// `report`, `compare` and `plot -o DIR` read and rendered everything, then exited 1 ("Is a
    /// directory"); a missing or unwritable directory the same. Refused up front now, and the
    /// probes leave nothing behind.
    #[test]
    fn an_output_file_path_that_cannot_be_written_is_refused_before_any_work() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let file = d.join("in.json");
        std::fs::write(&file, b"x").unwrap();
        let refused = |p: &Path| check_output_file("-o", p).unwrap_err().0;
        assert_eq!(
            refused(d),
            format!(
                "-o {}: is a directory: name a file to write (nothing was run)",
                d.display()
            )
        );
        let slash = PathBuf::from(format!("{}/new/", d.display()));
        assert_eq!(
            refused(&slash),
            format!(
                "-o {}: names a directory: name a file to write (nothing was run)",
                slash.display()
            )
        );
        let missing = d.join("no/such/out.txt");
        assert_eq!(
            refused(&missing),
            format!(
                "-o {}: directory {} does not exist: create it, or give a path in an existing directory (nothing was run)",
                missing.display(),
                d.join("no/such").display()
            )
        );
        let under_file = file.join("out.txt");
        assert_eq!(
            refused(&under_file),
            format!(
                "-o {}: {} is not a directory: give a path in a directory (nothing was run)",
                under_file.display(),
                file.display()
            )
        );
        // access(2) says yes to root in /proc; the probe file is refused there.
        let proc = Path::new("/proc/connstorm-out.txt");
        assert!(
            refused(proc).starts_with("-o /proc/connstorm-out.txt: cannot write in /proc ("),
            "{}",
            refused(proc)
        );
        // A new file, an existing one, stdout and a device pass; the probes left nothing.
        check_output_file("-o", &d.join("new.txt")).unwrap();
        check_output_file("-o", &file).unwrap();
        check_output_file("-o", Path::new("-")).unwrap();
        check_output_file("-o", Path::new("/dev/null")).unwrap();
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 1);
    }

    /// The directory outputs (`--hlog`, `k8s render --out`, `man --out`) by the same probe as
    /// the run records' `--out`.
    #[test]
    fn an_output_directory_that_cannot_be_written_is_refused_before_any_work() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("in.json");
        std::fs::write(&file, b"x").unwrap();
        let e = check_output_dir("--hlog", &file.join("logs"), "interval logs").unwrap_err();
        assert_eq!(
            e.0,
            format!(
                "--hlog {}: {} is not a directory: give a directory for interval logs",
                file.join("logs").display(),
                file.display()
            )
        );
        let e = check_output_dir("--hlog", Path::new("/proc/x/y"), "interval logs").unwrap_err();
        assert!(
            e.0.starts_with("--hlog /proc/x/y: cannot write in /proc ("),
            "{e}"
        );
        check_output_dir("--hlog", dir.path(), "interval logs").unwrap();
        check_output_dir("--hlog", &dir.path().join("a/b"), "interval logs").unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_device_or_directory_is_not_an_output_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = refuse_non_file("-o", Path::new("/dev/full")).unwrap_err();
        assert!(
            err.0
                .starts_with("-o /dev/full: exists and is not a regular file"),
            "{err}"
        );
        assert!(refuse_non_file("-o", dir.path()).is_err());
        let file = dir.path().join("out.json");
        assert_eq!(refuse_non_file("-o", &file), Ok(()), "absent");
        std::fs::write(&file, b"x").unwrap();
        assert_eq!(refuse_non_file("-o", &file), Ok(()), "a regular file");
    }
}
