//! The worker's HTTP exchanges (`--http`, [`Exchanges`]): per slot, one request out and one
//! response in, as a state machine over bytes. The engine moves the bytes (send(2)/read(2) at
//! readiness, or IORING_OP_SEND/RECV) and reports what moved: bytes written
//! ([`Exchanges::wrote`], [`Exchanges::mark_written`], [`Exchanges::mark_partial`]), bytes read
//! ([`Exchanges::consume`], fed to the slot's [`ResponseParser`]). The exchange counts requests,
//! responses by status, parse errors and bytes ([`HttpCounts`]) and records the response and
//! first-byte latencies; what the attempt's outcome is, the core decides from the [`Step`] it
//! returns (`crate::core::Core::http_step`).
//!
//! Cost per connection: the request bytes are built once per target before the run; each
//! slot's parser keeps its head buffer; nothing is allocated per connection.

use std::net::SocketAddr;

use super::ResponseParser;
use crate::config::HttpRequest;
use crate::failures::ParseError;
use crate::latency::Latency;

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
    pub parse_errors: [u64; ParseError::ALL.len()],
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
            parse_errors: [0; ParseError::ALL.len()],
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
struct HttpSlot {
    parser: ResponseParser,
    /// The target whose request this exchange sends.
    target: usize,
    /// Request bytes written so far.
    sent: usize,
    /// The request's length, bytes.
    want: usize,
    /// A response byte has been read (time to first byte recorded).
    first: bool,
    /// The response is complete (with `--close server` the slot then waits for the FIN).
    done: bool,
    /// `done` was seen by the core (the attempt counted a success).
    counted: bool,
}

/// A worker's HTTP side: the encoded requests, the slots' exchanges, counters and histograms.
#[derive(Debug)]
pub(crate) struct Exchanges {
    requests: Vec<Vec<u8>>,
    head_request: bool,
    slots: Vec<HttpSlot>,
    /// Whole run.
    pub total: HttpCounts,
    /// Measured window.
    pub measured: HttpCounts,
    /// Response latency (intended start → response complete), measured, ns.
    pub response: Latency,
    /// Time to first byte (intended start → first response byte read), measured, ns.
    pub first_byte: Latency,
}

/// What a slot's exchange step ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Waiting for more (write room or bytes).
    Wait,
    /// The exchange is over: close the connection.
    Finish,
    /// A socket error (errno) after the handshake.
    Failed(i32),
    /// The response could not be read.
    Parse(ParseError),
}

impl Exchanges {
    /// The HTTP side of a worker with `slots` slots, histograms up to `high_ns`.
    pub(crate) fn new(
        req: &HttpRequest,
        targets: &[SocketAddr],
        slots: usize,
        high_ns: u64,
    ) -> Self {
        Exchanges {
            requests: targets.iter().map(|&t| req.encode(t)).collect(),
            head_request: req.is_head(),
            slots: vec![HttpSlot::default(); slots],
            total: HttpCounts::default(),
            measured: HttpCounts::default(),
            response: Latency::new(high_ns),
            first_byte: Latency::new(high_ns),
        }
    }

    /// Adds another worker's counters and histograms.
    pub(crate) fn add(&mut self, o: &Exchanges) {
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
        s.target = target;
        s.sent = 0;
        s.want = want;
        s.first = false;
        s.done = false;
        s.counted = false;
    }

    /// The bytes of slot `i`'s request not written yet (empty once it is written).
    pub(crate) fn unsent(&self, i: usize) -> &[u8] {
        let s = &self.slots[i];
        &self.requests[s.target][s.sent.min(s.want)..]
    }

    /// `n` more bytes of slot `i`'s request were written (accepted by send(2)): counted, and
    /// the request once it is whole.
    pub(crate) fn wrote(&mut self, i: usize, n: usize, measured: bool) {
        let s = &mut self.slots[i];
        let n = n.min(s.want.saturating_sub(s.sent));
        s.sent += n;
        let whole = n > 0 && s.sent == s.want;
        self.count(measured, |c| {
            c.bytes_sent += n as u64;
            c.requests += u64::from(whole);
        });
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
                Some(Step::Parse(e))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The exchange without a socket: a request written in two parts counts once, the bytes
    /// of both; a response fed in pieces completes once, with its status, latencies from the
    /// intended start, and the FIN wanted only with `--close server`.
    #[test]
    fn one_exchange_over_bytes_counts_the_request_and_the_response_once() {
        let t: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let mut x = Exchanges::new(&HttpRequest::default(), &[t], 2, 1_000_000_000);
        x.reset_slot(1, 0);
        let want = x.unsent(1).len();
        assert!(want > 10);
        x.wrote(1, 10, true);
        assert_eq!(x.unsent(1).len(), want - 10);
        assert!(!x.written(1));
        x.wrote(1, want, true);
        assert!(x.written(1) && x.unsent(1).is_empty());
        assert_eq!(
            (x.measured.requests, x.measured.bytes_sent),
            (1, want as u64)
        );
        let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(x.consume(1, &resp[..5], 150, 100, true, false), None);
        assert!(!x.answered(1));
        assert_eq!(
            x.consume(1, &resp[5..], 300, 100, true, false),
            Some(Step::Finish)
        );
        assert!(x.answered(1) && x.take_complete(1) && !x.take_complete(1));
        assert_eq!(x.measured.responses, 1);
        assert_eq!(x.measured.by_code[200], 1);
        assert_eq!(x.first_byte.max_ns, 50);
        assert_eq!(x.response.max_ns, 200);
        // With --close server the response completes, then the FIN ends the exchange.
        x.reset_slot(0, 0);
        assert_eq!(x.consume(0, resp, 10, 0, false, true), None);
        assert_eq!(x.consume(0, &[], 20, 0, false, true), Some(Step::Finish));
        assert_eq!((x.total.responses, x.measured.responses), (2, 1));
        // A head that is not HTTP is a parse error of its kind.
        x.reset_slot(0, 0);
        assert_eq!(
            x.consume(0, b"SSH-2.0-x\r\n\r\n", 1, 0, true, false),
            Some(Step::Parse(ParseError::Head))
        );
    }
}
