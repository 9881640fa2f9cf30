//! One load run inside a record: [`PhaseRecord`] and its parts.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::histogram::{decode_histogram, encode_histogram, HistogramError};
use super::profile::KernelProfile;

/// How load was offered in a phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pattern {
    /// Open loop: attempts start at intended times regardless of completions (no coordinated
    /// omission); latency is measured from the intended start.
    Open {
        /// Intended attempts per second.
        rate_per_sec: f64,
        /// Inter-arrival times: `"uniform"` or `"poisson"`.
        arrival: Arrival,
    },
    /// Closed loop: a fixed number of connections in flight; a new attempt starts when one
    /// completes. Measures the peak rate.
    Closed {
        /// Connections in flight.
        concurrency: u32,
    },
}

/// Arrival process of an open-loop phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced attempts.
    #[default]
    Uniform,
    /// Exponentially distributed gaps (a Poisson process).
    Poisson,
}

impl Default for Pattern {
    fn default() -> Self {
        Pattern::Closed { concurrency: 0 }
    }
}

/// Which histogram of a phase: every histogram a [`Histograms`] holds has one kind here, and
/// [`Latency::ALL`] lists them all, so code that handles "every histogram" (merging records,
/// checking that a record's histograms decode, writing `.hlog` files) iterates over
/// [`Latency::ALL`] and cannot forget one ([`Histograms::encoded`] names every field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Latency {
    /// Intended start of the attempt → connect completion (SYN-ACK received).
    Handshake,
    /// `socket()` call → connect completion.
    Service,
    /// Intended start → first byte from the server (includes accept-queue wait).
    FirstByte,
    /// `--http`: intended start → HTTP response complete.
    HttpResponse,
    /// `--http`: intended start → first response byte (time to first byte).
    HttpFirstByte,
    /// `--tls`: TCP handshake seen complete → TLS handshake done (full and resumed together).
    TlsHandshake,
    /// `--tls`: the same, full handshakes only (no session resumed).
    TlsFull,
    /// `--tls`: the same, resumed handshakes only (a session ticket or ID).
    TlsResumed,
    /// `bench` with its own server: the client's handshake completion → the server's accept
    /// of that connection (the time it sat in the listener's accept queue, [`AcceptQueue`]).
    AcceptQueueWait,
    /// Open loop: the generator's own lag, actual start − scheduled start (not a latency of
    /// the connection: the others that count from the scheduled start include it).
    GeneratorLag,
}

impl Latency {
    /// Every histogram kind, in report order.
    pub const ALL: [Latency; 10] = [
        Latency::Handshake,
        Latency::Service,
        Latency::FirstByte,
        Latency::HttpResponse,
        Latency::HttpFirstByte,
        Latency::TlsHandshake,
        Latency::TlsFull,
        Latency::TlsResumed,
        Latency::AcceptQueueWait,
        Latency::GeneratorLag,
    ];

    /// The latencies of the connections: every kind but [`Latency::GeneratorLag`], in report
    /// order (a unit test checks it against [`Latency::ALL`] and [`Latency::of_connections`]).
    pub const CONNECTIONS: [Latency; 9] = [
        Latency::Handshake,
        Latency::Service,
        Latency::FirstByte,
        Latency::HttpResponse,
        Latency::HttpFirstByte,
        Latency::TlsHandshake,
        Latency::TlsFull,
        Latency::TlsResumed,
        Latency::AcceptQueueWait,
    ];

    /// The field name in the record: `handshake`, `service`, `first_byte`, `http_response`,
    /// `http_first_byte`, `tls_handshake`, `tls_full`, `tls_resumed`, `accept_queue_wait`,
    /// `generator_lag`.
    pub fn name(self) -> &'static str {
        match self {
            Latency::Handshake => "handshake",
            Latency::Service => "service",
            Latency::FirstByte => "first_byte",
            Latency::HttpResponse => "http_response",
            Latency::HttpFirstByte => "http_first_byte",
            Latency::TlsHandshake => "tls_handshake",
            Latency::TlsFull => "tls_full",
            Latency::TlsResumed => "tls_resumed",
            Latency::AcceptQueueWait => "accept_queue_wait",
            Latency::GeneratorLag => "generator_lag",
        }
    }

    /// Whether it is a latency of the connections (every kind but the generator's own lag,
    /// which `report` and `bench` print on a line of their own).
    pub fn of_connections(self) -> bool {
        self != Latency::GeneratorLag
    }
}

/// The HTTP counts of a phase run with `load --http` (measured part): one request per
/// connection. Absent in records of runs without `--http` and in older records.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HttpCounts {
    /// The request's method and path (`GET /`); merged records keep it when all agree, else
    /// `mixed`.
    pub request: String,
    /// Requests written completely.
    pub requests: u64,
    /// Complete responses (any status).
    pub responses: u64,
    /// Complete responses by status class (`2xx`, `4xx`, ..., `other`).
    pub status_classes: BTreeMap<String, u64>,
    /// Complete responses by status code, every code but 2xx.
    pub non_2xx_codes: BTreeMap<u16, u64>,
    /// Responses that could not be read, by kind (`head`, `truncated`, ...): each a failed
    /// attempt (also in the phase's `failures` as `HTTP parse error: KIND`).
    pub parse_errors: BTreeMap<String, u64>,
    /// Complete responses (in `responses`) that came before their request was written
    /// completely (the server answered early, e.g. 413). Absent in older records (0).
    #[serde(default)]
    pub early_responses: u64,
    /// Request bytes written to the socket (accepted by `send(2)` into the send buffer, of
    /// requests cut short too); the part still in the buffer when the connection was reset or
    /// closed with RST never left the host.
    pub bytes_sent: u64,
    /// Response bytes read (heads, bodies, chunk framing).
    pub bytes_received: u64,
    /// Body bytes of complete responses.
    pub body_bytes: u64,
}

impl HttpCounts {
    /// Adds another phase's counts (`merge`).
    pub fn add(&mut self, o: &HttpCounts) {
        if self.request != o.request {
            self.request = "mixed".into();
        }
        self.requests += o.requests;
        self.responses += o.responses;
        for (k, v) in &o.status_classes {
            *self.status_classes.entry(k.clone()).or_insert(0) += v;
        }
        for (k, v) in &o.non_2xx_codes {
            *self.non_2xx_codes.entry(*k).or_insert(0) += v;
        }
        for (k, v) in &o.parse_errors {
            *self.parse_errors.entry(k.clone()).or_insert(0) += v;
        }
        self.early_responses += o.early_responses;
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        self.body_bytes += o.body_bytes;
    }
}

