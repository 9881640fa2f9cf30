//! Failed attempts counted by errno in a fixed array (no allocation or formatting on the hot
//! path; the table is [`common::errno::ErrnoCounts`]), turned into `"ECONNREFUSED" → count` maps
//! only at report time, and what each usual cause means.

/// Failure counts by errno: the workspace's one per-errno table ([`common::errno::ErrnoCounts`]:
/// values `1..160` in their own slot, anything else under [`common::errno::OUT_OF_RANGE`]),
/// named with [`common::errno::name`] (unknown values spelled `errno_<n>`).
pub type Failures = common::errno::ErrnoCounts;

use std::collections::BTreeMap;

/// The HTTP parse-error kinds, in [`ParseError::ALL`] order.
const HTTP_PARSE_KINDS: usize = ParseError::ALL.len();

/// Why an HTTP response could not be read (`--http`, [`crate::http::ResponseParser`]). Each is a
/// failure class of its own ([`ProtoFailures`], `HTTP parse error: KIND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The head is not HTTP/1.x (httparse refused it: bad status line, header or version).
    Head,
    /// The head did not end within [`crate::http::MAX_HEAD_BYTES`].
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

/// The name of TLS alert `code` (RFC 8446 §6, as rustls spells it: `UnknownCA`,
/// `BadCertificate`, `HandshakeFailure`; an unassigned code as `Unknown(0x..)`).
pub fn alert_name(code: u8) -> String {
    format!("{:?}", rustls::AlertDescription::from(code))
}

/// Kinds of TLS failure that are neither an alert nor a socket error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsOther {
    /// The server closed the connection (FIN) before the TLS handshake was done.
    Eof,
    /// The peer sent something TLS does not allow here (rustls `InvalidMessage`,
    /// `InappropriateMessage`, `PeerMisbehaved`), without an alert of its own.
    Protocol,
    /// The peer offers nothing this client accepts (rustls `PeerIncompatible`: version, cipher
    /// suites, groups, ALPN).
    Incompatible,
    /// Any other rustls error.
    Other,
}

impl TlsOther {
    const ALL: [TlsOther; 4] = [
        TlsOther::Eof,
        TlsOther::Protocol,
        TlsOther::Incompatible,
        TlsOther::Other,
    ];

    fn name(self) -> &'static str {
        match self {
            TlsOther::Eof => "TLS handshake EOF",
            TlsOther::Protocol => "TLS protocol error",
            TlsOther::Incompatible => "TLS peer incompatible",
            TlsOther::Other => "TLS error",
        }
    }
}

/// Failures after the TCP handshake, in the TLS handshake or the HTTP exchange (`--tls`,
/// `--http`): each is a failed attempt, never also a success. Fixed arrays, counted without
/// allocation; named only at report time ([`Self::add_to_map`]):
/// - `HTTP parse error: KIND` (a [`ParseError`] name), `HTTP ERRNO` (the exchange's
///   socket failed, e.g. `HTTP ECONNRESET`; `HTTP ETIMEDOUT`: no complete response within
///   `--connect-timeout` of the handshake);
/// - `TLS alert NAME sent` (this client refused the server, e.g. `TLS alert CertificateUnknown
///   sent` for a self-signed certificate no `--ca` vouches for), `TLS alert NAME received` (the server refused this
///   client), `TLS ERRNO` (the socket failed during the TLS handshake), and the [`TlsOther`]
///   kinds.
#[derive(Debug, Clone)]
pub struct ProtoFailures {
    http_parse: [u64; HTTP_PARSE_KINDS],
    http_errno: common::errno::ErrnoCounts,
    tls_errno: common::errno::ErrnoCounts,
    tls_alert_sent: [u64; 256],
    tls_alert_received: [u64; 256],
    tls_other: [u64; 4],
    total: u64,
}

impl Default for ProtoFailures {
    fn default() -> Self {
        ProtoFailures {
            http_parse: [0; HTTP_PARSE_KINDS],
            http_errno: Default::default(),
            tls_errno: Default::default(),
            tls_alert_sent: [0; 256],
            tls_alert_received: [0; 256],
            tls_other: [0; 4],
            total: 0,
        }
    }
}

