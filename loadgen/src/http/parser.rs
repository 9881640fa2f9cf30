//! The response parser of `--http` ([`ResponseParser`]): a pure state machine over a
//! connection's bytes as they arrive, heads parsed with `httparse`.
//!
//! # Message framing (RFC 9112 §6.3, "Message Body Length")
//! A response to `HEAD`, and every 1xx (skipped, except 101), 204 and 304 response, ends with its
//! head. Otherwise `Transfer-Encoding` whose last coding is `chunked` is decoded chunk by chunk
//! (chunk extensions and trailers are read and dropped); any other `Transfer-Encoding` and a
//! response with neither header are close-delimited (complete when the server's FIN arrives); a
//! valid `Content-Length` gives the body length. Differing or malformed `Content-Length` values
//! are a parse error (§6.3 rule 5), as is a head larger than [`MAX_HEAD_BYTES`] or a FIN before
//! the end of a length-delimited or chunked body (`truncated`).
//!
//! # Cost
//! Each parser's head buffer is allocated on its first use and kept (at most
//! [`MAX_HEAD_BYTES`]); body bytes are counted, never copied.

use crate::failures::ParseError;

/// Largest response head (status line + headers + blank line) the parser holds, bytes (8 KiB,
/// nginx's `large_client_header_buffers` size). A larger head is the parse error `head_too_large`.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;

/// Most header fields a response head may have (more is the parse error `head`).
const MAX_HEADERS: usize = 64;

/// Where the parser is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Collecting the head.
    Head,
    /// This many body bytes still to come (Content-Length).
    Length(u64),
    /// Reading the hex size of a chunk: the value so far, whether a digit was seen, whether the
    /// rest of the line is an extension being skipped.
    ChunkSize { size: u64, digit: bool, ext: bool },
    /// This many bytes of chunk data still to come.
    ChunkData(u64),
    /// After a chunk's data: expecting CRLF (`cr` once the CR was seen).
    ChunkEnd { cr: bool },
    /// After the last chunk: trailer lines until an empty one (`line_empty`: nothing but CR on
    /// the current line so far).
    Trailer { line_empty: bool },
    /// The body runs until the server's FIN.
    UntilClose,
    /// The response is complete.
    Done,
    /// A parse error happened.
    Failed,
}

/// Reads one HTTP/1.x response from the bytes of a connection as they arrive.
///
/// Feed it with [`Self::feed`] after each read and call [`Self::eof`] at the FIN; reuse it for the
/// next connection with [`Self::reset`] (the head buffer is kept).
#[derive(Debug, Clone)]
pub struct ResponseParser {
    head: Vec<u8>,
    state: State,
    head_request: bool,
    status: u16,
    head_bytes: u64,
    body_bytes: u64,
}

impl Default for ResponseParser {
    fn default() -> Self {
        ResponseParser::new()
    }
}

impl ResponseParser {
    /// A parser waiting for a head (no buffer yet: it is allocated on first use, once).
    pub fn new() -> ResponseParser {
        ResponseParser {
            head: Vec::new(),
            state: State::Head,
            head_request: false,
            status: 0,
            head_bytes: 0,
            body_bytes: 0,
        }
    }

    /// Starts over for a new response; `head_request`: the request was `HEAD` (no body).
    pub fn reset(&mut self, head_request: bool) {
        if self.head.capacity() == 0 {
            self.head.reserve_exact(MAX_HEAD_BYTES);
        }
        self.head.clear();
        self.state = State::Head;
        self.head_request = head_request;
        self.status = 0;
        self.head_bytes = 0;
        self.body_bytes = 0;
    }

    /// The final status code (0 until a final head was read).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Bytes of the response's heads (interim 1xx heads included).
    pub fn head_bytes(&self) -> u64 {
        self.head_bytes
    }