/// The accept-queue wait of a phase (`bench` with its own server: server and load in one
/// process, one clock): per connection, the client's handshake completion (the load worker saw
/// its connect complete) → the server's accept (its engine saw the accepted connection), joined
/// by the client's address and port. Its histogram is [`Histograms::accept_queue_wait`]. With
/// Little's law (mean number waiting = accept rate × mean wait) it is checked against the
/// listeners' accept-queue length sampled during the phase. Absent in older records and in
/// records of `load`/`server` alone.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AcceptQueue {
    /// Why the wait was not measured (an external server, an engine that cannot stamp); the
    /// other fields are then 0/`None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_measured: Option<String>,
    /// 1 connection in this many was stamped (by a hash of its key, the same on both sides).
    pub sample_every: u32,
    /// Connections joined (measured window): the histogram's samples.
    pub joined: u64,
    /// Joined connections the server accepted before the client saw its handshake complete
    /// (their wait is recorded as 0).
    pub accepted_first: u64,
    /// Client stamps that joined nothing (a key whose count differed on the two sides: a stamp
    /// buffer full, a connection the server never accepted).
    pub unmatched_client: u64,
    /// Server stamps that joined nothing (as `unmatched_client`).
    pub unmatched_server: u64,
    /// Stamps lost to a full buffer, both sides.
    pub stamps_full: u64,
    /// Mean wait of the joined connections, ns.
    pub mean_wait_ns: f64,
    /// The accept rate Little's law uses: the phase's successes per second.
    pub accept_rate_per_sec: f64,
    /// Little's law: `accept_rate_per_sec × mean_wait_ns`, connections waiting on average.
    pub littles_law_depth: f64,
    /// The listeners' accept-queue length (summed over the SO_REUSEPORT group, /proc net
    /// `tcp` rx_queue of the LISTEN sockets, = sk_ack_backlog), mean of the samples taken in the
    /// measured window; `None` when none could be read.
    pub sampled_depth: Option<f64>,
    /// The largest sampled length.
    pub sampled_depth_max: u64,
    /// Samples taken in the measured window.
    pub depth_samples: u64,
    /// Interval between samples, µs.
    pub depth_every_us: u64,
    /// Samples the measured window should have held (its length over the interval): fewer
    /// taken means the sampler was held off the CPU, and its mean is then no time average.
    /// 0 in records written before it was kept.
    #[serde(default)]
    pub depth_samples_expected: u64,
    /// Whether the sampler ran as a real-time thread (SCHED_FIFO), woken on time whatever the
    /// benchmark CPUs were doing; `false` in older records.
    #[serde(default)]
    pub depth_sampler_realtime: bool,
    /// Why Little's law cannot be held against the listeners' length in this phase, whatever
    /// the figures (the io_uring server: its multishot accept moves connections off the
    /// listener into its completion queue, where the wait goes on unseen by the length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_comparable: Option<String>,
}

/// [`AcceptQueue::littles_law_check`]: Little's law against the sampled accept-queue length.
#[derive(Debug, Clone, PartialEq)]
pub enum LittleCheck {
    /// Within [`LITTLE_TOLERANCE`] of the sampled length.
    Agree,
    /// Further apart than [`LITTLE_TOLERANCE`]: the relative difference (Little's − sampled) /
    /// sampled.
    Differ(f64),
    /// Not compared, and why.
    NotCompared(String),
}

/// How far Little's law may be from the sampled accept-queue length and agree: 20% of the
/// sampled length (issue 35).
pub const LITTLE_TOLERANCE: f64 = 0.2;

/// The least mean number waiting (either figure) at which they are compared.
pub const LITTLE_MIN_DEPTH: f64 = 1.0;

/// The largest share of joined connections accepted before the load worker saw their
/// handshake complete at which they are compared: above it the load worker ran late enough
/// that the waits (which start at its stamp) are short.
pub const LITTLE_LATE_CLIENT: f64 = 0.05;

impl AcceptQueue {
    /// Little's law against the sampled length, or why they are not compared: nothing
    /// sampled; a sampler held off the CPU (under 80% of its samples: its mean is of the times
    /// it ran, not of the phase); a load worker that ran late (over 5% of the connections accepted
    /// before it saw them complete); a server whose queue the length does not show
    /// ([`AcceptQueue::not_comparable`]); under [`LITTLE_MIN_DEPTH`] waiting, where the queue
    /// is empty in most samples and the wait (which starts when the load worker saw its
    /// handshake complete, after the kernel queued the connection) is of the order of the
    /// load worker's own delay, so neither figure is a measurement of the other.
    pub fn littles_law_check(&self) -> LittleCheck {
        let Some(sampled) = self.sampled_depth else {
            return LittleCheck::NotCompared("the accept-queue length could not be sampled".into());
        };
        if let Some(why) = &self.not_comparable {
            return LittleCheck::NotCompared(why.clone());
        }
        if self.depth_samples_expected > 0
            && (self.depth_samples as f64) < 0.8 * self.depth_samples_expected as f64
        {
            return LittleCheck::NotCompared(format!(
                "the sampler took {} of {} samples (held off the CPU), so its mean is not the phase's",
                self.depth_samples, self.depth_samples_expected
            ));
        }
        if self.littles_law_depth.max(sampled) < LITTLE_MIN_DEPTH {
            return LittleCheck::NotCompared(
                "under 1 connection waiting on average: the queue is empty in most samples and the wait is of the order of the load worker's own delay in seeing its handshake complete".into(),
            );
        }
        if self.joined > 0 && self.accepted_first as f64 > LITTLE_LATE_CLIENT * self.joined as f64 {
            return LittleCheck::NotCompared(format!(
                "{:.0}% of the connections were accepted before the load worker saw their handshake complete: it ran late (its CPU busy), and every wait, which starts when it saw the handshake, is short by that delay, so Little's law undercounts",
                100.0 * self.accepted_first as f64 / self.joined as f64
            ));
        }
        let rel = (self.littles_law_depth - sampled) / sampled.max(f64::MIN_POSITIVE);
        if rel.abs() <= LITTLE_TOLERANCE {
            LittleCheck::Agree
        } else {
            LittleCheck::Differ(rel)
        }
    }
}

/// The TLS counts of a phase run with `--tls` (measured part). Absent otherwise and in older
/// records. The handshake latency histogram is [`Histograms::tls_handshake`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TlsCounts {
    /// TLS handshakes the client completed.
    pub handshakes: u64,
    /// Of them, full handshakes.
    pub full: u64,
    /// Of them, resumed (a session ticket or ID).
    pub resumed: u64,
    /// Of them, TLS 1.3.
    pub tls13: u64,
    /// Of them, TLS 1.2.
    pub tls12: u64,
    /// Of them, with an ALPN protocol agreed.
    pub alpn_agreed: u64,
    /// Of them, by the cipher suite agreed (rustls' name, e.g. `TLS13_AES_128_GCM_SHA256`).
    /// Empty when unknown: in records before 2026-12-04, and in a merge with one of them (a
    /// partial table would undercount the suites without saying so).
    #[serde(default)]
    pub cipher_suites: BTreeMap<String, u64>,
    /// Of them, by the key exchange group agreed (IANA's name, e.g. `X25519`, `secp256r1`,
    /// `X25519MLKEM768`); a resumed TLS 1.2 handshake has none. Empty when unknown: in records
    /// before 2026-12-07, and in a merge with one of them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<String, u64>,
    /// Failed handshakes by class (`TLS alert CertificateUnknown sent`, `TLS handshake EOF`,
    /// ...), each also in the phase's `failures`.
    pub failures: BTreeMap<String, u64>,
}

