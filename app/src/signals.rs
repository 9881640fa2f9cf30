//! SIGINT/SIGTERM handling. The first signal sets a stop flag the running command polls, so it
//! stops cleanly and still prints its report and writes its record. A second signal (two quick
//! Ctrl-Cs) means *hurry*: the command skips what it would still wait for (e.g. `load`'s
//! accept-queue settle), writes what it has — report on stdout, record file — runs its cleanup and
//! exits with the same 128+signo code; only when it has not finished within
//! [`SECOND_SIGNAL_GRACE`] does the signal thread exit for it, after running the registered
//! *cleanup hooks* ([`crate::cleanup`]: the `bench --netns` namespaces, `ab` toggles). A third
//! signal runs the hooks and exits at once. Hooks run on the signal-watching thread, not in a
//! signal handler, so they may do anything (spawn `ip`, write sysctls).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use std::io::Write as _;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

pub use crate::cleanup::on_forced_exit;

/// The first stop signal's number (0: none yet).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// How many SIGINT/SIGTERM arrived.
static COUNT: AtomicU32 = AtomicU32::new(0);

/// How long a command may still take to write its report and record after a second signal
/// before the signal thread runs the cleanup hooks and exits without them: 3 s. After the first
/// signal a command ends within about 1 s (a load worker abandons its in-flight attempts at once;
/// a server's `stop()` returns within 1 s even under sustained overload, issue #9), and writing
/// a record takes milliseconds; 3 s leaves that twice over on a busy 2-CPU host, and is still
/// short against a person's patience for a pressed Ctrl-C.
pub const SECOND_SIGNAL_GRACE: Duration = Duration::from_secs(3);

/// The number of the first SIGINT/SIGTERM received, if any (for the `128+N` exit code).
pub fn received() -> Option<i32> {
    Some(RECEIVED.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// How many SIGINT/SIGTERM have arrived so far.
pub fn count() -> u32 {
    COUNT.load(Ordering::SeqCst)
}

/// True once a second SIGINT/SIGTERM arrived: skip every wait that is not needed to write the
/// report and the record.
pub fn hurry() -> bool {
    COUNT.load(Ordering::SeqCst) >= 2
}

/// Starts the signal-watching thread and returns the flag that turns true on the first SIGINT or
/// SIGTERM.
///
/// # Errors
/// If the handlers cannot be installed or the thread cannot start.
pub fn stop_flag() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let f = Arc::clone(&flag);
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                let _ = RECEIVED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
                let code = 128 + received().unwrap_or(sig);
                f.store(true, Ordering::SeqCst);
                // stderr may be closed (`2>&- `, a pipe to `head`): never panic on it.
                let mut err = std::io::stderr();
                match COUNT.fetch_add(1, Ordering::SeqCst) {
                    0 => {
                        let _ = writeln!(
                            err,
                            "connstorm: stopping (press Ctrl-C again to stop waiting: the report and record are written at once)"
                        );
                    }
                    1 => {
                        let _ = writeln!(
                            err,
                            "connstorm: second signal: writing what there is and exiting (a third signal exits at once)"
                        );
                        let _ = std::thread::Builder::new()
                            .name("signal-grace".into())
                            .spawn(move || {
                                std::thread::sleep(SECOND_SIGNAL_GRACE);
                                let _ = writeln!(
                                    std::io::stderr(),
                                    "connstorm: not finished {} s after the second signal: cleaning up and exiting without the rest",
                                    SECOND_SIGNAL_GRACE.as_secs()
                                );
                                crate::cleanup::run_all();
                                std::process::exit(code);
                            });
                    }
                    _ => {
                        let _ = writeln!(err, "connstorm: third signal: cleaning up and exiting now");
                        crate::cleanup::run_all();
                        std::process::exit(code);
                    }
                }
            }
        })?;
    Ok(flag)
}

/// True once a stop was asked for.
pub fn stopped(flag: &AtomicBool) -> bool {
    flag.load(Ordering::Relaxed)
}