/// One failed attempt after the TCP handshake, by class (what [`ProtoFailures::count_one`]
/// counts): the values the TLS client and the HTTP exchange hand the accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProtoFailure {
    /// The response could not be read.
    HttpParse(ParseError),
    /// The HTTP exchange's socket failed with this errno (`ETIMEDOUT`: no complete response in
    /// time).
    HttpErrno(i32),
    /// The TLS handshake's socket failed with this errno.
    TlsErrno(i32),
    /// The TLS handshake ended with this alert, `sent` by this client or received.
    TlsAlert { code: u8, sent: bool },
    /// Another TLS failure.
    TlsOther(TlsOther),
}

impl ProtoFailures {
    /// Counts one failure of class `f`.
    #[inline]
    pub(crate) fn count_one(&mut self, f: ProtoFailure) {
        match f {
            ProtoFailure::HttpParse(e) => {
                self.http_parse(ParseError::ALL.iter().position(|&x| x == e).unwrap_or(0))
            }
            ProtoFailure::HttpErrno(e) => self.http_errno(e),
            ProtoFailure::TlsErrno(e) => self.tls_errno(e),
            ProtoFailure::TlsAlert { code, sent } => self.tls_alert(code, sent),
            ProtoFailure::TlsOther(k) => self.tls_other(k),
        }
    }

    /// Counts an HTTP parse error (`kind`: its index in [`ParseError::ALL`]).
    #[inline]
    pub fn http_parse(&mut self, kind: usize) {
        self.http_parse[kind.min(HTTP_PARSE_KINDS - 1)] += 1;
        self.total += 1;
    }

    /// Counts an HTTP exchange that failed with `errno`.
    #[inline]
    pub fn http_errno(&mut self, errno: i32) {
        self.http_errno.count(errno);
        self.total += 1;
    }

    /// Counts a TLS handshake whose socket failed with `errno`.
    #[inline]
    pub fn tls_errno(&mut self, errno: i32) {
        self.tls_errno.count(errno);
        self.total += 1;
    }

    /// Counts a TLS handshake that ended with alert `code` (RFC 8446 §6), `sent` by this client
    /// or received from the server.
    #[inline]
    pub fn tls_alert(&mut self, code: u8, sent: bool) {
        let t = if sent {
            &mut self.tls_alert_sent
        } else {
            &mut self.tls_alert_received
        };
        t[usize::from(code)] += 1;
        self.total += 1;
    }

    /// Counts another TLS failure.
    #[inline]
    pub fn tls_other(&mut self, kind: TlsOther) {
        let i = TlsOther::ALL.iter().position(|&k| k == kind).unwrap_or(3);
        self.tls_other[i] += 1;
        self.total += 1;
    }

    /// All counted.
    #[inline]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Adds another table.
    pub fn add(&mut self, o: &ProtoFailures) {
        for (a, b) in self.http_parse.iter_mut().zip(&o.http_parse) {
            *a += b;
        }
        self.http_errno.add(&o.http_errno);
        self.tls_errno.add(&o.tls_errno);
        for (a, b) in self.tls_alert_sent.iter_mut().zip(o.tls_alert_sent.iter()) {
            *a += b;
        }
        for (a, b) in self
            .tls_alert_received
            .iter_mut()
            .zip(o.tls_alert_received.iter())
        {
            *a += b;
        }
        for (a, b) in self.tls_other.iter_mut().zip(&o.tls_other) {
            *a += b;
        }
        self.total += o.total;
    }

    /// Adds the non-zero counts to `map` under their class names (see the type's docs). A name
    /// is formatted only for a count above zero (this runs once a second per worker: formatting
    /// every TLS alert name each time cost ~1,500 allocations a second).
    pub fn add_to_map(&self, map: &mut BTreeMap<String, u64>) {
        let mut put = |n: u64, k: &dyn Fn() -> String| {
            if n > 0 {
                *map.entry(k()).or_insert(0) += n;
            }
        };
        for (e, &n) in ParseError::ALL.iter().zip(&self.http_parse) {
            put(n, &|| format!("HTTP parse error: {}", e.name()));
        }
        for (k, n) in self.http_errno.to_map() {
            put(n, &|| format!("HTTP {k}"));
        }
        for (k, n) in self.tls_errno.to_map() {
            put(n, &|| format!("TLS {k}"));
        }
        for (code, (&s, &r)) in self
            .tls_alert_sent
            .iter()
            .zip(self.tls_alert_received.iter())
            .enumerate()
        {
            let name = || alert_name(code as u8);
            put(s, &|| format!("TLS alert {} sent", name()));
            put(r, &|| format!("TLS alert {} received", name()));
        }
        for (k, &n) in TlsOther::ALL.iter().zip(&self.tls_other) {
            put(n, &|| k.name().to_string());
        }
    }
}