impl TlsCounts {
    /// Adds another phase's counts (`merge`).
    pub fn add(&mut self, o: &TlsCounts) {
        let unknown = |t: &TlsCounts| t.handshakes > 0 && t.cipher_suites.is_empty();
        let suites_unknown = unknown(self) || unknown(o);
        // Every full handshake agrees on a group: full ones without a group table are of a
        // record that did not count them.
        let no_groups = |t: &TlsCounts| t.full > 0 && t.groups.is_empty();
        let groups_unknown = no_groups(self) || no_groups(o);
        self.handshakes += o.handshakes;
        self.full += o.full;
        self.resumed += o.resumed;
        self.tls13 += o.tls13;
        self.tls12 += o.tls12;
        self.alpn_agreed += o.alpn_agreed;
        for (k, v) in &o.cipher_suites {
            *self.cipher_suites.entry(k.clone()).or_insert(0) += v;
        }
        if suites_unknown {
            self.cipher_suites.clear();
        }
        for (k, v) in &o.groups {
            *self.groups.entry(k.clone()).or_insert(0) += v;
        }
        if groups_unknown {
            self.groups.clear();
        }
        for (k, v) in &o.failures {
            *self.failures.entry(k.clone()).or_insert(0) += v;
        }
    }

    /// The classes of a phase's failure table that are TLS handshake failures (their names
    /// start with `TLS `).
    pub fn failures_of(failures: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
        failures
            .iter()
            .filter(|(k, _)| k.starts_with("TLS "))
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }
}

/// A phase's histograms, each HdrHistogram V2 + DEFLATE in base64 ([`encode_histogram`]),
/// values in nanoseconds, covering the measured part only (warm-up excluded). Each field has its
/// kind in [`Latency`]; read and write them by kind ([`Histograms::encoded`],
/// [`Histograms::set`]) where every histogram is meant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Histograms {
    /// Handshake latency (intended start → connect completion).
    pub handshake: String,
    /// Service latency (`socket()` → connect completion).
    pub service: String,
    /// Time to first byte; `None` unless the server greets (`--mode greet`).
    pub first_byte: Option<String>,
    /// Open loop: the generator's own lag (actual start − scheduled start), one value per
    /// measured start; handshake latency includes it. `None` in closed loop and older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_lag: Option<String>,
    /// `--http`: response latency (intended start → response complete). `None` otherwise and
    /// in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_response: Option<String>,
    /// `--http`: time to first response byte (intended start → first byte read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_first_byte: Option<String>,
    /// `--tls`: TLS handshake latency (TCP handshake seen complete → TLS handshake done), full
    /// and resumed handshakes together. `None` otherwise and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake: Option<String>,
    /// `bench` with its own server: the accept-queue wait (client's handshake completion →
    /// server's accept, [`AcceptQueue`]). `None` otherwise and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_queue_wait: Option<String>,
    /// `--tls`: the TLS handshake latency of full handshakes only. `None` without TLS and in
    /// records written before full and resumed were kept apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_full: Option<String>,
    /// `--tls`: the TLS handshake latency of resumed handshakes only (empty when none resumed).
    /// `None` as [`Histograms::tls_full`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_resumed: Option<String>,
}

impl Histograms {
    /// Encodes the histograms of a phase.
    pub fn encode(
        handshake: &Histogram<u64>,
        service: &Histogram<u64>,
        first_byte: Option<&Histogram<u64>>,
    ) -> Histograms {
        Histograms {
            handshake: encode_histogram(handshake),
            service: encode_histogram(service),
            first_byte: first_byte.map(encode_histogram),
            ..Histograms::default()
        }
    }

    /// The encoded text of one histogram (`None`: not measured).
    pub fn encoded(&self, which: Latency) -> Option<&str> {
        // Every field by name, without `..`: a field added to the struct does not compile
        // until it is named here, and one named but given no kind below is an unused variable
        // (denied by clippy): every histogram a record holds has its kind in `Latency::ALL`.
        let Histograms {
            handshake,
            service,
            first_byte,
            generator_lag,
            http_response,
            http_first_byte,
            tls_handshake,
            tls_full,
            tls_resumed,
            accept_queue_wait,
        } = self;
        match which {
            Latency::Handshake => Some(handshake),
            Latency::Service => Some(service),
            Latency::FirstByte => first_byte.as_deref(),
            Latency::HttpResponse => http_response.as_deref(),
            Latency::HttpFirstByte => http_first_byte.as_deref(),
            Latency::TlsHandshake => tls_handshake.as_deref(),
            Latency::TlsFull => tls_full.as_deref(),
            Latency::TlsResumed => tls_resumed.as_deref(),
            Latency::AcceptQueueWait => accept_queue_wait.as_deref(),
            Latency::GeneratorLag => generator_lag.as_deref(),
        }
    }

    /// Stores one histogram's encoded text (`None`: not measured; the handshake and service
    /// histograms, which every phase has, become empty text).
    pub fn set(&mut self, which: Latency, encoded: Option<String>) {
        match which {
            Latency::Handshake => self.handshake = encoded.unwrap_or_default(),
            Latency::Service => self.service = encoded.unwrap_or_default(),
            Latency::FirstByte => self.first_byte = encoded,
            Latency::HttpResponse => self.http_response = encoded,
            Latency::HttpFirstByte => self.http_first_byte = encoded,
            Latency::TlsHandshake => self.tls_handshake = encoded,
            Latency::TlsFull => self.tls_full = encoded,
            Latency::TlsResumed => self.tls_resumed = encoded,
            Latency::AcceptQueueWait => self.accept_queue_wait = encoded,
            Latency::GeneratorLag => self.generator_lag = encoded,
        }
    }

    /// Decodes one histogram (`Ok(None)`: not measured).
    ///
    /// # Errors
    /// The stored text is not a V2 histogram in base64.
    pub fn decode(&self, which: Latency) -> Result<Option<Histogram<u64>>, HistogramError> {
        self.encoded(which).map(decode_histogram).transpose()
    }
}

/// One second of a phase (measured part), as the load generator saw it; a measured part that is
/// not a whole number of seconds ends with a partial row ([`TimelineRow::length_secs`] below 1),
/// so a phase shorter than a second still has one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineRow {
    /// End of this row, seconds since the measured part began (1.0, 2.0, ..., and e.g. 2.4 for
    /// a partial last row of 0.4 s).
    pub t_secs: f64,
    /// How long this row is, seconds: 1.0 for a whole second, less for a partial one (counts in
    /// it cover only that long; [`TimelineRow::per_sec`] scales them). 1.0 in records written
    /// before partial rows were kept.
    #[serde(default = "one_second")]
    pub length_secs: f64,
    /// Attempts started in this second.
    pub attempts: u64,
    /// Handshakes completed in this second.
    pub successes: u64,
    /// Failed attempts by errno name.
    pub failures: BTreeMap<String, u64>,
    /// Median handshake latency of this second, ns (0 with no successes).
    pub p50_ns: u64,
    /// 99th percentile handshake latency of this second, ns.
    pub p99_ns: u64,
    /// Dropped starts in this second (open loop; schema 2, 0 in older records).
    #[serde(default)]
    pub dropped: u64,
    /// Late starts in this second (open loop; schema 2, 0 in older records).
    #[serde(default)]
    pub late: u64,
    /// This second's handshake histogram (ns), encoded as [`Histograms`] are; `None` in
    /// schema-1 records. `report --hlog` writes one interval per row from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake: Option<String>,
}

