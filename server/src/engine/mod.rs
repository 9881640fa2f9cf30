//! The event engines, siblings behind one entry point each (`run(ctx, ready)`):
//! [`uring`] (io_uring multishot accept) and [`epoll`] (mio). [`probe`] says whether io_uring
//! can run here. Shared here: how accept errors are handled.

pub(crate) mod epoll;
pub mod probe;
pub(crate) mod uring;

use std::time::Duration;

/// Most accepts (epoll) or completions (io_uring) a worker handles in one turn of its event loop
/// before it publishes its counters and looks at the stop flag; work left over is taken up on the
/// next turn without waiting for a new event. At the ~5–10 µs a connection costs, that is 1–3 ms
/// per turn, so [`crate::LiveStats`] stay fresh and [`crate::Server::stop`] is seen within a few
/// ms even when connections arrive faster than the worker can accept them (issue 9: an
/// unbounded "accept until EAGAIN" never ends under sustained overload).
pub(crate) const TURN_BUDGET: usize = 256;

/// Pause before accepting again after EMFILE/ENFILE (or ENOBUFS/ENOMEM, or an unexpected error):
/// the connection stays queued, so retrying at once would spin (libuv#690, wai#928); ~10 ms is the
/// figure from nanomsg/eventcore discussions (reported in nanomsg and eventcore design discussions; not a kernel guarantee).
pub(crate) const BACKOFF: Duration = Duration::from_millis(10);

/// What to do after a failed accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AcceptFailure {
    /// Out of descriptors or memory: count, back off [`BACKOFF`], then accept again. The bool says
    /// whether it is EMFILE/ENFILE (counted in `emfile_backoffs`).
    Backoff(bool),
    /// The connection died before it was accepted, or one of the network errors accept(2) says to
    /// treat like EAGAIN: count and accept again at once.
    Transient,
}

/// Classifies an accept errno (accept(2) "Error handling"; ECONNABORTED for a connection reset
/// while queued). Anything unexpected backs off rather than retrying at once, so no error can make
/// a worker spin.
pub(crate) fn classify(errno: i32) -> AcceptFailure {
    match errno {
        libc::EMFILE | libc::ENFILE => AcceptFailure::Backoff(true),
        libc::ECONNABORTED
        | libc::EINTR
        | libc::EPROTO
        | libc::EPERM
        | libc::ENETDOWN
        | libc::ENOPROTOOPT
        | libc::EHOSTDOWN
        | libc::ENONET
        | libc::EHOSTUNREACH
        | libc::EOPNOTSUPP
        | libc::ENETUNREACH => AcceptFailure::Transient,
        _ => AcceptFailure::Backoff(false),
    }
}