    /// Body bytes as sent (chunked: the chunk data only, without sizes, CRLFs and trailers).
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    /// True once the response is complete.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Takes the next bytes read. `Ok(true)`: the response is complete (bytes after its end are
    /// ignored); `Ok(false)`: more is needed.
    ///
    /// # Errors
    /// The [`ParseError`]; the parser stays failed until [`Self::reset`].
    pub fn feed(&mut self, mut data: &[u8]) -> Result<bool, ParseError> {
        while !data.is_empty() {
            match self.state {
                State::Done => return Ok(true),
                State::Failed => return Err(ParseError::Head),
                State::Head => {
                    let room = MAX_HEAD_BYTES - self.head.len();
                    let take = data.len().min(room);
                    let before = self.head.len();
                    self.head.extend_from_slice(&data[..take]);
                    match self.parse_head() {
                        // Bytes of `data` past the head go on to the body state.
                        Ok(Some(end)) => data = &data[end - before..],
                        Ok(None) if self.head.len() == MAX_HEAD_BYTES => {
                            return self.fail(ParseError::HeadTooLarge)
                        }
                        Ok(None) => data = &data[take..],
                        Err(e) => return self.fail(e),
                    }
                }
                State::Length(left) => {
                    let n = left.min(data.len() as u64);
                    self.body_bytes += n;
                    data = &data[n as usize..];
                    self.state = if left == n {
                        State::Done
                    } else {
                        State::Length(left - n)
                    };
                }
                State::ChunkData(left) => {
                    let n = left.min(data.len() as u64);
                    self.body_bytes += n;
                    data = &data[n as usize..];
                    self.state = if left == n {
                        State::ChunkEnd { cr: false }
                    } else {
                        State::ChunkData(left - n)
                    };
                }
                State::UntilClose => {
                    self.body_bytes += data.len() as u64;
                    data = &[];
                }
                State::ChunkSize { .. } | State::ChunkEnd { .. } | State::Trailer { .. } => {
                    let b = data[0];
                    data = &data[1..];
                    if let Err(e) = self.chunk_byte(b) {
                        return self.fail(e);
                    }
                }
            }
        }
        Ok(self.state == State::Done)
    }

    /// The server's FIN arrived. `Ok(())` when that completes the response (a close-delimited
    /// body, or one already complete).
    ///
    /// # Errors
    /// [`ParseError::Truncated`] when the response was not complete.
    pub fn eof(&mut self) -> Result<(), ParseError> {
        match self.state {
            State::UntilClose | State::Done => {
                self.state = State::Done;
                Ok(())
            }
            _ => {
                self.state = State::Failed;
                Err(ParseError::Truncated)
            }
        }
    }

    fn fail(&mut self, e: ParseError) -> Result<bool, ParseError> {
        self.state = State::Failed;
        Err(e)
    }

    /// Parses the head buffer. `Ok(Some(end))` when a final head is complete: `end` is where it
    /// ended, counted in the buffer as it was when this call began (interim 1xx heads are drained
    /// from the buffer as they complete, so one never stays in it across calls); the buffer is
    /// then empty and the body state set. `Ok(None)` when incomplete.
    fn parse_head(&mut self) -> Result<Option<usize>, ParseError> {
        let mut drained = 0usize;
        loop {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut resp = httparse::Response::new(&mut headers);
            let n = match resp.parse(&self.head) {
                Ok(httparse::Status::Complete(n)) => n,
                Ok(httparse::Status::Partial) => return Ok(None),
                Err(_) => return Err(ParseError::Head),
            };
            let code = resp.code.unwrap_or(0);
            self.head_bytes += n as u64;
            if (100..200).contains(&code) && code != 101 {
                // An interim response (e.g. 100 Continue): drop it and read the next head.
                self.head.drain(..n);
                drained += n;
                continue;
            }
            self.state = body_state(code, self.head_request, resp.headers)?;
            self.status = code;
            self.head.clear();
            return Ok(Some(drained + n));
        }
    }