fn one_second() -> f64 {
    1.0
}

impl Default for TimelineRow {
    fn default() -> Self {
        TimelineRow {
            t_secs: 0.0,
            length_secs: 1.0,
            attempts: 0,
            successes: 0,
            failures: BTreeMap::new(),
            p50_ns: 0,
            p99_ns: 0,
            dropped: 0,
            late: 0,
            handshake: None,
        }
    }
}

impl TimelineRow {
    /// Start of this row, seconds since the measured part began.
    pub fn start_secs(&self) -> f64 {
        self.t_secs - self.length_secs
    }

    /// Whether the row is shorter than a whole second.
    pub fn is_partial(&self) -> bool {
        self.length_secs < 1.0 - 1e-9
    }

    /// `count` per second of this row's length (0 for a row of no length).
    pub fn per_sec(&self, count: u64) -> f64 {
        if self.length_secs > 0.0 {
            count as f64 / self.length_secs
        } else {
            0.0
        }
    }
}

/// The server side of a phase (absent with `--target`: the server is not ours).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerSide {
    /// Connections each worker accepted, in listener order.
    pub workers: Vec<WorkerAccepts>,
    /// accept() errors by errno name, all workers.
    pub accept_errors: BTreeMap<String, u64>,
    /// Times accepting paused for the EMFILE/ENFILE back-off (~10 ms each), all workers; `None`
    /// in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emfile_backoffs: Option<u64>,
    /// Connections left in the accept queues when the listeners closed (EMFILE while draining;
    /// the kernel resets them), all workers; `None` in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_in_queue: Option<u64>,
    /// `--tls`: TLS handshakes the server completed (TLS accepts), all workers; `None` without
    /// TLS and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_accepted: Option<u64>,
    /// `--tls`: of them, resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_resumed: Option<u64>,
    /// `--tls`: handshakes that failed, by class (`alert UnknownCA received`, `EOF`, errno
    /// names), all workers; empty (absent) without failures and in older records.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tls_failures: BTreeMap<String, u64>,
    /// `server --tls`: whether it offered resumption (`--tls-resume on|off`); `None` without
    /// TLS, in older records, and in a merge of servers that differed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_resumption: Option<bool>,
    /// Merged records only (`connstorm merge` with server records): the server namespaces'
    /// kernel counter deltas over the servers' whole run (`Tcp.PassiveOpens`,
    /// `TcpExt.ListenOverflows`, …), each namespace counted once. The phase's own `counters`
    /// are then the generators' namespaces. Empty (and absent from JSON) otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, i64>,
    /// How evenly the accepts fell on the workers (SO_REUSEPORT's hash, or `--steer cpu`):
    /// computed from [`ServerSide::workers`] when the phase is written
    /// ([`AcceptSpread::of`]); `None` with fewer than two workers or no accept, and in older
    /// records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<AcceptSpread>,
    /// `server --steer cpu` (and the other steerings): of the sampled accepted connections, how
    /// many were accepted on the CPU that processed their packets (SO_INCOMING_CPU); `None`
    /// without steering and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syn_cpu: Option<common::syncpu::SynCpuShare>,
}

impl ServerSide {
    /// Connections accepted by all workers.
    pub fn accepted(&self) -> u64 {
        self.workers.iter().map(|w| w.accepted).sum()
    }

    /// The spread of [`ServerSide::workers`]' accepts ([`AcceptSpread::of`]).
    pub fn compute_spread(&self) -> Option<AcceptSpread> {
        let counts: Vec<u64> = self.workers.iter().map(|w| w.accepted).collect();
        AcceptSpread::of(&counts)
    }
}

/// How evenly accepts fell on the server workers of one phase. With SO_REUSEPORT the kernel
/// picks a listener by a hash of the 4-tuple (`reuseport_select_sock`, net/core/sock_reuseport.c),
/// so with C connections over N workers each worker's count is binomial: its coefficient of
/// variation is about √(N/C) when the hash is fair. Few or long-lived flows, or a skewed
/// steering program, show as a larger max ÷ mean.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct AcceptSpread {
    /// Server workers counted.
    pub workers: usize,
    /// Mean accepts per worker.
    pub mean: f64,
    /// The busiest worker's accepts ÷ the mean (1.0 = perfectly even; N = one worker took all).
    pub max_over_mean: f64,
    /// Coefficient of variation of the accepts per worker: population standard deviation ÷
    /// mean (0 = perfectly even).
    pub cv: f64,
}

impl AcceptSpread {
    /// The spread of per-worker accept counts; `None` with fewer than two workers (nothing to
    /// spread over) or no accept at all (no mean to divide by).
    pub fn of(counts: &[u64]) -> Option<AcceptSpread> {
        if counts.len() < 2 {
            return None;
        }
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let n = counts.len() as f64;
        let mean = total as f64 / n;
        let max = counts.iter().copied().max().unwrap_or(0) as f64;
        let var = counts
            .iter()
            .map(|&c| (c as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        Some(AcceptSpread {
            workers: counts.len(),
            mean,
            max_over_mean: max / mean,
            cv: var.sqrt() / mean,
        })
    }
}

/// NET_RX and NET_TX softirqs one CPU ran over a phase (`/proc/softirqs` deltas, warm-up
/// included), and the CPU time its `ksoftirqd/N` thread used: softirq work the kernel deferred
/// to that thread because it did not finish in interrupt exit (`__do_softirq`'s time and restart
/// limits), which then competes with the benchmark's threads for the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NetSoftirqs {
    /// NET_RX softirqs raised and run on this CPU (packets received, loopback included).
    pub net_rx: u64,
    /// NET_TX softirqs (transmit completions and qdisc runs deferred to softirq).
    pub net_tx: u64,
    /// CPU time of `ksoftirqd/N` (utime + stime of `/proc/<pid>/stat`, USER_HZ ticks), ns;
    /// `None` when its thread was not found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ksoftirqd_ns: Option<u64>,
}

/// Accepts of one server worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WorkerAccepts {
    /// CPU the worker was pinned to.
    pub cpu: usize,
    /// Connections it accepted.
    pub accepted: u64,
    /// Exact on-CPU time of the worker thread over the run, ns (CLOCK_THREAD_CPUTIME_ID);
    /// absent where it was not kept (bench phases, older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_run_ns: Option<u64>,
}

