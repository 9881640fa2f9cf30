//! One HTTP/1.1 request per connection (`--http`): the request ([`HttpRequest`], encoded once per
//! target before the run), the response parser ([`ResponseParser`], a pure state machine over the
//! bytes as they arrive, heads parsed with `httparse`), the counters ([`HttpReport`]) and the
//! worker's send/read hooks.
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
//! # Cost per connection
//! The request bytes are built once per target; each slot's head buffer is allocated on the
//! slot's first use and kept (at most [`MAX_HEAD_BYTES`]); body bytes are counted, never copied.
//! One send(2) (MSG_NOSIGNAL, so a server that reset the connection gives `EPIPE`, not SIGPIPE)
//! and reads until EAGAIN, in the worker's 16 KiB scratch buffer.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use crate::report::{HistogramSummary, Overflow};
use crate::stats::Latency;

/// Largest response head (status line + headers + blank line) the parser holds, bytes (8 KiB,
/// nginx's `large_client_header_buffers` size). A larger head is the parse error `head_too_large`.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;

/// Most header fields a response head may have (more is the parse error `head`).
const MAX_HEADERS: usize = 64;

/// The request sent on every connection. Built from `--http [PATH]`, `--http-method`,
/// `--http-header` and `--http-body FILE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// Request method, an RFC 9110 token (`GET`, `POST`, ...). CLI default `GET`.
    pub method: String,
    /// Request target in origin form (`/`, `/health?x=1`). CLI default `/`.
    pub path: String,
    /// Extra header fields, each `Name: value`. A `Host` field here replaces the default one
    /// (the target address as `IP:PORT`); `Connection`, `Content-Length` and `Transfer-Encoding`
    /// are set by connstorm and refused here.
    pub headers: Vec<String>,
    /// Request body (sent with `Content-Length`); empty = no body and no `Content-Length` (except
    /// for `POST`/`PUT`/`PATCH`, which get `Content-Length: 0`).
    pub body: Vec<u8>,
}

impl Default for HttpRequest {
    fn default() -> Self {
        HttpRequest {
            method: "GET".into(),
            path: "/".into(),
            headers: Vec::new(),
            body: Vec::new(),
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
        }
        Ok(())
    }

    /// True for `HEAD` (its response has no body whatever its headers say).
    pub fn is_head(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
    }

