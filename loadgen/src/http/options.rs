//! From the `--http*` options to the checked [`HttpRequest`]: the method default, the body file
//! ([`read_body`], bounded by [`MAX_HTTP_BODY`]) and [`HttpRequest::validate`].

use std::path::Path;

use super::HttpRequest;

/// Largest `--http-body` accepted, bytes (16 MiB: the encoded request is kept in memory per
/// target).
pub const MAX_HTTP_BODY: u64 = 16 << 20;

/// Reads `--http-body`: a regular file of at most [`MAX_HTTP_BODY`] bytes (`/dev/zero` or a FIFO
/// would never end).
///
/// # Errors
/// A message naming the file and what to give instead: unreadable, not a regular file, too
/// large, or grown past the limit while being read.
pub fn read_body(f: &Path) -> Result<Vec<u8>, String> {
    common::files::read_regular(f, MAX_HTTP_BODY).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::InvalidInput => "not a regular file".to_string(),
            std::io::ErrorKind::InvalidData => e.to_string(),
            _ => format!("cannot read it ({e})"),
        };
        format!(
            "--http-body {}: {why}: give a regular file of at most {} bytes",
            f.display(),
            common::numfmt::count(MAX_HTTP_BODY)
        )
    })
}

impl HttpRequest {
    /// The request of `--http PATH` with `--http-method` (default `GET`), the `--http-header`
    /// fields and the body read from `--http-body` ([`read_body`]), validated
    /// ([`HttpRequest::validate`]).
    ///
    /// # Errors
    /// The message of [`read_body`] or [`HttpRequest::validate`].
    pub fn from_options(
        path: &str,
        method: Option<&str>,
        headers: &[String],
        body_file: Option<&Path>,
    ) -> Result<Self, String> {
        let body = match body_file {
            Some(f) => read_body(f)?,
            None => Vec::new(),
        };
        let req = HttpRequest {
            method: method.unwrap_or("GET").to_string(),
            path: path.to_string(),
            headers: headers.to_vec(),
            body,
            ..HttpRequest::default()
        };
        req.validate()?;
        Ok(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_file_is_read_and_non_regular_files_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("b");
        std::fs::write(&f, b"abc").unwrap();
        let r = HttpRequest::from_options("/x", Some("POST"), &[], Some(&f)).unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/x"));
        assert_eq!(r.body, b"abc");
        assert_eq!(
            HttpRequest::from_options("/", None, &[], None).unwrap(),
            HttpRequest::default()
        );
        let e = read_body(d.path()).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        assert!(e.contains("16,777,216 bytes"), "{e}");
    }
}
