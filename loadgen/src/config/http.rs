//! The request `--http` sends on every connection ([`HttpRequest`]): from the `--http*` options
//! (the method default, the body file, [`read_body`], bounded by [`MAX_HTTP_BODY`]) to the
//! checked request ([`HttpRequest::validate`]) and its bytes per target ([`HttpRequest::encode`]).
//! A plain option type: what the exchange does with it is [`crate::http`]'s.

use std::net::SocketAddr;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The request sent on every connection. Built from `--http [PATH]`, `--http-method`,
/// `--http-header` and `--http-body FILE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// Request method, an RFC 9110 token (`GET`, `POST`, ...). CLI default `GET`.
    pub method: String,
    /// Request target in origin form (`/`, `/health?x=1`). CLI default `/`.
    pub path: String,
    /// Extra header fields, each `Name: value`. A `Host` field here replaces the default one
    /// (the target as given: [`HttpRequest::host_names`], else `IP:PORT`), and a second `Host` is refused (RFC 9112 §3.2);
    /// `Connection`, `Content-Length` and `Transfer-Encoding` are set by connstorm and refused
    /// here.
    pub headers: Vec<String>,
    /// Request body (sent with `Content-Length`); empty = no body and no `Content-Length` (except
    /// for `POST`/`PUT`/`PATCH`, which get `Content-Length: 0`). Serialized (in records and JSON
    /// reports) as its size and digest, `{"bytes": N, "sha256": "hex"}`, never the bytes: a
    /// 16 MiB body once made a 184 MB record; records before that hold the bytes as an array,
    /// which still deserializes.
    #[serde(with = "body_digest")]
    pub body: Vec<u8>,
    /// The `Host` value of each target address given by name (`localhost:9443` for the
    /// addresses `--target localhost:9443` resolved to), as curl and wrk send it and as
    /// name-based virtual hosts (nginx `server_name`) need it; an address not here gets
    /// `IP:PORT`. Not kept in records (the record keeps the targets).
    #[serde(skip)]
    pub host_names: std::collections::BTreeMap<SocketAddr, String>,
}

impl Default for HttpRequest {
    fn default() -> Self {
        HttpRequest {
            method: "GET".into(),
            path: "/".into(),
            headers: Vec::new(),
            body: Vec::new(),
            host_names: Default::default(),
        }
    }
}

/// [`HttpRequest::body`] as `{"bytes": N, "sha256": "hex"}`.
mod body_digest {
    use serde::de::Error as _;
    use serde::ser::SerializeStruct;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(body: &[u8], s: S) -> Result<S::Ok, S::Error> {
        let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, body);
        let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        let mut m = s.serialize_struct("Body", 2)?;
        m.serialize_field("bytes", &body.len())?;
        m.serialize_field("sha256", &hex)?;
        m.end()
    }

    /// The bytes (an array, older records); the digest form cannot give them back.
    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Bytes(Vec<u8>),
            Digest { bytes: u64 },
        }
        match Form::deserialize(d)? {
            Form::Bytes(b) => Ok(b),
            Form::Digest { bytes } => Err(D::Error::custom(format!(
                "the HTTP body is recorded as its size ({bytes} bytes) and SHA-256 only, not its \
                 bytes: give the body file again with --http-body FILE"
            ))),
        }
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