/// What a failure cause means for a connection-rate run and how to fix it, for the causes that
/// have a usual explanation; `None` otherwise.
pub fn explain(name: &str) -> Option<&'static str> {
    Some(match name {
        "EADDRNOTAVAIL" => {
            "port exhaustion: no free ephemeral port for (source IP, destination IP, destination port). \
             Remedies: more --source addresses (any 127.0.0.0/8 on loopback), more targets/ports, \
             --close rst or --close server (no TIME_WAIT on the client), a wider \
             net.ipv4.ip_local_port_range, or net.ipv4.tcp_tw_reuse=1 with net.ipv4.tcp_timestamps=1 (reuse needs timestamps)"
        }
        "ECONNREFUSED" => "nothing listens on the target (RST in answer to the SYN): check the address and that the server runs",
        "ETIMEDOUT" => {
            "no handshake within --connect-timeout (counted from socket()): SYNs dropped (full accept queue or SYN queue, \
             see TcpExt.ListenOverflows) or the server is unreachable, or the handshake completed only after \
             the timeout (see 'completed only after --connect-timeout'); raise the backlog/somaxconn or the timeout"
        }
        "NEVER_ACCEPTED" => {
            "the handshake completed on the client but the server's kernel never created the connection \
             (its accept queue was full: see the kernel counters and the acceptance line below); \
             raise the server's backlog / net.core.somaxconn or make it accept faster"
        }
        "NEVER_ACCEPTED_QUEUED" => {
            "never accepted: in the listener's accept queue at the end. The server's kernel completed the \
             handshake and queued the connection, but the server application had not accept()ed it when \
             the run ended and it was given time to (a stopped, hung or too slow server; see the accept \
             queue line below)"
        }
        "ECONNRESET" | "EPIPE" => {
            "the server reset the connection after the handshake completed (a reset in SYN-SENT is ECONNREFUSED): \
             the server closes with SO_LINGER 0 (server --mode rst), closed a listener with queued connections, \
             or its accept queue was full with net.ipv4.tcp_abort_on_overflow=1 (then it never accepted the \
             connection: see the acceptance line where the server's counters are readable)"
        }
        "TLS alert UnknownCA sent" => {
            "this client did not trust the server's certificate: it is not signed by a CA it was given \
             (a self-signed certificate, e.g. `connstorm server --tls` without --cert) — pass the CA with \
             --ca FILE (the server's certificate itself for a self-signed one), or --insecure to skip the check"
        }
        "TLS alert BadCertificate sent" | "TLS alert CertificateUnknown sent" => {
            "this client refused the server's certificate: a name that does not match the SNI (names are \
             read from the subjectAltName only: a certificate without one, e.g. `openssl req -x509 -subj \
             /CN=host` alone, matches no name), expired or \
             not yet valid, or not usable as a server's own certificate — often a CA certificate served \
             as one (`openssl req -x509` marks its certificate CA:TRUE unless given \
             `-addext basicConstraints=critical,CA:FALSE`; webpki refuses a CA as an end entity): check \
             the certificate (`openssl x509 -noout -text`), --sni, or pass --insecure to skip the check"
        }
        "TLS protocol error" => {
            "the server's bytes were not the TLS expected (a record that does not parse, or a message out \
             of place): most often a server that does not speak TLS on this port (plain HTTP, SSH, a \
             greeting); check that the port serves TLS (`openssl s_client -connect HOST:PORT`) or drop --tls"
        }
        "TLS handshake EOF" => {
            "the server closed the connection during the TLS handshake without an alert: a server that \
             does not speak TLS on this port (it closes on bytes it does not understand), or one that drops \
             handshakes it cannot serve (overloaded, or no common version or cipher and no alert sent)"
        }
        "TLS alert NoApplicationProtocol received" => {
            "the server shares none of the ALPN protocols offered (--alpn): offer one it serves \
             (e.g. --alpn http/1.1), or leave --alpn out to send no ALPN extension"
        }
        "TLS alert DecodeError received" => {
            "the server could not parse this client's handshake message: check --alpn, --sni and \
             --tls-ciphers against what the server accepts"
        }
        "TLS alert HandshakeFailure received" | "TLS alert ProtocolVersion received" => {
            "the server shares no TLS version, cipher suite or key-exchange group with this client: \
             check --tls-version, --tls-ciphers and --tls-groups against what the server accepts"
        }
        "HTTP ETIMEDOUT" => {
            "the server took the connection (the kernel counted it in Tcp.PassiveOpens) but sent no \
             complete response in time: a stopped or overloaded server, or one still waiting for more \
             request (a body shorter than its Content-Length); check the server, or raise \
             --connect-timeout (it also bounds the exchange after the handshake)"
        }
        "EMFILE" => "per-process descriptor limit hit: raise RLIMIT_NOFILE (ulimit -n) or lower --max-in-flight",
        "ENFILE" => "system-wide descriptor limit hit: raise fs.file-max or lower --max-in-flight",
        "ENOBUFS" | "ENOMEM" => "the kernel ran out of socket memory: check net.ipv4.tcp_mem and free memory",
        "ENETUNREACH" => {
            "no route to the target (from connect(2) itself: the route lookup failed and no SYN left, \
             counted in the kernel's Ip.OutNoRoutes): check the address and routing; to 127.0.0.0/8 or ::1 \
             the loopback interface is down, as in a fresh network namespace: `ip link set lo up`"
        }
        "EHOSTUNREACH" => "no route to the target: check the address and routing",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_name_and_merges() {
        let mut a = Failures::default();
        a.count(libc::ECONNREFUSED);
        a.count(libc::ECONNREFUSED);
        a.count(99_999);
        let mut b = Failures::default();
        b.count(libc::EADDRNOTAVAIL);
        a.add(&b);
        assert_eq!(a.total(), 4);
        let m = a.to_map();
        assert_eq!(m["ECONNREFUSED"], 2);
        assert_eq!(m["EADDRNOTAVAIL"], 1);
        assert_eq!(m[common::errno::OUT_OF_RANGE], 1);
        assert!(explain("EADDRNOTAVAIL")
            .unwrap()
            .contains("port exhaustion"));
        // Failure classes of the TLS/HTTP exchange that had no line (found by a breaking try).
        for (class, fix) in [
            ("TLS alert NoApplicationProtocol received", "--alpn"),
            ("TLS alert DecodeError received", "--alpn"),
            ("HTTP ETIMEDOUT", "--connect-timeout"),
        ] {
            assert!(explain(class).is_some_and(|e| e.contains(fix)), "{class}");
        }
    }

    /// Only non-zero counts become classes, with their names: 46 = certificate_unknown.
    #[test]
    fn proto_failures_name_only_what_happened() {
        let mut f = ProtoFailures::default();
        let mut m = BTreeMap::new();
        f.add_to_map(&mut m);
        assert!(m.is_empty(), "{m:?}");
        f.tls_alert(46, true);
        f.tls_alert(46, true);
        f.tls_alert(40, false);
        f.tls_other(TlsOther::Eof);
        f.add_to_map(&mut m);
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m["TLS alert CertificateUnknown sent"], 2, "{m:?}");
        assert_eq!(m["TLS alert HandshakeFailure received"], 1, "{m:?}");
        assert_eq!(m.values().sum::<u64>(), f.total());
    }

    /// Seen: a server limited to P-384 (`server --tls-groups p384`) against a client offering
    /// only X25519 failed every handshake with HandshakeFailure, and the hint named only
    /// --tls-version and --tls-ciphers; the group is the third thing both must share.
    #[test]
    fn a_handshake_failure_hint_names_the_groups_too() {
        for alert in [
            "TLS alert HandshakeFailure received",
            "TLS alert ProtocolVersion received",
        ] {
            let hint = explain(alert).unwrap();
            for opt in ["--tls-version", "--tls-ciphers", "--tls-groups"] {
                assert!(hint.contains(opt), "{alert}: {hint}");
            }
        }
    }
}