/// Runs one worker of an engine on its own thread, over a loopback listener, for the engines'
/// unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use std::net::SocketAddr;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::thread::JoinHandle;

    use socket2::{Domain, Socket, Type};

    use crate::config::Mode;
    use crate::report::Engine;
    use crate::worker::{Ctx, Shared};

    /// A running worker.
    pub(crate) struct Worker {
        /// Where it listens.
        pub(crate) addr: SocketAddr,
        shared: Arc<Shared>,
        thread: JoinHandle<Ctx>,
    }

    /// The engines that can run here: epoll always, io_uring when it works (else the reason is
    /// printed).
    pub(crate) fn engines() -> Vec<Engine> {
        let mut v = vec![Engine::Epoll];
        match super::probe::io_uring() {
            Ok(()) => v.push(Engine::IoUring),
            Err(why) => eprintln!("skipping the io_uring variant: {why}"),
        }
        v
    }

    /// Starts a worker of `engine` in `mode` on 127.0.0.1 (port 0); `setup` may change its
    /// [`Ctx`] (test hooks) before the engine runs. Returns once it is accepting.
    pub(crate) fn start(
        engine: Engine,
        mode: Mode,
        setup: impl FnOnce(&mut Ctx) + Send + 'static,
    ) -> Worker {
        let listener = Socket::new(Domain::IPV4, Type::STREAM.cloexec(), None).unwrap();
        listener
            .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        listener.listen(4096).unwrap();
        let addr = listener.local_addr().unwrap().as_socket().unwrap();
        let shared = Arc::new(Shared::new(1));
        let (tx, rx) = std::sync::mpsc::channel();
        let for_worker = Arc::clone(&shared);
        let thread = std::thread::spawn(move || {
            let mut ctx = Ctx::new(0, 0, listener, mode, for_worker);
            setup(&mut ctx);
            let ready = |r| tx.send(r).unwrap();
            match engine {
                Engine::IoUring => super::uring::run(&mut ctx, ready),
                Engine::Epoll => super::epoll::run(&mut ctx, ready),
            }
            ctx
        });
        rx.recv().unwrap().unwrap();
        Worker {
            addr,
            shared,
            thread,
        }
    }

    impl Worker {
        /// Connections accepted, as last published (at most ~50 ms old).
        pub(crate) fn accepted(&self) -> u64 {
            self.shared.slots[0].accepted.load(Ordering::Relaxed)
        }

        /// Waits (at most `max`) until [`Worker::accepted`] reaches `n`; returns the last count.
        pub(crate) fn wait_accepted(&self, n: u64, max: std::time::Duration) -> u64 {
            let until = std::time::Instant::now() + max;
            loop {
                let got = self.accepted();
                if got >= n || std::time::Instant::now() >= until {
                    return got;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }

        /// Stops the worker (drain as [`crate::Server::stop`] does) and returns its state.
        pub(crate) fn stop(self) -> Ctx {
            self.shared.draining.store(true, Ordering::Relaxed);
            self.thread.join().unwrap()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mode;

    /// Issue 32: a worker's per-fd table starts empty and grows with the connections open at
    /// once, to about twice the highest descriptor; the io_uring engine used to size it to
    /// RLIMIT_NOFILE (up to 2^20 entries) at start.
    #[test]
    fn per_fd_tables_start_empty_and_grow_with_held_connections() {
        use std::net::TcpStream;
        const HELD: usize = 300;
        let highest_fd = || {
            std::fs::read_dir("/proc/self/fd")
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<usize>().ok())
                .max()
                .unwrap()
        };
        for engine in testing::engines() {
            for mode in [Mode::Hold, Mode::Http { body_bytes: 0 }] {
                let idle = testing::start(engine, mode, |_| {}).stop();
                assert_eq!(idle.fd_table_len, 0, "{engine} {mode}: no connection");
                let w = testing::start(engine, mode, |_| {});
                let held: Vec<TcpStream> = (0..HELD)
                    .map(|_| TcpStream::connect(w.addr).unwrap())
                    .collect();
                let got = w.wait_accepted(HELD as u64, Duration::from_secs(10));
                assert_eq!(got, HELD as u64, "{engine} {mode}");
                // Every descriptor the worker holds is at most the process's highest now.
                let bound = 2 * (highest_fd() + 1);
                drop(held);
                let ctx = w.stop();
                let len = ctx.fd_table_len;
                assert!(
                    len > HELD && len <= bound && len.is_power_of_two(),
                    "{engine} {mode}: {len} entries for {HELD} connections held at once \
                     (at most {bound})"
                );
            }
        }
    }

    #[test]
    fn descriptor_exhaustion_backs_off_and_aborts_retry() {
        assert_eq!(classify(libc::EMFILE), AcceptFailure::Backoff(true));
        assert_eq!(classify(libc::ENFILE), AcceptFailure::Backoff(true));
        assert_eq!(classify(libc::ENOBUFS), AcceptFailure::Backoff(false));
        assert_eq!(classify(libc::ECONNABORTED), AcceptFailure::Transient);
        assert_eq!(classify(libc::EINVAL), AcceptFailure::Backoff(false));
    }
}
