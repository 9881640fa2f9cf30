//! [`Endpoint`]: a tiny HTTP/1.1 server for `GET /metrics` on its own thread.
//!
//! Bounded by construction: one request at a time on one thread (a scraper waits its turn),
//! a request head of at most [`MAX_HEAD_BYTES`], [`REQUEST_DEADLINE`] to send it and read the
//! answer, `Connection: close` after every answer. `404` for another path, `405` (with
//! `Allow: GET`) for another method, `400` for a head that does not parse. The thread waits in
//! poll(2) on its socket *and* a pipe, so [`Endpoint::stop`] wakes it at once, even in the
//! middle of a slow client's request, and joins it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout};
use prometheus_client::collector::Collector;
use prometheus_client::registry::Registry;

use super::{OPENMETRICS_CONTENT_TYPE, PREFIX, TEXT004_CONTENT_TYPE};

/// The largest request head read, bytes (request line and headers); a longer one gets `431`.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;

/// How long one request may take from accept to the last byte of the answer; a client slower
/// than that is disconnected.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);

/// Why the endpoint cannot start.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// bind(2) failed: the address is in use, not an address of this host, or a port below
    /// 1024 without privilege.
    #[error("--metrics {addr}: cannot listen there: {source}{hint}", hint = bind_hint(source))]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// bind(2)'s error.
        source: std::io::Error,
    },
    /// The pipe or the thread could not be created.
    #[error("--metrics {addr}: cannot start the metrics thread: {source}")]
    Start {
        /// The address asked for.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
}

impl EndpointError {
    /// True when the address is the user's to fix (exit code 2): every bind failure.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, EndpointError::Bind { .. })
    }
}

fn bind_hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(e) if e == nix::libc::EADDRINUSE => {
            " (another process listens on it: pick another port, or port 0 for a free one)"
        }
        Some(e) if e == nix::libc::EADDRNOTAVAIL => {
            " (not an address of this host: use one of its addresses, 0.0.0.0 or [::])"
        }
        Some(e) if e == nix::libc::EACCES => {
            " (ports below 1024 need CAP_NET_BIND_SERVICE: use a port from 1024 up)"
        }
        _ => "",
    }
}

/// A running `/metrics` endpoint. Dropping it stops it like [`Endpoint::stop`].
#[derive(Debug)]
pub struct Endpoint {
    local_addr: SocketAddr,
    registry: Arc<Mutex<Registry>>,
    wake: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Binds `addr` (port 0: the kernel picks one; see [`Endpoint::local_addr`]) and starts the
    /// serving thread with an empty registry whose names get the `connstorm_` prefix.
    ///
    /// # Errors
    /// [`EndpointError::Bind`] when the address cannot be bound (in use, not local, privileged
    /// port); [`EndpointError::Start`] when the wake-up pipe or the thread cannot be created.
    pub fn start(addr: SocketAddr) -> Result<Endpoint, EndpointError> {
        let listener =
            TcpListener::bind(addr).map_err(|source| EndpointError::Bind { addr, source })?;
        let start = |source| EndpointError::Start { addr, source };
        let local_addr = listener.local_addr().map_err(start)?;
        listener.set_nonblocking(true).map_err(start)?;
        let (wake_rx, wake_tx) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| start(e.into()))?;
        let registry = Arc::new(Mutex::new(Registry::with_prefix(PREFIX)));
        let shared = Arc::clone(&registry);
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || serve(&listener, &wake_rx, &shared))
            .map_err(start)?;
        Ok(Endpoint {
            local_addr,
            registry,
            wake: Some(wake_tx),
            thread: Some(thread),
        })
    }

    /// The bound address, with the real port.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Adds a collector; the next scrape shows its metrics.
    pub fn register(&self, collector: Box<dyn Collector>) {
        self.registry
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .register_collector(collector);
    }

    /// The answer a scrape gets now (OpenMetrics text ending `# EOF`), without HTTP.
    pub fn render(&self) -> String {
        render(&self.registry)
    }

    /// Stops the thread (at once, even mid-request) and joins it. Idempotent.
    pub fn stop(&mut self) {
        // Closing the pipe's write end makes its read end readable (EOF): the thread returns.
        drop(self.wake.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop();
    }
}

