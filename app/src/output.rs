//! Where the binary's text goes: stdout for results, stderr for progress and notes. Neither
//! ever panics on a closed stream, so a run is never lost before its record is written.

/// Writes `text` to stdout, ignoring errors: a closed stdout or a reader that went away (`| head`,
/// EPIPE; Rust ignores SIGPIPE, so a write returns EPIPE instead of killing the process) must
/// neither panic (as `print!` does) nor stop the run before its record is written.
///
/// Any other write error (a full disk behind `> file`, `> /dev/full`: ENOSPC, EIO) is kept and
/// turns a successful exit into exit 1 with the error on stderr ([`stdout_error`]): the output
/// the user asked for is incomplete, though the run and its record are not lost.
pub fn out(text: &str) {
    use std::io::Write as _;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let mut first = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
            first.get_or_insert_with(|| e.to_string());
        }
    }
}

static STDOUT_ERROR: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// The first error (other than EPIPE) that [`out`] met writing to stdout, if any.
pub fn stdout_error() -> Option<String> {
    STDOUT_ERROR
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// Writes one line to stderr, ignoring errors (see [`out`]): progress and notes never panic on a
/// closed stderr. While a progress bar is shown the line goes above it ([`crate::progress::note`]).
pub fn note(line: &str) {
    crate::progress::note(line);
}