impl HttpRequest {
    /// Checks method, path and headers.
    ///
    /// # Errors
    /// A message naming the bad part and how to fix it.
    pub fn validate(&self) -> Result<(), String> {
        if self.method.is_empty() || !self.method.bytes().all(is_tchar) {
            return Err(format!(
                "--http-method {:?} is not an HTTP method token: give e.g. GET, POST or HEAD",
                self.method
            ));
        }
        if !self.path.starts_with('/') || self.path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(format!(
                "--http path {:?} must start with `/` and contain no spaces or control characters \
                 (percent-encode them), e.g. `/` or `/health?x=1`",
                self.path
            ));
        }
        let mut host: Option<&str> = None;
        for h in &self.headers {
            let Some((name, value)) = h.split_once(':') else {
                return Err(format!(
                    "--http-header {h:?} has no `:`: write `Name: value`"
                ));
            };
            if name.is_empty() || !name.bytes().all(is_tchar) {
                return Err(format!(
                    "--http-header {h:?}: the name {name:?} is not an HTTP field name token"
                ));
            }
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(format!(
                    "--http-header {h:?}: the value contains CR, LF or NUL"
                ));
            }
            let lower = name.to_ascii_lowercase();
            if ["connection", "content-length", "transfer-encoding"].contains(&lower.as_str()) {
                return Err(format!(
                    "--http-header {h:?}: connstorm sets {name} itself (Connection: close, \
                     Content-Length from --http-body); drop it"
                ));
            }
            // RFC 9112 §3.2: a server must answer 400 to a request with more than one Host.
            if lower == "host" {
                if let Some(first) = host {
                    return Err(format!(
                        "--http-header {h:?}: a second Host header (the first: {first:?}); a \
                         server must answer 400 to more than one (RFC 9112 §3.2): give one"
                    ));
                }
                host = Some(h);
            }
        }
        Ok(())
    }

    /// True for `HEAD` (its response has no body whatever its headers say).
    pub fn is_head(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
    }

    /// The request bytes for `target`: request line, `Host` (unless a header gives one: the
    /// name the target was given by, [`HttpRequest::host_names`], else `IP:PORT`),
    /// `Connection: close`, the extra headers, `Content-Length` when there is a body (or the
    /// method usually has one), blank line, body.
    pub fn encode(&self, target: SocketAddr) -> Vec<u8> {
        let mut head = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        let has_host = self.headers.iter().any(|h| {
            h.split_once(':')
                .is_some_and(|(n, _)| n.eq_ignore_ascii_case("host"))
        });
        if !has_host {
            match self.host_names.get(&target) {
                Some(name) => head.push_str(&format!("Host: {name}\r\n")),
                None => head.push_str(&format!("Host: {target}\r\n")),
            }
        }
        head.push_str("Connection: close\r\n");
        for h in &self.headers {
            let (n, v) = h.split_once(':').unwrap_or((h, ""));
            head.push_str(&format!("{n}: {}\r\n", v.trim()));
        }
        let wants_length = ["POST", "PUT", "PATCH"]
            .iter()
            .any(|m| self.method.eq_ignore_ascii_case(m));
        if !self.body.is_empty() || wants_length {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

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
    fn the_body_is_serialized_as_its_size_and_sha256_and_old_arrays_still_load() {
        let r = HttpRequest {
            body: b"abc".to_vec(),
            ..Default::default()
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v["body"],
            serde_json::json!({
                "bytes": 3,
                // FIPS 180-2 appendix B.1's example.
                "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
            })
        );
        let old =
            serde_json::json!({"method": "POST", "path": "/", "headers": [], "body": [97, 98, 99]});
        let back: HttpRequest = serde_json::from_value(old).unwrap();
        assert_eq!(back, r_with_method(&r, "POST"));
        let e = serde_json::from_value::<HttpRequest>(v)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("3 bytes") && e.contains("--http-body FILE"),
            "{e}"
        );
    }

    fn r_with_method(r: &HttpRequest, m: &str) -> HttpRequest {
        HttpRequest {
            method: m.into(),
            ..r.clone()
        }
    }

    #[test]
    fn request_is_encoded_with_host_close_headers_and_body() {
        let t: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let r = HttpRequest::default();
        assert_eq!(
            r.encode(t),
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: close\r\n\r\n"
        );
        let r = HttpRequest {
            method: "POST".into(),
            path: "/x?y=1".into(),
            headers: vec!["Host: example.test".into(), "X-A:  b ".into()],
            body: b"abc".to_vec(),
            ..Default::default()
        };
        assert_eq!(
            r.encode("[::1]:80".parse().unwrap()),
            b"POST /x?y=1 HTTP/1.1\r\nConnection: close\r\nHost: example.test\r\nX-A: b\r\n\
              Content-Length: 3\r\n\r\nabc"
        );
        assert!(r.validate().is_ok());
        // A target given by name: its name and port, as given (curl and wrk send that; nginx
        // picks its server block by it); another address of the run keeps IP:PORT.
        let mut named = HttpRequest::default();
        named.host_names.insert(t, "localhost:8080".into());
        assert_eq!(
            named.encode(t),
            b"GET / HTTP/1.1\r\nHost: localhost:8080\r\nConnection: close\r\n\r\n"
        );
        assert!(named
            .encode("127.0.0.2:8080".parse().unwrap())
            .starts_with(b"GET / HTTP/1.1\r\nHost: 127.0.0.2:8080\r\n"));
        for (m, p, h) in [
            ("GE T", "/", ""),
            ("GET", "x", ""),
            ("GET", "/a b", ""),
            ("GET", "/", "NoColon"),
            ("GET", "/", "Connection: keep-alive"),
            ("GET", "/", "Bad Name: v"),
        ] {
            let r = HttpRequest {
                method: m.into(),
                path: p.into(),
                headers: if h.is_empty() { vec![] } else { vec![h.into()] },
                ..Default::default()
            };
            assert!(r.validate().is_err(), "{m} {p} {h}");
        }
    }

    /// Names and addresses, kind "a field given twice": a second `Host` (any case) is refused
    /// (RFC 9112 §3.2: the server must answer 400); one `Host` replaces the default.
    #[test]
    fn a_second_host_header_is_refused() {
        let with = |h: &[&str]| HttpRequest {
            headers: h.iter().map(|s| s.to_string()).collect(),
            ..HttpRequest::default()
        };
        let e = with(&["Host: x", "X-A: 1", "host: y"])
            .validate()
            .unwrap_err();
        assert!(
            e.contains("second Host") && e.contains("\"Host: x\""),
            "{e}"
        );
        assert!(with(&["HOST: x", "Host: x"]).validate().is_err());
        assert!(with(&["Host: x", "X-Host: y"]).validate().is_ok());
    }

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
