//! Writing an output file so that a reader never sees half of it.

use std::io;
use std::path::Path;

/// Writes `bytes` to `path` through a temporary file `.NAME.tmp` in the same directory and a
/// rename(2) (atomic within one file system), so a failed write (ENOSPC) leaves neither a
/// truncated file nor the temporary one. The caller decides what to do with a `path` that is not
/// a regular file: the rename would replace a device or a symlink.
///
/// # Errors
/// `InvalidInput` when `path` has no file name; the errno of the write or the rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: give a file name", path.display()),
        )
    })?;
    let tmp = path.with_file_name(format!(".{}.tmp", name.to_string_lossy()));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
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

#[cfg(test)]
mod tests {
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