fn render(registry: &Mutex<Registry>) -> String {
    let mut body = String::new();
    let reg = registry.lock().unwrap_or_else(|p| p.into_inner());
    // Writing to a String cannot fail; a collector that fails leaves a truncated text, which the
    // scraper rejects (it lacks `# EOF`).
    let _ = prometheus_client::encoding::text::encode(&mut body, &reg);
    body
}

/// The serving loop: wait for a connection or the wake-up, answer one request, repeat.
fn serve(listener: &TcpListener, wake: &OwnedFd, registry: &Mutex<Registry>) {
    loop {
        match wait(&[listener.as_fd(), wake.as_fd()], None) {
            Some(ready) if ready[1] => return,
            Some(ready) if ready[0] => {}
            Some(_) => continue,
            None => return,
        }
        match listener.accept() {
            Ok((stream, _)) => {
                if !answer(stream, wake, registry) {
                    return;
                }
            }
            // EAGAIN (another accept won), ECONNABORTED, EMFILE: try again, after a pause for
            // errors that would repeat at once.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => {
                if wait(&[wake.as_fd()], Some(Duration::from_millis(50))).is_some_and(|r| r[0]) {
                    return;
                }
            }
        }
    }
}

/// Polls `fds` for input (POLLIN; errors and hang-ups count as ready) for at most `timeout`
/// (`None`: forever); returns which are ready, `None` when poll(2) itself fails (not EINTR).
fn wait(fds: &[std::os::fd::BorrowedFd<'_>], timeout: Option<Duration>) -> Option<Vec<bool>> {
    wait_for(fds, PollFlags::POLLIN, timeout)
}

fn wait_for(
    fds: &[std::os::fd::BorrowedFd<'_>],
    first: PollFlags,
    timeout: Option<Duration>,
) -> Option<Vec<bool>> {
    let mut pfds: Vec<PollFd<'_>> = fds
        .iter()
        .enumerate()
        .map(|(i, fd)| PollFd::new(*fd, if i == 0 { first } else { PollFlags::POLLIN }))
        .collect();
    let timeout = match timeout {
        None => PollTimeout::NONE,
        Some(d) => {
            PollTimeout::try_from(d.as_millis().min(60_000) as u32).unwrap_or(PollTimeout::MAX)
        }
    };
    loop {
        match nix::poll::poll(&mut pfds, timeout) {
            Ok(_) => {
                return Some(
                    pfds.iter()
                        .map(|p| p.revents().is_some_and(|r| !r.is_empty()))
                        .collect(),
                )
            }
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return None,
        }
    }
}

/// Answers one request on `stream`; returns false when the endpoint was stopped meanwhile.
fn answer(mut stream: TcpStream, wake: &OwnedFd, registry: &Mutex<Registry>) -> bool {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    if stream.set_nonblocking(true).is_err() {
        return true;
    }
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let response = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        match wait(&[stream.as_fd(), wake.as_fd()], Some(left)) {
            Some(r) if r[1] => return false,
            Some(r) if r[0] => {}
            Some(_) => continue,
            None => return true,
        }
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
        match respond(&head, registry) {
            Some(r) => break r,
            None if head.len() >= MAX_HEAD_BYTES => {
                break plain(
                    431,
                    "Request Header Fields Too Large",
                    "request head too large\n",
                )
            }
            None => {}
        }
    };
    let mut written = 0;
    while written < response.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        match wait_for(
            &[stream.as_fd(), wake.as_fd()],
            PollFlags::POLLOUT,
            Some(left),
        ) {
            Some(r) if r[1] => return false,
            Some(r) if r[0] => {}
            Some(_) => continue,
            None => return true,
        }
        match stream.write(&response[written..]) {
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return true,
        }
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
    true
}

/// The whole response to the request head read so far, or `None` while it is incomplete.
fn respond(head: &[u8], registry: &Mutex<Registry>) -> Option<Vec<u8>> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Partial) => return None,
        Ok(httparse::Status::Complete(_)) => {}
        Err(httparse::Error::TooManyHeaders) => {
            return Some(plain(
                431,
                "Request Header Fields Too Large",
                "too many headers\n",
            ))
        }
        Err(_) => return Some(plain(400, "Bad Request", "malformed HTTP request\n")),
    }
    if req.method != Some("GET") {
        return Some(with_headers(
            405,
            "Method Not Allowed",
            "text/plain; charset=utf-8",
            "Allow: GET\r\n",
            b"only GET /metrics is served\n",
        ));
    }
    let path = req.path.unwrap_or("");
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    if path != "/metrics" {
        return Some(plain(404, "Not Found", "only /metrics is served\n"));
    }
    let accept = req
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("accept"))
        .map(|h| String::from_utf8_lossy(h.value).into_owned())
        .collect::<Vec<_>>()
        .join(",");
    let body = render(registry);
    Some(if prefers_text004(&accept) {
        with_headers(
            200,
            "OK",
            TEXT004_CONTENT_TYPE,
            "",
            super::text004::from_openmetrics(&body).as_bytes(),
        )
    } else {
        with_headers(200, "OK", OPENMETRICS_CONTENT_TYPE, "", body.as_bytes())
    })
}