/// Work done by one load worker.
///
/// `attempts` and `successes` are the measured part, the window of the phase's own
/// [`PhaseRecord::attempts`] and [`PhaseRecord::successes`]: the rows add up to them (with
/// several workers, plus the handshakes the server never accepted that the phase moved to
/// failures: whose they were is unknown). Records written before 2026-12-07's issue 33 fix kept
/// the whole run there (warm-up included) and have no `run_attempts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LoadWorker {
    /// CPU the worker was pinned to.
    pub cpu: usize,
    /// Attempts it started (measured part).
    pub attempts: u64,
    /// Handshakes it completed (measured part).
    pub successes: u64,
    /// Exact on-CPU time of the worker thread over the whole run (warm-up included), ns
    /// (CLOCK_THREAD_CPUTIME_ID); absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_run_ns: Option<u64>,
    /// Attempts it started over the whole run, warm-up included: the span of `cpu_run_ns`
    /// (its CPU per attempt divides by this); absent in older records (whose `attempts` were
    /// the whole run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_attempts: Option<u64>,
    /// Handshakes it completed over the whole run, warm-up included (the rows add up to the
    /// cross-check's load successes); absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_successes: Option<u64>,
}

impl LoadWorker {
    /// The attempts over the span of [`LoadWorker::cpu_run_ns`] (the whole run): `run_attempts`,
    /// or in older records `attempts` (which were the whole run then).
    pub fn cpu_span_attempts(&self) -> u64 {
        self.run_attempts.unwrap_or(self.attempts)
    }
}

/// CPU time one side used over the phase (warm-up included: the CPU clocks are read around the
/// whole load run), and its figures per connection over the same span.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SideCpu {
    /// User CPU time of the side's threads, ns.
    pub user_ns: u64,
    /// System CPU time of the side's threads, ns (includes softirq work done in their context).
    pub sys_ns: u64,
    /// Wall time the CPU time was taken over, ns.
    pub wall_ns: u64,
    /// CPUs the side ran on (for utilisation: `sys_ns / (wall_ns × cpus)`).
    pub cpus: usize,
    /// User CPU µs per connection the server accepted over the same span; `null` with no
    /// connection, and when the phase's measured part had no success
    /// ([`PhaseRecord::forget_unmeasured`]: schema-1 records stored 0 there, older schema-2 ones
    /// the warm-up's figure; the reader turns both into `null`).
    pub us_per_conn_user: Option<f64>,
    /// System CPU µs per connection; `null` as `us_per_conn_user`.
    pub us_per_conn_sys: Option<f64>,
    /// Exact on-CPU time of the side's threads, ns (the scheduler's sum_exec_runtime: schedstat
    /// or CLOCK_THREAD_CPUTIME_ID). Absent in records from older builds. Prefer it to
    /// `user_ns + sys_ns`, which kernels without CONFIG_VIRT_CPU_ACCOUNTING_GEN sample at ticks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_ns: Option<u64>,
    /// `run_ns` per connection, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us_per_conn_run: Option<f64>,
    /// Of the side's CPU time, the load workers' spin passes that found nothing to do (waiting
    /// for a due start, `--spin`), ns: not work. Absent when there was none (closed loop,
    /// `--spin 0s`) and in records from older builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_ns: Option<u64>,
    /// `spin_ns` per connection, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us_per_conn_spin: Option<f64>,
}

impl SideCpu {
    /// Builds the figures from CPU times and the number of connections they served.
    ///
    /// Per-connection figures are `None` when `connections` is 0 (a per-connection figure
    /// with no connection is not 0: it does not exist).
    pub fn new(user_ns: u64, sys_ns: u64, wall_ns: u64, cpus: usize, connections: u64) -> SideCpu {
        let per = |ns: u64| (connections > 0).then(|| ns as f64 / 1e3 / connections as f64);
        SideCpu {
            user_ns,
            sys_ns,
            wall_ns,
            cpus,
            us_per_conn_user: per(user_ns),
            us_per_conn_sys: per(sys_ns),
            run_ns: None,
            us_per_conn_run: None,
            spin_ns: None,
            us_per_conn_spin: None,
        }
    }

    /// Adds the time spent spinning before due starts (see [`SideCpu::spin_ns`]); nothing
    /// when it is 0.
    pub fn with_spin_ns(mut self, spin_ns: u64, connections: u64) -> SideCpu {
        if spin_ns > 0 {
            self.spin_ns = Some(spin_ns);
            self.us_per_conn_spin =
                (connections > 0).then(|| spin_ns as f64 / 1e3 / connections as f64);
        }
        self
    }

    /// Adds the exact on-CPU time (see [`SideCpu::run_ns`]).
    pub fn with_run_ns(mut self, run_ns: u64, connections: u64) -> SideCpu {
        self.run_ns = Some(run_ns);
        self.us_per_conn_run = (connections > 0).then(|| run_ns as f64 / 1e3 / connections as f64);
        self
    }

    /// CPU µs of work per connection: the exact on-CPU figure when the record has it
    /// ([`SideCpu::us_per_conn_run`]), else user + system, less the spin before due starts
    /// ([`SideCpu::us_per_conn_spin`]); `None` with no connection.
    pub fn us_per_conn(&self) -> Option<f64> {
        let all = self
            .us_per_conn_run
            .or_else(|| Some(self.us_per_conn_user? + self.us_per_conn_sys?))?;
        Some((all - self.us_per_conn_spin.unwrap_or(0.0)).max(0.0))
    }

    /// System time as a percentage of the side's CPU capacity (`sys_ns / (wall_ns × cpus)`),
    /// 0..=100; `None` when `wall_ns` or `cpus` is 0 (nothing to share).
    pub fn sys_pct(&self) -> Option<f64> {
        sys_pct_of([self])
    }
}

/// `Σ sys_ns / Σ (wall_ns × cpus)` over some sides, in percent; `None` with no capacity.
fn sys_pct_of<'a>(sides: impl IntoIterator<Item = &'a SideCpu>) -> Option<f64> {
    let (sys, cap) = sides.into_iter().fold((0.0, 0.0), |(s, c), side| {
        (
            s + side.sys_ns as f64,
            c + side.wall_ns as f64 * side.cpus as f64,
        )
    });
    (cap > 0.0).then(|| sys / cap * 100.0)
}

impl CpuUsage {
    /// "sys %" as `compare` and `report` use it: the system CPU time of the server and load
    /// workers together as a share of their CPU capacity (wall time × the CPUs each side ran
    /// on), in percent; `None` with no capacity. Kernel work per connection shows here.
    pub fn sys_pct(&self) -> Option<f64> {
        sys_pct_of(self.server.iter().chain([&self.load]))
    }
}

/// CPU time of both sides.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuUsage {
    /// The server's workers (`None` with `--target`).
    pub server: Option<SideCpu>,
    /// The load generator's workers.
    pub load: SideCpu,
}

/// Our counts checked against the kernel's for the same span (warm-up included).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CrossCheck {
    /// Connections the server accepted (`None` with `--target`).
    pub server_accepted: Option<u64>,
    /// Handshakes the load generator completed.
    pub load_successes: u64,
    /// Attempts the load generator started over the same span (load records: the whole run,
    /// warm-up included); `None` in bench records and records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_attempts: Option<u64>,
    /// Delta of `Tcp.PassiveOpens` (server namespace).
    pub kernel_passive_opens: Option<i64>,
    /// Delta of `Tcp.ActiveOpens` (load namespace).
    pub kernel_active_opens: Option<i64>,
    /// All present counts agree (exactly in `--netns`, within other traffic on the host), the
    /// client's handshakes with the server's accepts too: `false` when the server never
    /// accepted some of them ([`CrossCheck::never_accepted`]; records of older builds said
    /// `true` there, which the reader corrects).
    pub agree: bool,
    /// How they were compared and why they differ, for people.
    pub note: String,
}