    /// The request bytes for `target`: request line, `Host` (unless a header gives one),
    /// `Connection: close`, the extra headers, `Content-Length` when there is a body (or the
    /// method usually has one), blank line, body.
    pub fn encode(&self, target: SocketAddr) -> Vec<u8> {
        let mut head = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        let has_host = self.headers.iter().any(|h| {
            h.split_once(':')
                .is_some_and(|(n, _)| n.eq_ignore_ascii_case("host"))
        });
        if !has_host {
            head.push_str(&format!("Host: {target}\r\n"));
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

/// Why a response could not be read. Each is a failure class of its own in [`HttpReport`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The head is not HTTP/1.x (httparse refused it: bad status line, header or version).
    Head,
    /// The head did not end within [`MAX_HEAD_BYTES`].
    HeadTooLarge,
    /// `Content-Length` malformed, or given twice with different values.
    ContentLength,
    /// A chunk-size line or the CRLF after a chunk's data is malformed.
    Chunk,
    /// The connection ended (FIN) before the response did.
    Truncated,
}

impl ParseError {
    /// Every kind, in the order of their counters.
    pub const ALL: [ParseError; 5] = [
        ParseError::Head,
        ParseError::HeadTooLarge,
        ParseError::ContentLength,
        ParseError::Chunk,
        ParseError::Truncated,
    ];

    /// The report name: `head`, `head_too_large`, `content_length`, `chunk`, `truncated`.
    pub fn name(self) -> &'static str {
        match self {
            ParseError::Head => "head",
            ParseError::HeadTooLarge => "head_too_large",
            ParseError::ContentLength => "content_length",
            ParseError::Chunk => "chunk",
            ParseError::Truncated => "truncated",
        }
    }
}

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

/// HTTP counters of one worker over one scope (whole run or measured window). Plain integers;
/// the per-status table is allocated once per worker.
#[derive(Debug, Clone)]
pub(crate) struct HttpCounts {
    /// Requests written completely.
    pub requests: u64,
    /// Complete responses.
    pub responses: u64,
    /// Complete responses by status code (index = code, 0..1000; httparse reads three digits).
    pub by_code: Vec<u64>,
    /// Parse errors by kind, in [`ParseError::ALL`] order.
    pub parse_errors: [u64; 5],
    /// Request bytes written.
    pub bytes_sent: u64,
    /// Response bytes read (heads, bodies, chunk framing; bytes after a complete response too).
    pub bytes_received: u64,
    /// Body bytes of complete responses (chunk data only for chunked ones).
    pub body_bytes: u64,
}

impl Default for HttpCounts {
    fn default() -> Self {
        HttpCounts {
            requests: 0,
            responses: 0,
            by_code: vec![0; 1000],
            parse_errors: [0; 5],
            bytes_sent: 0,
            bytes_received: 0,
            body_bytes: 0,
        }
    }
}

impl HttpCounts {
    fn add(&mut self, o: &HttpCounts) {
        self.requests += o.requests;
        self.responses += o.responses;
        for (a, b) in self.by_code.iter_mut().zip(&o.by_code) {
            *a += b;
        }
        for (a, b) in self.parse_errors.iter_mut().zip(&o.parse_errors) {
            *a += b;
        }
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        self.body_bytes += o.body_bytes;
    }
}

/// One slot's HTTP state (one per attempt slot, reused).
#[derive(Debug, Clone, Default)]
pub(crate) struct HttpSlot {
    parser: ResponseParser,
    /// Request bytes written so far.
    sent: usize,
    /// A response byte has been read (time to first byte recorded).
    first: bool,
    /// The response is complete (with `--close server` the slot then waits for the FIN).
    done: bool,
}

/// A worker's HTTP side: the encoded requests, the slots' state, counters and histograms.
#[derive(Debug)]
pub(crate) struct HttpWorker {
    requests: Vec<Vec<u8>>,
    head_request: bool,
    slots: Vec<HttpSlot>,
    scratch: Box<[u8]>,
    /// Whole run.
    pub total: HttpCounts,
    /// Measured window.
    pub measured: HttpCounts,
    /// Response latency (intended start → response complete), measured, ns.
    pub response: Latency,
    /// Time to first byte (intended start → first response byte read), measured, ns.
    pub first_byte: Latency,
}

impl HttpWorker {
    /// The HTTP side of a worker with `slots` slots, histograms up to `high_ns`.
    pub(crate) fn new(
        req: &HttpRequest,
        targets: &[SocketAddr],
        slots: usize,
        high_ns: u64,
    ) -> Self {
        HttpWorker {
            requests: targets.iter().map(|&t| req.encode(t)).collect(),
            head_request: req.is_head(),
            slots: vec![HttpSlot::default(); slots],
            scratch: vec![0; 16 * 1024].into_boxed_slice(),
            total: HttpCounts::default(),
            measured: HttpCounts::default(),
            response: Latency::new(high_ns),
            first_byte: Latency::new(high_ns),
        }
    }

    /// Adds another worker's counters and histograms.
    pub(crate) fn add(&mut self, o: &HttpWorker) {
        self.total.add(&o.total);
        self.measured.add(&o.measured);
        self.response.add(&o.response);
        self.first_byte.add(&o.first_byte);
    }

    fn count(&mut self, measured: bool, f: impl Fn(&mut HttpCounts)) {
        f(&mut self.total);
        if measured {
            f(&mut self.measured);
        }
    }
}

/// What a slot's HTTP step ended with.
pub(crate) enum Step {
    /// Waiting for more (write room or bytes).
    Wait,
    /// The exchange is over: close the connection.
    Finish,
    /// A socket error (errno) after the handshake.
    Failed(i32),
}

impl crate::worker::Worker<'_> {
    /// Handshake done on slot `i` (seen at `t`): reset its parser and send the request.
    pub(crate) fn http_begin(&mut self, i: usize) -> Step {
        let Some(h) = self.http.as_mut() else {
            return Step::Wait;
        };
        let head = h.head_request;
        let s = &mut h.slots[i];
        s.parser.reset(head);
        s.sent = 0;
        s.first = false;
        s.done = false;
        self.http_send(i)
    }