    fn chunk_byte(&mut self, b: u8) -> Result<(), ParseError> {
        self.state = match self.state {
            State::ChunkSize { size, digit, ext } => match b {
                b'\n' if digit => {
                    if size == 0 {
                        State::Trailer { line_empty: true }
                    } else {
                        State::ChunkData(size)
                    }
                }
                b'\r' if digit => State::ChunkSize { size, digit, ext },
                _ if ext => State::ChunkSize { size, digit, ext },
                b';' | b' ' | b'\t' if digit => State::ChunkSize {
                    size,
                    digit,
                    ext: true,
                },
                _ => {
                    let v = (b as char).to_digit(16).ok_or(ParseError::Chunk)?;
                    let size = size
                        .checked_mul(16)
                        .and_then(|s| s.checked_add(u64::from(v)))
                        .ok_or(ParseError::Chunk)?;
                    State::ChunkSize {
                        size,
                        digit: true,
                        ext: false,
                    }
                }
            },
            State::ChunkEnd { cr } => match b {
                b'\r' if !cr => State::ChunkEnd { cr: true },
                b'\n' => State::ChunkSize {
                    size: 0,
                    digit: false,
                    ext: false,
                },
                _ => return Err(ParseError::Chunk),
            },
            State::Trailer { line_empty } => match b {
                b'\n' if line_empty => State::Done,
                b'\n' => State::Trailer { line_empty: true },
                b'\r' => State::Trailer { line_empty },
                _ => State::Trailer { line_empty: false },
            },
            s => s,
        };
        Ok(())
    }
}