impl CrossCheck {
    /// Handshakes the client completed that the server never accepted: `load_successes −
    /// server_accepted` over the same span (warm-up included), 0 when the server is not ours
    /// or accepted as many. Any makes the counts disagree (`agree: false`): the client's
    /// handshakes and the server's accepts differ, even when the kernel's counters explain why.
    pub fn never_accepted(&self) -> u64 {
        self.server_accepted
            .map_or(0, |a| self.load_successes.saturating_sub(a))
    }
}

/// One load run: bench has `"peak"` (closed loop) and `"latency"` (open loop); a sweep has one
/// phase per step (`"step-1"`, ...).
///
/// Counts cover the measured part (warm-up excluded) unless a field says otherwise.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PhaseRecord {
    /// Phase name: `"peak"`, `"latency"`, `"step-3"`, ...
    pub name: String,
    /// How load was offered.
    pub pattern: Pattern,
    /// Offered attempts per second (open loop); `None` for closed loop.
    pub offered_per_sec: Option<f64>,
    /// Successful handshakes per second over the measured part (`successes / measured_secs`);
    /// `None` (`null`) when the measured part had no success: nothing was measured, and a rate
    /// of 0 would read as a measurement ([`PhaseRecord::rates`]). Records written before this
    /// stored 0 there, which the reader turns into `None`.
    pub achieved_per_sec: Option<f64>,
    /// Successful handshakes per minute (`achieved_per_sec × 60`); `None` as `achieved_per_sec`.
    pub cpm: Option<f64>,
    /// Length of the measured part, seconds.
    pub measured_secs: f64,
    /// Wall-clock start of the measured part (warm-up excluded), ms since the Unix epoch
    /// (schema 2; `None` in older records). Equals [`RunInfo::started_unix_ms`] +
    /// [`PhaseRecord::start_offset_ms`], so a clock step during the run does not move it.
    ///
    /// [`RunInfo::started_unix_ms`]: crate::record::RunInfo::started_unix_ms
    #[serde(default)]
    pub start_unix_ms: Option<u64>,
    /// Start of the measured part on the monotonic clock, ms after the run started (schema 2).
    #[serde(default)]
    pub start_offset_ms: Option<f64>,
    /// Attempts started.
    pub attempts: u64,
    /// Handshakes completed.
    pub successes: u64,
    /// Failed attempts by errno name (`"ECONNREFUSED"`, `"ETIMEDOUT"`, `"EADDRNOTAVAIL"`, ...).
    pub failures: BTreeMap<String, u64>,
    /// Open loop: attempts started later than intended because the generator fell behind.
    pub late: u64,
    /// Open loop: intended attempts not started (in-flight bound reached).
    pub dropped: u64,
    /// Attempts still waiting for their handshake when the run was interrupted: neither successes
    /// nor failures, so `attempts = successes + Σ failures + abandoned` (0 in records written
    /// before it was kept).
    #[serde(default)]
    pub abandoned: u64,
    /// Latency histograms (ns).
    pub histograms: Histograms,
    /// Per-second rows of the measured part.
    pub timeline: Vec<TimelineRow>,
    /// Server side (`None` with `--target`).
    pub server: Option<ServerSide>,
    /// Load workers.
    pub load_workers: Vec<LoadWorker>,
    /// CPU time per side.
    pub cpu: CpuUsage,
    /// Kernel counter deltas over the phase (warm-up included): `"Tcp.ActiveOpens"`,
    /// `"TcpExt.ListenOverflows"`, `"softnet.dropped"`, ...
    pub counters: BTreeMap<String, i64>,
    /// Our counts against the kernel's.
    pub cross_check: Option<CrossCheck>,
    /// Settings of the server's network namespace that explain how handshakes fare, read at the
    /// end of the phase: sysctls by name (`"net.ipv4.tcp_syncookies"`,
    /// `"net.netfilter.nf_conntrack_count"`, ...) and the listen backlog asked for
    /// (`"listen_backlog"`). Absent in older records; input of the diagnosis.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, i64>,
    /// Busy share of each CPU the benchmark ran on during the phase, percent 0..=100 (from
    /// /proc/stat: user + nice + system + irq + softirq ticks over wall time), keyed by CPU.
    /// Absent in older records.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cpu_busy_pct: BTreeMap<usize, f64>,
    /// Softirq share of each CPU the benchmark ran on, percent of the phase's wall time (the
    /// `softirq` column of /proc/stat; kernels without CONFIG_IRQ_TIME_ACCOUNTING charge softirq
    /// work done in a task's context to the task instead, so it is a floor). Absent in older
    /// records.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cpu_softirq_pct: BTreeMap<usize, f64>,
    /// NET_RX/NET_TX softirqs and `ksoftirqd/N` CPU time of each CPU the benchmark ran on, over
    /// the phase (warm-up included), keyed by CPU ([`NetSoftirqs`]). Absent in older records
    /// and where `/proc/softirqs` could not be read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub net_softirqs: BTreeMap<usize, NetSoftirqs>,
    /// `--profile`: the kernel profile of the measured part ([`KernelProfile`]); absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<KernelProfile>,
    /// `load --http`: the HTTP counts ([`HttpCounts`]); its two latency histograms are in
    /// [`Histograms::http_response`] and [`Histograms::http_first_byte`]. Absent otherwise and
    /// in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpCounts>,
    /// `--tls`: the TLS counts ([`TlsCounts`]); the handshake histogram is
    /// [`Histograms::tls_handshake`]. Absent otherwise and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsCounts>,
    /// `bench`: the accept-queue wait's counts and its Little's-law check ([`AcceptQueue`]).
    /// Absent in older records and without `bench`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_queue: Option<AcceptQueue>,
}

