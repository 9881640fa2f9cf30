//! The worker's side of `--http`: per-slot state, sending the request, reading the response
//! through [`super::ResponseParser`], the counters and histograms, and the report and its text.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde::Serialize;

use super::{HttpRequest, ParseError, ResponseParser};
use crate::report::{HistogramSummary, Overflow};
use crate::stats::Latency;

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
    /// Complete responses that came before their request was written completely (the server
    /// answered early, e.g. 413, and stopped reading; the request is not in `requests`).
    pub early_responses: u64,
    /// Request bytes written to the socket (accepted by `send(2)`; of requests cut short too).
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
            early_responses: 0,
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
        self.early_responses += o.early_responses;
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
    /// The request's length, bytes.
    want: usize,
    /// A response byte has been read (time to first byte recorded).
    first: bool,
    /// The response is complete (with `--close server` the slot then waits for the FIN).
    done: bool,
    /// `done` was seen by the worker (the attempt counted a success).
    counted: bool,
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

    /// Resets slot `i` for a new exchange, of the request to target `target`.
    pub(crate) fn reset_slot(&mut self, i: usize, target: usize) {
        let head = self.head_request;
        let want = self.requests[target].len();
        let s = &mut self.slots[i];
        s.parser.reset(head);
        s.sent = 0;
        s.want = want;
        s.first = false;
        s.done = false;
        s.counted = false;
    }

    /// The request for target `target`, counted as written (it goes out through TLS, which
    /// buffers all of it).
    pub(crate) fn take_request(&mut self, i: usize, target: usize, measured: bool) -> &[u8] {
        let len = self.requests[target].len();
        self.slots[i].sent = len;
        self.count(measured, |c| {
            c.requests += 1;
            c.bytes_sent += len as u64;
        });
        &self.requests[target]
    }

    /// Counts slot `i`'s request (to `target`) as written, once per exchange; the io_uring
    /// engine calls it when the request's SEND has completed.
    pub(crate) fn mark_written(&mut self, i: usize, target: usize, measured: bool) {
        if self.slots[i].sent == 0 {
            self.take_request(i, target, measured);
        }
    }

    /// Counts `n` bytes of slot `i`'s request as written when its SEND was cut short (the
    /// io_uring engine; the request itself is not counted).
    pub(crate) fn mark_partial(&mut self, i: usize, n: usize, measured: bool) {
        let s = &mut self.slots[i];
        let n = n.min(s.want.saturating_sub(s.sent));
        s.sent += n;
        self.count_sent(n, measured);
    }

    /// Counts `n` request bytes written by an exchange that has ended (the io_uring engine's
    /// SEND that completed after its slot closed).
    pub(crate) fn count_sent(&mut self, n: usize, measured: bool) {
        self.count(measured, |c| c.bytes_sent += n as u64);
    }

    /// Takes bytes of slot `i`'s response (`data`; empty with `eof` at the server's close)
    /// read at `t`: records time to first byte and response latency (from the `intended`
    /// start), the status and bytes. `None` while more is wanted, else how the exchange ends.
    pub(crate) fn consume(
        &mut self,
        i: usize,
        data: &[u8],
        t: u64,
        intended: u64,
        measured: bool,
        wait_fin: bool,
    ) -> Option<Step> {
        let n = data.len();
        let slot = &mut self.slots[i];
        if n > 0 && !slot.first {
            slot.first = true;
            if measured {
                self.first_byte.record(t.saturating_sub(intended));
            }
        }
        let slot = &mut self.slots[i];
        let result = if n == 0 {
            slot.parser.eof().map(|()| true)
        } else {
            slot.parser.feed(data)
        };
        let nb = n as u64;
        match result {
            Ok(true) if !slot.done => {
                slot.done = true;
                let (code, body) = (slot.parser.status(), slot.parser.body_bytes());
                let early = u64::from(slot.sent < slot.want);
                if measured {
                    self.response.record(t.saturating_sub(intended));
                }
                self.count(measured, |c| {
                    c.responses += 1;
                    c.early_responses += early;
                    c.by_code[usize::from(code) % 1000] += 1;
                    c.body_bytes += body;
                    c.bytes_received += nb;
                });
                if n == 0 || !wait_fin {
                    return Some(Step::Finish);
                }
                None
            }
            Ok(_) => {
                self.count(measured, |c| c.bytes_received += nb);
                (n == 0).then_some(Step::Finish)
            }
            Err(e) => {
                let k = ParseError::ALL.iter().position(|&x| x == e).unwrap_or(0);
                self.count(measured, |c| {
                    c.parse_errors[k] += 1;
                    c.bytes_received += nb;
                });
                Some(Step::Parse(k))
            }
        }
    }

    /// True once, when slot `i`'s response has completed since the last call.
    pub(crate) fn take_complete(&mut self, i: usize) -> bool {
        let s = &mut self.slots[i];
        let fresh = s.done && !s.counted;
        s.counted |= s.done;
        fresh
    }

    /// True when slot `i`'s request has been written completely.
    pub(crate) fn written(&self, i: usize) -> bool {
        let s = &self.slots[i];
        s.sent >= s.want
    }

    /// True when slot `i`'s response is complete.
    pub(crate) fn answered(&self, i: usize) -> bool {
        self.slots[i].done
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
    /// The response could not be read: the parse error's index in [`ParseError::ALL`].
    Parse(usize),
}