/// The body's framing from the final head (RFC 9112 §6.3).
fn body_state(
    code: u16,
    head_request: bool,
    headers: &[httparse::Header<'_>],
) -> Result<State, ParseError> {
    if head_request || code == 204 || code == 304 || (100..200).contains(&code) {
        return Ok(State::Done);
    }
    let mut chunked = None;
    let mut length: Option<u64> = None;
    for h in headers {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let v = String::from_utf8_lossy(h.value);
            let last = v.rsplit(',').next().unwrap_or("").trim();
            chunked = Some(last.eq_ignore_ascii_case("chunked"));
        } else if h.name.eq_ignore_ascii_case("content-length") {
            // A list of equal values is allowed (§6.3 rule 5); anything else is an error.
            for part in String::from_utf8_lossy(h.value).split(',') {
                let p = part.trim();
                if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(ParseError::ContentLength);
                }
                let n: u64 = p.parse().map_err(|_| ParseError::ContentLength)?;
                if length.is_some_and(|l| l != n) {
                    return Err(ParseError::ContentLength);
                }
                length = Some(n);
            }
        }
    }
    Ok(match (chunked, length) {
        (Some(true), _) => State::ChunkSize {
            size: 0,
            digit: false,
            ext: false,
        },
        (Some(false), _) => State::UntilClose,
        (None, Some(0)) => State::Done,
        (None, Some(n)) => State::Length(n),
        (None, None) => State::UntilClose,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes` split at `cut` (both parts; the second one only if the first did not end
    /// the response), then the FIN when `fin`. Returns the result and the parser.
    fn run_split(
        bytes: &[u8],
        cut: usize,
        head: bool,
        fin: bool,
    ) -> (Result<bool, ParseError>, ResponseParser) {
        let mut p = ResponseParser::new();
        p.reset(head);
        let mut r = p.feed(&bytes[..cut]);
        if matches!(r, Ok(false)) {
            r = p.feed(&bytes[cut..]);
        }
        if fin && matches!(r, Ok(false)) {
            r = p.eof().map(|()| true);
        }
        (r, p)
    }

    /// Every split point of `bytes` gives the same result, status and body length.
    fn every_split(bytes: &[u8], head: bool, fin: bool) -> (Result<bool, ParseError>, u16, u64) {
        let (r0, p0) = run_split(bytes, 0, head, fin);
        for cut in 0..=bytes.len() {
            let (r, p) = run_split(bytes, cut, head, fin);
            assert_eq!(r, r0, "cut at {cut}");
            assert_eq!(p.status(), p0.status(), "cut at {cut}");
            assert_eq!(p.body_bytes(), p0.body_bytes(), "cut at {cut}");
        }
        // One byte at a time too.
        let mut p = ResponseParser::new();
        p.reset(head);
        let mut r = Ok(false);
        for b in bytes {
            r = p.feed(std::slice::from_ref(b));
            if !matches!(r, Ok(false)) {
                break;
            }
        }
        if fin && matches!(r, Ok(false)) {
            r = p.eof().map(|()| true);
        }
        assert_eq!(r, r0, "byte by byte");
        assert_eq!(p.body_bytes(), p0.body_bytes(), "byte by byte");
        (r0, p0.status(), p0.body_bytes())
    }

    #[test]
    fn content_length_body_ends_the_response_at_every_split() {
        let b = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\nhello";
        assert_eq!(every_split(b, false, false), (Ok(true), 200, 5));
        // Bytes after the body are ignored.
        let mut p = ResponseParser::new();
        p.reset(false);
        assert_eq!(p.feed(&[b.as_slice(), b"EXTRA"].concat()), Ok(true));
        assert_eq!(p.body_bytes(), 5);
    }

    #[test]
    fn chunked_body_with_extensions_and_trailers_at_every_split() {
        let b = b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: gzip, chunked\r\n\r\n\
                  5;name=v\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\n";
        assert_eq!(every_split(b, false, false), (Ok(true), 503, 31));
        let no_trailer =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        assert_eq!(every_split(no_trailer, false, false), (Ok(true), 200, 3));
    }

    #[test]
    fn close_delimited_body_ends_at_the_fin() {
        let b = b"HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\nnot here, sorry";
        assert_eq!(every_split(b, false, true), (Ok(true), 404, 15));
        // Without the FIN it is not complete.
        assert_eq!(every_split(b, false, false), (Ok(false), 404, 15));
        // A transfer coding other than chunked is close-delimited too.
        let gz = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz";
        assert_eq!(every_split(gz, false, true), (Ok(true), 200, 2));
    }

    #[test]
    fn bodiless_responses_end_with_their_head() {
        let no_content = b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n";
        assert_eq!(every_split(no_content, false, false), (Ok(true), 204, 0));
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
        assert_eq!(every_split(head, true, false), (Ok(true), 200, 0));
        let zero = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(every_split(zero, false, false), (Ok(true), 200, 0));
        let not_modified = b"HTTP/1.1 304 Not Modified\r\n\r\n";
        assert_eq!(every_split(not_modified, false, false), (Ok(true), 304, 0));
    }

    #[test]
    fn interim_100_continue_is_skipped() {
        let b = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
        let (r, code, body) = every_split(b, false, false);
        assert_eq!((r, code, body), (Ok(true), 201, 2));
        let (_, p) = run_split(b, 10, false, false);
        assert_eq!(p.head_bytes(), 25 + 43);
    }

    #[test]
    fn malformed_responses_are_parse_errors_at_every_split() {
        let garbage = b"SSH-2.0-OpenSSH_9.6\r\n\r\n";
        assert_eq!(every_split(garbage, false, true).0, Err(ParseError::Head));
        let cl = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!";
        assert_eq!(
            every_split(cl, false, true).0,
            Err(ParseError::ContentLength)
        );
        let cl_bad = b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n";
        assert_eq!(
            every_split(cl_bad, false, true).0,
            Err(ParseError::ContentLength)
        );
        let chunk = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert_eq!(every_split(chunk, false, true).0, Err(ParseError::Chunk));
        let chunk_end = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n";
        assert_eq!(
            every_split(chunk_end, false, true).0,
            Err(ParseError::Chunk)
        );
        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nonly this";
        assert_eq!(
            every_split(short, false, true).0,
            Err(ParseError::Truncated)
        );
        let short_head = b"HTTP/1.1 200 OK\r\nContent-Le";
        assert_eq!(
            every_split(short_head, false, true).0,
            Err(ParseError::Truncated)
        );
        let mut huge = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        huge.resize(MAX_HEAD_BYTES + 10, b'a');
        let mut p = ResponseParser::new();
        p.reset(false);
        assert_eq!(p.feed(&huge), Err(ParseError::HeadTooLarge));
        // Equal repeated lengths are fine.
        let same = b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok";
        assert_eq!(every_split(same, false, false), (Ok(true), 200, 2));
    }

    #[test]
    fn the_parser_is_reused_without_reallocating() {
        let mut p = ResponseParser::new();
        p.reset(false);
        let cap = p.head.capacity();
        for _ in 0..3 {
            p.reset(false);
            assert_eq!(
                p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"),
                Ok(true)
            );
        }
        assert_eq!(p.head.capacity(), cap);
        assert!(cap >= MAX_HEAD_BYTES);
    }
}
