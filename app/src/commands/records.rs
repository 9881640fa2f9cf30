//! What the record commands (`report`, `compare`, `plot`, `merge`) share: reading records as
//! bad input, refusing an output that would replace an input, and writing their output.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use results::record::RunRecord;

use crate::bad_input;

/// Reads a record; a missing or bad file is bad input (exit code 2), and so is a record whose
/// TLS counts contradict each other ([`results::record::PhaseRecord::tls_counts_contradiction`],
/// as `merge` refuses it): a report would print them as measured (`100 handshakes: 5 full, 0
/// resumed`).
pub fn read_record(path: &Path) -> anyhow::Result<RunRecord> {
    let rec = RunRecord::read(path).map_err(|e| bad_input(e.to_string()))?;
    for p in &rec.phases {
        if let Some(what) = p.tls_counts_contradiction() {
            return Err(bad_input(format!(
                "{}: phase {:?}: the TLS counts contradict each other: {what}; connstorm writes them consistent: re-run the benchmark or fix the record",
                path.display(),
                p.name
            )));
        }
    }
    Ok(rec)
}

/// Refuses an output path that is one of the command's input records (by device and inode, so
/// every spelling and symlink of it): writing it would replace the record
/// ([`common::files::refuse_overwriting_inputs`]). Bad input (exit 2), before anything is
/// written.
pub fn refuse_input_as_output(
    option: &str,
    output: &Path,
    records: &[PathBuf],
) -> anyhow::Result<()> {
    let inputs: Vec<(&str, &Path)> = records
        .iter()
        .map(|p| ("input record", p.as_path()))
        .collect();
    common::files::refuse_overwriting_inputs(option, output, &inputs).map_err(anyhow::Error::new)
}

/// Checks the `.hlog` files `report --hlog DIR` will write for each record (`<record
/// stem>.<phase>.hlog`, [`results::render::hlog_paths`]) before anything is written: no file is an
/// input record or the `-o` output, and no two records write the same file (two `run.json`
/// from different directories).
///
/// # Errors
/// Bad input (exit 2) naming the paths.
pub fn check_hlogs(
    dir: &Path,
    records: &[(PathBuf, RunRecord)],
    output: &Path,
) -> anyhow::Result<()> {
    let inputs: Vec<PathBuf> = records.iter().map(|(p, _)| p.clone()).collect();
    let mut by: Vec<(usize, &Path, PathBuf)> = Vec::new();
    for (i, (path, rec)) in records.iter().enumerate() {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("run");
        for f in results::render::hlog_paths(rec, stem, dir) {
            refuse_input_as_output("--hlog", &f, &inputs)?;
            if output != Path::new("-") && common::files::same_destination(&f, output) {
                return Err(bad_input(format!(
                    "--hlog {} would write {}, the -o output: give -o another path",
                    dir.display(),
                    f.display()
                )));
            }
            if let Some((j, other, _)) = by
                .iter()
                .find(|(_, _, g)| common::files::same_destination(&f, g))
            {
                // Files people bring: the advice differs by cause (seen: one hand-edited
                // record with two phases named `peak` was told to copy "one of them").
                let why = if *j == i {
                    format!(
                        "two phases of {} would both write {} (phases named alike: the record was edited): give each phase its own name in the file, or re-run the benchmark",
                        path.display(),
                        f.display()
                    )
                } else if common::files::same_destination(other, path) {
                    format!(
                        "{} is given twice (as {} and {}): drop one",
                        path.display(),
                        other.display(),
                        path.display()
                    )
                } else {
                    format!(
                        "{} and {} would both write {} (the interval logs are named after the record file): copy one of them to another name first",
                        other.display(),
                        path.display(),
                        f.display()
                    )
                };
                return Err(bad_input(format!("--hlog {}: {why}", dir.display())));
            }
            by.push((i, path, f));
        }
    }
    Ok(())
}

/// Writes command output to stdout (`-`) or a file.
pub fn write_output(output: &Path, text: &str) -> anyhow::Result<()> {
    if output == Path::new("-") {
        // With context: a full stdout said only "No space left on device (os error 28)".
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .context("cannot write to stdout")
    } else if std::fs::symlink_metadata(output).is_ok_and(|m| !m.file_type().is_file()) {
        // A device or a link the user named (`/dev/stdout`, a FIFO): written in place, opened
        // non-blocking so that a FIFO no process reads fails at once (ENXIO) instead of
        // blocking the command forever; made blocking again for the write.
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(output)
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::ENXIO) {
                    bad_input(format!(
                        "-o {}: a FIFO that no process reads: writing it would wait forever; start its reader first, or give a file path or - for stdout",
                        output.display()
                    ))
                } else {
                    anyhow::Error::new(e).context(format!("cannot write {}", output.display()))
                }
            })?;
        nix::fcntl::fcntl(
            &f,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
        )
        .with_context(|| format!("cannot write {}", output.display()))?;
        f.write_all(text.as_bytes())
            .with_context(|| format!("cannot write {}", output.display()))
    } else {
        // A regular file: so a failed write (ENOSPC) leaves no truncated file behind.
        common::files::write_atomic(output, text.as_bytes())
            .with_context(|| format!("cannot write {}", output.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files people bring: `report --hlog` refuses two interval logs at one path with the fix
    /// for their cause: a record with two phases named alike (a hand edit), the same record
    /// given twice, or two records of the same file name; nothing is refused without a clash.
    #[test]
    fn hlog_clashes_are_refused_with_the_fix_for_their_cause() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.json");
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let a2 = sub.join("a.json");
        for p in [&a, &a2] {
            std::fs::write(p, "{}").unwrap();
        }
        let logs = d.path().join("logs");
        let out = Path::new("-");
        let rec = RunRecord::example();
        let mut dup = rec.clone();
        let first = dup.phases[0].name.clone();
        dup.phases[1].name = first;
        let err = |records: &[(PathBuf, RunRecord)]| {
            check_hlogs(&logs, records, out).unwrap_err().to_string()
        };
        let e = err(&[(a.clone(), dup)]);
        assert!(
            e.contains("two phases of") && e.contains("give each phase its own name"),
            "{e}"
        );
        let e = err(&[(a.clone(), rec.clone()), (a.clone(), rec.clone())]);
        assert!(
            e.contains("is given twice") && e.contains("drop one"),
            "{e}"
        );
        let e = err(&[(a.clone(), rec.clone()), (a2.clone(), rec.clone())]);
        assert!(e.contains("copy one of them to another name first"), "{e}");
        check_hlogs(&logs, &[(a, rec)], out).unwrap();
    }
}
