//! `--mode http`: read a request up to the end of its head (bounded), answer one fixed response,
//! close. The response is built once per worker ([`response`]); the head's end is found by
//! [`HeadScan`], a four-state scanner carried across reads (no buffering of the request).
//!
//! The request body, if any, is not read: a client that sends one larger than what arrives with
//! the head may see the server's close as a reset (close(2) with unread data sends RST, RFC 2525
//! §2.17 and tcp_close() in net/ipv4/tcp.c). Load generators send bodiless GETs here.

/// Longest request head the server reads before it gives up on a connection (16 KiB, nginx's
/// default `large_client_header_buffers` total is 4 × 8 KiB): the connection is closed and
/// counted as the error `EMSGSIZE`.
pub const MAX_REQUEST_HEAD_BYTES: u32 = 16 * 1024;

/// The fixed response: `204 No Content` when `body_bytes` is 0, else `200 OK` with
/// `Content-Length: body_bytes` and that many `*` bytes; always `Connection: close`.
pub fn response(body_bytes: u32) -> Vec<u8> {
    let mut r = if body_bytes == 0 {
        b"HTTP/1.1 204 No Content\r\nServer: connstorm\r\nConnection: close\r\n\r\n".to_vec()
    } else {
        format!(
            "HTTP/1.1 200 OK\r\nServer: connstorm\r\nContent-Type: application/octet-stream\r\n\
             Content-Length: {body_bytes}\r\nConnection: close\r\n\r\n"
        )
        .into_bytes()
    };
    r.resize(r.len() + body_bytes as usize, b'*');
    r
}

/// Finds the end of a request head (`CRLF CRLF`, or a bare `LF LF`, RFC 9112 §2.2) across reads,
/// and checks its request line as it goes: `method SP request-target SP HTTP/d.d` then CRLF or
/// LF (RFC 9112 §3; the method an RFC 9110 token, the target without controls or spaces), after
/// at most a few empty lines (§2.2 lets a server ignore one). Anything else — `garbage\r\n\r\n`,
/// a TLS ClientHello, an SSH banner — is [`Scan::Bad`] at its first wrong byte: the server
/// closes without an answer and counts it `bad_requests`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeadScan {
    /// 0: in a line; 1: after CR; 2: at the start of a line (after LF); 3: after CR at the start
    /// of a line.
    state: u8,
    /// Bytes scanned so far.
    read: u32,
    /// Where the request-line check is ([`Line`]).
    line: Line,
}

/// The request-line check's state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Line {
    /// Before the method (empty lines may come first).
    #[default]
    Start,
    /// In the method.
    Method,
    /// In the request target (`true` once a byte of it was seen).
    Target(bool),
    /// Matching `HTTP/d.d`: how many of its bytes matched.
    Version(u8),
    /// After the version, a CR seen.
    Cr,
    /// The request line is valid; header lines are not checked.
    Done,
}

/// The bytes of `HTTP/d.d`, `d` standing for a digit.
const VERSION: &[u8; 8] = b"HTTP/d.d";

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

impl Line {
    /// The next state after byte `b`; `None` when the line is not a request line.
    fn next(self, b: u8, read: u32) -> Option<Line> {
        Some(match (self, b) {
            (Line::Start, b'\r' | b'\n') if read <= 8 => Line::Start,
            (Line::Start | Line::Method, b) if is_tchar(b) => Line::Method,
            (Line::Method, b' ') => Line::Target(false),
            (Line::Target(true), b' ') => Line::Version(0),
            (Line::Target(_), b) if b > b' ' && b != 0x7f => Line::Target(true),
            (Line::Version(n), b) if n < 8 => {
                let want = VERSION[usize::from(n)];
                let ok = if want == b'd' {
                    b.is_ascii_digit()
                } else {
                    b == want
                };
                if !ok {
                    return None;
                }
                Line::Version(n + 1)
            }
            (Line::Version(8), b'\r') => Line::Cr,
            (Line::Version(8) | Line::Cr, b'\n') => Line::Done,
            (Line::Done, _) => Line::Done,
            _ => return None,
        })
    }
}

/// What a scan of the bytes read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// The head is not complete yet.
    More,
    /// The head ends in this piece (bytes after it, a body, are not looked at).
    End,
    /// [`MAX_REQUEST_HEAD_BYTES`] scanned without an end.
    TooLarge,
    /// Not an HTTP/1.x request (see [`HeadScan`]).
    Bad,
}

impl HeadScan {
    /// Scans the next bytes read.
    pub fn feed(&mut self, data: &[u8]) -> Scan {
        for &b in data {
            self.read += 1;
            if self.line != Line::Done {
                match self.line.next(b, self.read) {
                    Some(l) => self.line = l,
                    None => return Scan::Bad,
                }
            }
            self.state = match (self.state, b) {
                (2 | 3, b'\n') if self.line == Line::Done => {
                    return Scan::End;
                }
                // Only empty lines: no request line at all.
                (2 | 3, b'\n') => return Scan::Bad,
                (_, b'\n') => 2,
                (2, b'\r') => 3,
                (_, b'\r') => 1,
                _ => 0,
            };
            if self.read >= MAX_REQUEST_HEAD_BYTES {
                return Scan::TooLarge;
            }
        }
        Scan::More
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_end_is_found_across_every_split() {
        let req = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nBODY";
        let end = req.len() - 4;
        for cut in 0..=req.len() {
            let mut s = HeadScan::default();
            let (a, b) = req.split_at(cut);
            let r = match s.feed(a) {
                Scan::More => s.feed(b),
                r => r,
            };
            assert_eq!(r, Scan::End, "cut {cut}");
            assert_eq!(s.read as usize, end, "cut {cut}");
        }
        let mut s = HeadScan::default();
        assert_eq!(s.feed(b"GET / HTTP/1.0\n\n"), Scan::End);
        let mut s = HeadScan::default();
        assert_eq!(s.feed(b"GET / HTTP/1.1\r\nHost: a\r\n"), Scan::More);
        let mut s = HeadScan::default();
        let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long.resize(MAX_REQUEST_HEAD_BYTES as usize, b'a');
        assert_eq!(s.feed(&long), Scan::TooLarge);
        let mut s = HeadScan::default();
        assert_eq!(s.feed(b"\r\nPOST /x?y HTTP/1.1\r\n\r\n"), Scan::End);
    }

    #[test]
    fn a_head_that_is_not_http_is_bad_at_every_split() {
        for bad in [
            &b"garbage\r\n\r\n"[..],
            b"GET\r\n\r\n",
            b"GET  / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/2\r\n\r\n",
            b"GET / FTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1 x\r\n\r\n",
            b"\x16\x03\x01\x00\xa5\x01",
            b"SSH-2.0-OpenSSH_9.6\r\n",
            b"\r\n\r\n",
        ] {
            for cut in 0..=bad.len() {
                let mut s = HeadScan::default();
                let (a, b) = bad.split_at(cut);
                let r = match s.feed(a) {
                    Scan::More => s.feed(b),
                    r => r,
                };
                assert_eq!(r, Scan::Bad, "{:?} cut {cut}", String::from_utf8_lossy(bad));
            }
        }
    }

    #[test]
    fn responses_are_204_or_200_with_the_body() {
        let r = response(0);
        assert!(r.starts_with(b"HTTP/1.1 204 No Content\r\n"));
        assert!(r.ends_with(b"\r\n\r\n"));
        let r = response(10);
        let text = String::from_utf8(r.clone()).unwrap();
        assert!(text.contains("Content-Length: 10\r\n"), "{text}");
        assert!(r.ends_with(b"\r\n\r\n**********"));
    }
}