impl crate::worker::Worker<'_> {
    /// Handshake done on slot `i` (seen at `t`): reset its parser and send the request
    /// ([`Self::http_send_or_answer`]).
    pub(crate) fn http_begin(&mut self, i: usize, t: u64) -> Step {
        let target = self.slab.get(i).target as usize;
        let Some(h) = self.http.as_mut() else {
            return Step::Wait;
        };
        h.reset_slot(i, target);
        self.http_send_or_answer(i, t)
    }

    /// [`Self::http_send`] at `t`; when the write fails, the response the server may have sent
    /// before it reset the connection decides instead (see [`Self::answer_before`]).
    pub(crate) fn http_send_or_answer(&mut self, i: usize, t: u64) -> Step {
        match self.http_send(i) {
            Step::Failed(e) => self.answer_before(i, t, e),
            step => step,
        }
    }

    /// Slot `i`'s request write failed with `errno` at `t` (ECONNRESET, which `http_send` also
    /// makes of EPIPE: the server reset the connection, e.g. closing it with the body unread after a 413). A complete
    /// response already queued is still read (tcp_recvmsg copies queued data before it reports
    /// the socket's error, net/ipv4/tcp.c): the exchange then ends as that response says, as
    /// on the io_uring engine, whose RECV runs beside a long SEND. Otherwise the write's errno.
    ///
    /// Nothing queued: the write's errno, and nothing else counted. Something queued is read
    /// and parsed as any response: a response cut short is the parse error it is. With
    /// `--close server` a complete response whose connection then ended in the write's error
    /// (no FIN) is a post-connect failure of that errno, as the io_uring engine's RECV of the
    /// FIN reports it (the write took the socket's error, so the read sees only the end).
    fn answer_before(&mut self, i: usize, t: u64, errno: i32) -> Step {
        // recv(2) MSG_PEEK of one byte (non-blocking): queued data is there after a reset too.
        let queued = self.slab.get(i).sock.as_ref().is_some_and(|s| {
            let mut b = [std::mem::MaybeUninit::<u8>::uninit()];
            matches!(s.peek(&mut b), Ok(n) if n > 0)
        });
        if !queued {
            return Step::Failed(errno);
        }
        let read = self.http_read(i, t);
        let wait_fin = self.cfg.close == crate::config::CloseMode::Server;
        match read {
            Step::Finish if wait_fin => Step::Failed(errno),
            Step::Wait => Step::Failed(errno),
            step => step,
        }
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
        let before = slot.sent;
        let step = loop {
            match sock.send_with_flags(&req[slot.sent..], libc::MSG_NOSIGNAL) {
                Ok(n) => {
                    slot.sent += n;
                    if slot.sent == req.len() {
                        break Step::Wait;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break Step::Wait,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // EPIPE is the peer's reset: its RST set the socket's error, which the connect
                // check (SO_ERROR) may already have taken, and closed the connection (tcp_done
                // sets SHUTDOWN_MASK), so send(2) then reports EPIPE, not ECONNRESET
                // (sk_stream_error, net/core/stream.c, from tcp_sendmsg_locked). This engine
                // shuts nothing down before the request is written, so it is the reset, counted
                // as `ECONNRESET`, as the io_uring engine's SEND (which takes no SO_ERROR first)
                // reports it.
                Err(e) => {
                    break Step::Failed(match e.raw_os_error().unwrap_or(libc::EIO) {
                        libc::EPIPE => libc::ECONNRESET,
                        errno => errno,
                    })
                }
            }
        };
        // Every byte that went out counts, of a request cut short too; the request once whole.
        let (wrote, done) = (slot.sent - before, slot.sent == req.len());
        h.count(measured, |c| {
            c.bytes_sent += wrote as u64;
            c.requests += u64::from(done);
        });
        step
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
            let scratch = std::mem::take(&mut h.scratch);
            let step = h.consume(i, &scratch[..n], t, intended, measured, wait_fin);
            h.scratch = scratch;
            if let Some(step) = step {
                return step;
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
    /// Complete responses (in `responses`) that came before their request was written
    /// completely: the server answered early (e.g. 413) and stopped reading. So `responses`
    /// can exceed `requests` by at most this.
    pub early_responses: u64,
    /// Request bytes written to the socket (accepted by `send(2)` into the send buffer), of
    /// requests cut short too. Not all of them left the host: what was still in the send buffer
    /// when the server reset the connection, or when `--close rst` closed it, is discarded by the
    /// kernel (`tcp_disconnect` purges the write queue).
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
            early_responses: m.early_responses,
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
    if h.early_responses > 0 {
        writeln!(
            out,
            "               {} responses came before their request was written completely (the server answered early, e.g. 413, and stopped reading)",
            numfmt::count(h.early_responses)
        )?;
    }
    writeln!(
        out,
        "               bytes: {} written to the socket (accepted by send(2), not all sent: see README), {} received ({} body bytes in complete responses)",
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