    /// Writes the rest of slot `i`'s request (MSG_NOSIGNAL); counts it when complete.
    pub(crate) fn http_send(&mut self, i: usize) -> Step {
        let (target, measured) = {
            let s = self.slab.get(i);
            (s.target as usize, s.measured)
        };
        let Some(h) = self.http.as_mut() else {
            return Step::Wait;
        };
        let req = &h.requests[target];
        let slot = &mut h.slots[i];
        if slot.sent >= req.len() {
            return Step::Wait;
        }
        let Some(sock) = self.slab.get(i).sock.as_ref() else {
            return Step::Finish;
        };
        loop {
            match sock.send_with_flags(&req[slot.sent..], libc::MSG_NOSIGNAL) {
                Ok(n) => {
                    slot.sent += n;
                    if slot.sent == req.len() {
                        let len = req.len() as u64;
                        h.count(measured, |c| {
                            c.requests += 1;
                            c.bytes_sent += len;
                        });
                        return Step::Wait;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Step::Failed(e.raw_os_error().unwrap_or(libc::EIO)),
            }
        }
    }

    /// Reads what slot `i` has (until EAGAIN, the end of the response, or the FIN) at `t` and
    /// feeds the parser; records time to first byte and response latency (from the intended
    /// start), the status and the bytes.
    pub(crate) fn http_read(&mut self, i: usize, t: u64) -> Step {
        let (intended, measured) = {
            let s = self.slab.get(i);
            (s.intended_ns, s.measured)
        };
        if t > self.slab.get(i).deadline_ns {
            return Step::Failed(libc::ETIMEDOUT);
        }
        let wait_fin = self.cfg.close == crate::config::CloseMode::Server;
        let Some(h) = self.http.as_mut() else {
            return Step::Finish;
        };
        let Some(mut sock) = self.slab.get(i).sock.as_ref() else {
            return Step::Finish;
        };
        loop {
            let n = match std::io::Read::read(&mut sock, &mut h.scratch) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Step::Failed(e.raw_os_error().unwrap_or(libc::EIO)),
            };
            let slot = &mut h.slots[i];
            if n > 0 && !slot.first {
                slot.first = true;
                if measured {
                    h.first_byte.record(t.saturating_sub(intended));
                }
            }
            let result = if n == 0 {
                slot.parser.eof().map(|()| true)
            } else {
                slot.parser.feed(&h.scratch[..n])
            };
            let slot = &mut h.slots[i];
            let nb = n as u64;
            match result {
                Ok(true) if !slot.done => {
                    slot.done = true;
                    let (code, body) = (slot.parser.status(), slot.parser.body_bytes());
                    if measured {
                        h.response.record(t.saturating_sub(intended));
                    }
                    h.count(measured, |c| {
                        c.responses += 1;
                        c.by_code[usize::from(code) % 1000] += 1;
                        c.body_bytes += body;
                        c.bytes_received += nb;
                    });
                    if n == 0 || !wait_fin {
                        return Step::Finish;
                    }
                }
                Ok(_) => {
                    h.count(measured, |c| c.bytes_received += nb);
                    if n == 0 {
                        return Step::Finish;
                    }
                }
                Err(e) => {
                    let k = ParseError::ALL.iter().position(|&x| x == e).unwrap_or(0);
                    h.count(measured, |c| {
                        c.parse_errors[k] += 1;
                        c.bytes_received += nb;
                    });
                    return Step::Finish;
                }
            }
        }
    }
}

/// The HTTP results of a run (`--http`). Counts are of the measured window unless named
/// `total_*`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpReport {
    /// The request's method and path.
    pub request: String,
    /// Requests written completely.
    pub requests: u64,
    /// Complete responses (any status).
    pub responses: u64,
    /// Complete responses by status class: `1xx` (101 only) .. `5xx`, and `other` for codes
    /// outside 100–599; classes without a response are left out.
    pub status_classes: BTreeMap<String, u64>,
    /// Complete responses by status code, every code but 2xx.
    pub non_2xx_codes: BTreeMap<u16, u64>,
    /// Responses that could not be read, by [`ParseError::name`] (a failure class each).
    pub parse_errors: BTreeMap<String, u64>,
    /// Request bytes written.
    pub bytes_sent: u64,
    /// Response bytes read (heads, bodies, chunk framing).
    pub bytes_received: u64,
    /// Body bytes of complete responses (for chunked ones the chunk data only).
    pub body_bytes: u64,
    /// Whole run (warm-up included): requests written completely.
    pub total_requests: u64,
    /// Whole run: complete responses.
    pub total_responses: u64,
    /// Whole run: parse errors, all kinds.
    pub total_parse_errors: u64,
    /// Response latency, ns: intended start → response complete (measured responses).
    #[serde(serialize_with = "crate::report::summary")]
    pub response: hdrhistogram::Histogram<u64>,
    /// Time to first byte, ns: intended start → first response byte read.
    #[serde(serialize_with = "crate::report::summary")]
    pub first_byte: hdrhistogram::Histogram<u64>,
    /// Values above the response histogram's range.
    pub response_overflow: Overflow,
    /// Values above the first-byte histogram's range.
    pub first_byte_overflow: Overflow,
}

