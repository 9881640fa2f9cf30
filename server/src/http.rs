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

/// Finds the end of a request head (`CRLF CRLF`, or a bare `LF LF`, RFC 9112 §2.2) across reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeadScan {
    /// 0: in a line; 1: after CR; 2: at the start of a line (after LF); 3: after CR at the start
    /// of a line.
    state: u8,
    /// Bytes scanned so far.
    read: u32,
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
}

impl HeadScan {
    /// Scans the next bytes read.
    pub fn feed(&mut self, data: &[u8]) -> Scan {
        for &b in data {
            self.read += 1;
            self.state = match (self.state, b) {
                (2 | 3, b'\n') => {
                    return Scan::End;
                }
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
        let long = vec![b'a'; MAX_REQUEST_HEAD_BYTES as usize];
        assert_eq!(s.feed(&long), Scan::TooLarge);
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
