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
}