impl HttpReport {
    /// The report of the merged workers.
    pub(crate) fn of(req: &HttpRequest, h: HttpWorker) -> HttpReport {
        let m = &h.measured;
        let mut status_classes = BTreeMap::new();
        let mut non_2xx_codes = BTreeMap::new();
        for (code, &n) in m.by_code.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let class = if (100..600).contains(&code) {
                format!("{}xx", code / 100)
            } else {
                "other".to_string()
            };
            *status_classes.entry(class).or_insert(0) += n;
            if !(200..300).contains(&code) {
                non_2xx_codes.insert(code as u16, n);
            }
        }
        HttpReport {
            request: format!("{} {}", req.method, req.path),
            requests: m.requests,
            responses: m.responses,
            status_classes,
            non_2xx_codes,
            parse_errors: ParseError::ALL
                .iter()
                .zip(m.parse_errors)
                .filter(|&(_, n)| n > 0)
                .map(|(e, n)| (e.name().to_string(), n))
                .collect(),
            bytes_sent: m.bytes_sent,
            bytes_received: m.bytes_received,
            body_bytes: m.body_bytes,
            total_requests: h.total.requests,
            total_responses: h.total.responses,
            total_parse_errors: h.total.parse_errors.iter().sum(),
            response_overflow: h.response.overflow(),
            first_byte_overflow: h.first_byte.overflow(),
            response: h.response.hist,
            first_byte: h.first_byte.hist,
        }
    }

    /// Responses with a 2xx status.
    pub fn ok(&self) -> u64 {
        self.status_classes.get("2xx").copied().unwrap_or(0)
    }

    /// Parse errors, all kinds.
    pub fn parse_errors_total(&self) -> u64 {
        self.parse_errors.values().sum()
    }

    /// Summaries of the two histograms (response, first byte).
    pub fn summaries(&self) -> (HistogramSummary, HistogramSummary) {
        (
            HistogramSummary::of(&self.response),
            HistogramSummary::of(&self.first_byte),
        )
    }
}

/// Writes the HTTP part of a load report: requests and responses per second, status classes
/// and non-2xx codes, parse errors (each a failure class), bytes, and the two latency histograms.
pub(crate) fn render(
    out: &mut std::fmt::Formatter<'_>,
    h: &HttpReport,
    measured_secs: f64,
) -> std::fmt::Result {
    use common::numfmt;
    use std::fmt::Write;
    let per_sec = |n: u64| {
        if measured_secs > 0.0 {
            numfmt::fixed(n as f64 / measured_secs, 1)
        } else {
            "-".into()
        }
    };
    writeln!(
        out,
        "  http:        {} requests, {} responses ({} responses/s), {} parse errors",
        numfmt::count(h.requests),
        numfmt::count(h.responses),
        per_sec(h.responses),
        numfmt::count(h.parse_errors_total())
    )?;
    let mut classes = String::new();
    for (c, n) in &h.status_classes {
        let _ = write!(classes, " {c} {}", numfmt::count(*n));
    }
    let mut codes = String::new();
    for (c, n) in &h.non_2xx_codes {
        let _ = write!(codes, " {c}: {}", numfmt::count(*n));
    }
    writeln!(
        out,
        "               status:{}{}",
        if classes.is_empty() {
            " none"
        } else {
            &classes
        },
        if codes.is_empty() {
            String::new()
        } else {
            format!(" (non-2xx by code:{codes})")
        }
    )?;
    for (name, n) in &h.parse_errors {
        writeln!(
            out,
            "               parse error {name}: {} (a failure: the response could not be read)",
            numfmt::count(*n)
        )?;
    }
    writeln!(
        out,
        "               bytes: {} sent, {} received ({} body bytes in complete responses)",
        numfmt::count(h.bytes_sent),
        numfmt::count(h.bytes_received),
        numfmt::count(h.body_bytes)
    )?;
    let (resp, fb) = h.summaries();
    crate::render::hist(out, "response (scheduled start -> complete)  ", &resp)?;
    crate::render::overflow(out, &h.response_overflow)?;
    crate::render::hist(out, "first byte (scheduled start -> 1st byte)", &fb)?;
    crate::render::overflow(out, &h.first_byte_overflow)
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
        };
        assert_eq!(
            r.encode("[::1]:80".parse().unwrap()),
            b"POST /x?y=1 HTTP/1.1\r\nConnection: close\r\nHost: example.test\r\nX-A: b\r\n\
              Content-Length: 3\r\n\r\nabc"
        );
        assert!(r.validate().is_ok());
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
                body: vec![],
            };
            assert!(r.validate().is_err(), "{m} {p} {h}");
        }
    }
}