impl PhaseRecord {
    /// What contradicts in this phase's TLS counts (a record edited by hand or damaged), or
    /// `None`: every client handshake is full or resumed, TLS 1.3 or 1.2, at most one ALPN,
    /// suite and key exchange group each, at most one per attempt, and without `--http` each is
    /// a success (the handshake is the exchange); a server's resumed TLS accepts are some of its
    /// TLS accepts. The fields and values, e.g. `tls.full 5 + tls.resumed 0 ≠ tls.handshakes
    /// 100`. `merge` and the record commands (`report`, `compare`, `plot`) refuse such a record.
    pub fn tls_counts_contradiction(&self) -> Option<String> {
        if let Some(t) = &self.tls {
            let n = t.handshakes;
            if t.full.checked_add(t.resumed) != Some(n) {
                return Some(format!(
                    "tls.full {} + tls.resumed {} ≠ tls.handshakes {n}",
                    t.full, t.resumed
                ));
            }
            if t.tls13.checked_add(t.tls12) != Some(n) {
                return Some(format!(
                    "tls.tls13 {} + tls.tls12 {} ≠ tls.handshakes {n}",
                    t.tls13, t.tls12
                ));
            }
            if t.alpn_agreed > n {
                return Some(format!(
                    "tls.alpn_agreed {} > tls.handshakes {n}",
                    t.alpn_agreed
                ));
            }
            for (name, table) in [("cipher_suites", &t.cipher_suites), ("groups", &t.groups)] {
                let sum = table.values().try_fold(0u64, |a, &v| a.checked_add(v));
                if sum.is_none_or(|s| s > n) {
                    return Some(format!(
                        "the tls.{name} counts add up to {} > tls.handshakes {n}",
                        sum.map_or_else(|| "more than 2^64".to_string(), |s| s.to_string())
                    ));
                }
            }
            if n > self.attempts {
                return Some(format!(
                    "tls.handshakes {n} > attempts {} (one handshake per attempt at most)",
                    self.attempts
                ));
            }
            if self.http.is_none() && n > self.successes {
                return Some(format!(
                    "tls.handshakes {n} > successes {} (without --http each TLS handshake is a success)",
                    self.successes
                ));
            }
        }
        if let Some(srv) = &self.server {
            if let (Some(acc), Some(res)) = (srv.tls_accepted, srv.tls_resumed) {
                if res > acc {
                    return Some(format!(
                        "server.tls_resumed {res} > server.tls_accepted {acc}"
                    ));
                }
            }
        }
        None
    }

    /// The achieved rate per second and per minute of `successes` in `measured_secs`: `None`
    /// for both when nothing succeeded or nothing was measured (a phase without a success has
    /// no rate, not a rate of 0; `load --format json` prints its CPM as `null` too).
    pub fn rates(successes: u64, measured_secs: f64) -> (Option<f64>, Option<f64>) {
        if successes == 0 || measured_secs <= 0.0 || !measured_secs.is_finite() {
            return (None, None);
        }
        let per_sec = successes as f64 / measured_secs;
        (Some(per_sec), Some(per_sec * 60.0))
    }

    /// Sets [`PhaseRecord::achieved_per_sec`] and [`PhaseRecord::cpm`] from the successes and the
    /// measured time ([`PhaseRecord::rates`]).
    pub fn set_rates(&mut self) {
        (self.achieved_per_sec, self.cpm) = PhaseRecord::rates(self.successes, self.measured_secs);
    }

    /// Whether the measured part had at least one success: without one, rates and CPU per
    /// connection do not exist (`null`), and the phase measured nothing.
    pub fn measured(&self) -> bool {
        self.successes > 0
    }

    /// Clears what a phase without a success cannot have: its rates and every per-connection
    /// CPU figure (the CPU time itself stays). The CPU figures divide the whole phase's CPU time
    /// by its connections, warm-up included; with no success in the measured part that would
    /// be warm-up connections passed off as the measurement. Writers call it when they build a
    /// phase, the reader on every record (older builds stored 0 or the warm-up's figures) but a
    /// server record's (`server --out`: its phase counts accepts, not successes, and its CPU
    /// per connection is per accept).
    pub fn forget_unmeasured(&mut self) {
        if self.measured() {
            return;
        }
        self.achieved_per_sec = None;
        self.cpm = None;
        for side in self.cpu.server.iter_mut().chain([&mut self.cpu.load]) {
            side.us_per_conn_user = None;
            side.us_per_conn_sys = None;
            side.us_per_conn_run = None;
        }
    }

