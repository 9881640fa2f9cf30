//! SIGINT/SIGTERM handling. The first signal sets a stop flag the running command polls, so it
//! stops cleanly and still prints its report and writes its record. A second signal exits at once
//! with the conventional 128+signo code — after running the registered *cleanup hooks* ([`::bench::cleanup`]), which undo
//! changes to the host that must never be left behind (the `bench --netns` namespaces, `ab`
//! toggles). Hooks run on the signal-watching thread, not in a signal handler, so they may do
//! anything (spawn `ip`, write sysctls).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use std::io::Write as _;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

pub use ::bench::cleanup::on_forced_exit;

/// The first stop signal's number (0: none yet).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The number of the first SIGINT/SIGTERM received, if any (for the `128+N` exit code).
pub fn received() -> Option<i32> {
    Some(RECEIVED.load(Ordering::SeqCst)).filter(|&s| s != 0)
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
                // stderr may be closed (`2>&- `, a pipe to `head`): never panic on it.
                let mut err = std::io::stderr();
                if f.swap(true, Ordering::SeqCst) {
                    let _ = writeln!(err, "connstorm: second signal: cleaning up and exiting now");
                    ::bench::cleanup::run_all();
                    std::process::exit(128 + sig);
                }
                let _ = writeln!(
                    err,
                    "connstorm: stopping (press Ctrl-C again to exit at once)"
                );
            }
        })?;
    Ok(flag)
}

/// True once a stop was asked for.
pub fn stopped(flag: &AtomicBool) -> bool {
    flag.load(Ordering::Relaxed)
}
