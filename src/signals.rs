//! SIGINT/SIGTERM handling: the first signal sets a stop flag the running command polls (so it can
//! stop cleanly and still print its report and write its record); a second one exits at once with
//! the conventional 128+signo code.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Installs the handlers and returns the flag that turns true on the first SIGINT or SIGTERM.
///
/// # Errors
/// If sigaction(2) fails (it does not on Linux for these signals).
pub fn stop_flag() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Order matters: the conditional shutdown is registered first so that it sees the flag as
        // it was before this signal set it.
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&flag))?;
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(flag)
}

/// True once a stop was asked for.
pub fn stopped(flag: &AtomicBool) -> bool {
    flag.load(Ordering::Relaxed)
}