    /// What in this phase contradicts itself, or `None`: a figure that is not a finite,
    /// non-negative number; successes above attempts; successes without a measured time; a rate
    /// that does not follow from `successes / measured_secs` (`cpm = 60 × achieved_per_sec`,
    /// relative tolerance 1e-6), or a rate without a success. A record edited by hand or damaged
    /// so would otherwise print a CPM that was never measured.
    pub fn inconsistency(&self) -> Option<String> {
        let figures = [
            ("measured_secs", Some(self.measured_secs)),
            ("achieved_per_sec", self.achieved_per_sec),
            ("cpm", self.cpm),
            ("offered_per_sec", self.offered_per_sec),
        ];
        for (name, v) in figures {
            if let Some(v) = v.filter(|v| !v.is_finite() || *v < 0.0) {
                return Some(format!("{name} is {v}, not a finite number ≥ 0"));
            }
        }
        if self.successes > self.attempts {
            return Some(format!(
                "successes {} exceed attempts {}",
                crate::numfmt::count(self.successes),
                crate::numfmt::count(self.attempts)
            ));
        }
        if let Some(what) = self.load_workers_contradiction() {
            return Some(what);
        }
        if self.successes > 0 && self.measured_secs <= 0.0 {
            return Some(format!(
                "{} successes in a measured time of {} s",
                crate::numfmt::count(self.successes),
                self.measured_secs
            ));
        }
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()) + 1e-9;
        let show = |v: Option<f64>| v.map_or_else(|| "null".to_string(), |v| v.to_string());
        match (
            PhaseRecord::rates(self.successes, self.measured_secs).0,
            self.achieved_per_sec,
        ) {
            (Some(rate), Some(stored)) if !close(stored, rate) => {
                return Some(format!(
                    "achieved_per_sec {stored} is not successes / measured_secs = {} / {} = {rate}",
                    self.successes, self.measured_secs
                ));
            }
            (Some(rate), None) => {
                return Some(format!(
                    "achieved_per_sec is null but successes / measured_secs = {} / {} = {rate}",
                    self.successes, self.measured_secs
                ));
            }
            (None, Some(stored)) => {
                return Some(format!(
                    "achieved_per_sec {stored} without a success in the measured part"
                ));
            }
            _ => {}
        }
        let cpm_ok = match (self.cpm, self.achieved_per_sec) {
            (Some(cpm), Some(rate)) => close(cpm, rate * 60.0),
            (None, None) => true,
            _ => false,
        };
        if !cpm_ok {
            return Some(format!(
                "cpm {} is not 60 × achieved_per_sec {}",
                show(self.cpm),
                show(self.achieved_per_sec)
            ));
        }
        None
    }

    /// What in the load workers' rows contradicts itself or the phase, or `None`: a row's
    /// successes above its attempts; its whole-run counts (`run_attempts`, `run_successes`)
    /// below its measured part or successes above attempts; and, in records that keep the
    /// whole-run counts (whose rows are the measured part), rows that add up to more attempts
    /// than the phase's. Older records' rows held the whole run, so only the rows themselves
    /// are checked there. A worker's on-CPU time may not pass its side's wall time by far (one
    /// thread). A hand edit would otherwise print a worker's CPU per attempt and share from
    /// counts that were never measured.
    fn load_workers_contradiction(&self) -> Option<String> {
        let count = crate::numfmt::count;
        for (i, w) in self.load_workers.iter().enumerate() {
            let row = format!("load_workers[{i}]");
            if w.successes > w.attempts {
                return Some(format!(
                    "{row}: successes {} exceed attempts {}",
                    count(w.successes),
                    count(w.attempts)
                ));
            }
            if let Some(run) = w.run_attempts.filter(|r| *r < w.attempts) {
                return Some(format!(
                    "{row}: run_attempts {} (the whole run) are fewer than attempts {} (its measured part)",
                    count(run),
                    count(w.attempts)
                ));
            }
            if let Some(run) = w.run_successes.filter(|r| *r < w.successes) {
                return Some(format!(
                    "{row}: run_successes {} (the whole run) are fewer than successes {} (its measured part)",
                    count(run),
                    count(w.successes)
                ));
            }
            if let (Some(s), Some(a)) = (w.run_successes, w.run_attempts) {
                if s > a {
                    return Some(format!(
                        "{row}: run_successes {} exceed run_attempts {}",
                        count(s),
                        count(a)
                    ));
                }
            }
        }
        // One thread is on a CPU at most the wall time it ran: a row's on-CPU time far above its
        // side's wall time (2× and 1 s of slack for the thread's set-up outside the side's
        // clocks) was edited (`cpu_run_ns` of 2^64-1 ns printed 18,446,744,073 s on CPU).
        let too_long = |run: Option<u64>, side: Option<&SideCpu>| {
            let (run, side) = (run?, side?);
            (side.wall_ns > 0 && run > side.wall_ns.saturating_mul(2).saturating_add(1_000_000_000))
                .then_some((run, side.wall_ns))
        };
        let server_rows = self.server.as_ref().map_or(&[][..], |s| &s.workers[..]);
        for (i, w) in server_rows.iter().enumerate() {
            if let Some((run, wall)) = too_long(w.cpu_run_ns, self.cpu.server.as_ref()) {
                return Some(format!(
                    "server.workers[{i}]: cpu_run_ns {} is more on-CPU time than one thread has in the server's wall time of {} ns",
                    count(run),
                    count(wall)
                ));
            }
        }
        for (i, w) in self.load_workers.iter().enumerate() {
            if let Some((run, wall)) = too_long(w.cpu_run_ns, Some(&self.cpu.load)) {
                return Some(format!(
                    "load_workers[{i}]: cpu_run_ns {} is more on-CPU time than one thread has in the load's wall time of {} ns",
                    count(run),
                    count(wall)
                ));
            }
        }
        let measured_rows = !self.load_workers.is_empty()
            && self.load_workers.iter().all(|w| w.run_attempts.is_some());
        let rows: u64 = self
            .load_workers
            .iter()
            .fold(0u64, |n, w| n.saturating_add(w.attempts));
        if measured_rows && rows > self.attempts {
            return Some(format!(
                "the load workers' attempts add up to {}, more than the phase's attempts {}",
                count(rows),
                count(self.attempts)
            ));
        }
        None
    }

    /// A stored cross-check that says `agree` while its own figures disagree, or `None`: the
    /// kernel counts every child socket it creates (`Tcp.PassiveOpens`, tcp_create_openreq_child)
    /// and every SYN-SENT (`Tcp.ActiveOpens`), so with `agree` the kernel's passive opens are
    /// never below the server's accepts, and in private namespaces (`exact`, `--netns`) equal to
    /// them (the cross-check). A file edited to say `agree: true` would otherwise print
    /// `cross-check [ok]` beside counts that contradict it.
    pub fn cross_check_contradiction(&self, exact: bool) -> Option<String> {
        let c = self.cross_check.as_ref().filter(|c| c.agree)?;
        let (accepted, passive) = (c.server_accepted?, c.kernel_passive_opens?);
        let passive = passive.max(0) as u64;
        (passive < accepted || (exact && passive != accepted)).then(|| {
            format!(
                "the cross-check says the counts agree, but the server accepted {} and the kernel's PassiveOpens is {}",
                crate::numfmt::count(accepted),
                crate::numfmt::count(passive)
            )
        })
    }

    /// Failed attempts, all causes.
    pub fn failed(&self) -> u64 {
        self.failures.values().sum()
    }

    /// Failed attempts as a fraction of attempts (0 with no attempts).
    pub fn error_ratio(&self) -> f64 {
        if self.attempts == 0 {
            0.0
        } else {
            self.failed() as f64 / self.attempts as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_stored_and_read_under_its_own_name() {
        let connections: Vec<Latency> = Latency::ALL
            .into_iter()
            .filter(|w| w.of_connections())
            .collect();
        assert_eq!(connections, Latency::CONNECTIONS);
        let mut h = Histograms::default();
        for (k, which) in Latency::ALL.into_iter().enumerate() {
            h.set(which, Some(format!("x{k}")));
        }
        let json = serde_json::to_value(&h).unwrap();
        for (k, which) in Latency::ALL.into_iter().enumerate() {
            assert_eq!(h.encoded(which), Some(format!("x{k}").as_str()));
            assert_eq!(json[which.name()], format!("x{k}"), "{}", which.name());
        }
    }

    /// Little's law against the sampled length: within 20% agrees; further apart says by how
    /// much; not compared, with the reason, when nothing was sampled, the sampler was held off
    /// (under 80% of its samples), the server hides part of its queue, or under 1 waits.
    #[test]
    fn littles_law_is_held_against_the_sampled_length_only_where_it_can_be() {
        let q = AcceptQueue {
            littles_law_depth: 11.5,
            sampled_depth: Some(10.0),
            depth_samples: 390,
            depth_samples_expected: 400,
            depth_sampler_realtime: true,
            ..AcceptQueue::default()
        };
        assert_eq!(q.littles_law_check(), LittleCheck::Agree);
        let far = AcceptQueue {
            littles_law_depth: 37.3,
            ..q.clone()
        };
        match far.littles_law_check() {
            LittleCheck::Differ(rel) => assert!((rel - 2.73).abs() < 1e-9, "{rel}"),
            other => panic!("{other:?}"),
        }
        let why = |q: AcceptQueue| match q.littles_law_check() {
            LittleCheck::NotCompared(why) => why,
            other => panic!("{other:?}"),
        };
        assert!(why(AcceptQueue {
            sampled_depth: None,
            ..q.clone()
        })
        .contains("could not be sampled"));
        assert!(why(AcceptQueue {
            depth_samples: 26,
            depth_samples_expected: 160,
            ..q.clone()
        })
        .contains("took 26 of 160 samples"));
        assert!(why(AcceptQueue {
            not_comparable: Some("io_uring".into()),
            ..q.clone()
        })
        .contains("io_uring"));
        assert!(why(AcceptQueue {
            joined: 4_448,
            accepted_first: 561,
            ..q.clone()
        })
        .starts_with("13% of the connections were accepted before the load worker"));
        assert!(why(AcceptQueue {
            littles_law_depth: 0.6,
            sampled_depth: Some(0.3),
            ..q.clone()
        })
        .starts_with("under 1 connection waiting"));
        // An older record (no expected count) is compared on its figures.
        let old = AcceptQueue {
            depth_samples_expected: 0,
            depth_sampler_realtime: false,
            ..q
        };
        assert_eq!(old.littles_law_check(), LittleCheck::Agree);
    }
}