/// True when the `Accept` header ranks `text/plain` above `application/openmetrics-text`
/// (q-values, RFC 9110 §12.5.1; `*/*` and `type/*` count for both, the more specific entry
/// wins). No header, or a tie: OpenMetrics.
pub fn prefers_text004(accept: &str) -> bool {
    let (mut om, mut text) = ((0.0f64, 0u8), (0.0f64, 0u8));
    for item in accept.split(',') {
        let mut parts = item.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(1.0);
        let rank = |specific: &str, family: &str| -> u8 {
            if media == specific {
                3
            } else if media == family {
                2
            } else if media == "*/*" {
                1
            } else {
                0
            }
        };
        for (slot, r) in [
            (
                &mut om,
                rank("application/openmetrics-text", "application/*"),
            ),
            (&mut text, rank("text/plain", "text/*")),
        ] {
            if r > slot.1 || (r == slot.1 && r > 0 && q > slot.0) {
                *slot = (q, r);
            }
        }
    }
    text.0 > om.0
}

fn plain(code: u16, reason: &str, body: &str) -> Vec<u8> {
    with_headers(
        code,
        reason,
        "text/plain; charset=utf-8",
        "",
        body.as_bytes(),
    )
}

fn with_headers(code: u16, reason: &str, content_type: &str, extra: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_pick_the_format() {
        assert!(!prefers_text004(""));
        assert!(!prefers_text004("*/*"));
        assert!(prefers_text004("text/plain"));
        assert!(prefers_text004("text/plain;version=0.0.4"));
        // What Prometheus 2.x sends: OpenMetrics first.
        assert!(!prefers_text004(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        ));
        assert!(prefers_text004(
            "application/openmetrics-text;q=0.2,text/plain;q=0.9"
        ));
        assert!(!prefers_text004("text/html"));
    }

    fn request(addr: SocketAddr, req: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn other_paths_and_methods_are_refused_and_stop_is_immediate() {
        let mut ep = Endpoint::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = ep.local_addr();
        assert_ne!(addr.port(), 0);
        let ok = request(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains(OPENMETRICS_CONTENT_TYPE), "{ok}");
        assert!(ok.ends_with("# EOF\n"), "{ok}");
        let classic = request(addr, "GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n");
        assert!(classic.contains(TEXT004_CONTENT_TYPE), "{classic}");
        assert!(!classic.contains("# EOF"), "{classic}");
        let nf = request(addr, "GET / HTTP/1.1\r\n\r\n");
        assert!(nf.starts_with("HTTP/1.1 404 "), "{nf}");
        let na = request(addr, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
        assert!(
            na.starts_with("HTTP/1.1 405 ") && na.contains("Allow: GET"),
            "{na}"
        );
        let bad = request(addr, "\x01\x02 nonsense\r\n\r\n");
        assert!(bad.starts_with("HTTP/1.1 400 "), "{bad}");
        // A client that sends half a request and waits: stop still returns at once.
        let mut slow = TcpStream::connect(addr).unwrap();
        slow.write_all(b"GET /met").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let t = Instant::now();
        ep.stop();
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
        assert!(
            TcpStream::connect(addr).is_err(),
            "still listening after stop"
        );
    }

    #[test]
    fn an_address_in_use_is_bad_input() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let err = Endpoint::start(taken.local_addr().unwrap()).unwrap_err();
        assert!(err.is_bad_input());
        assert!(err.to_string().contains("another process listens"), "{err}");
    }
}
