//! SIGINT/SIGTERM handling. The first signal sets a stop flag the running command polls, so it
//! stops cleanly and still prints its report and writes its record. A second signal exits at once
//! with the conventional 128+signo code — after running the registered *cleanup hooks*, which undo
//! changes to the host that must never be left behind (the `bench --netns` namespaces, `ab`
//! toggles). Hooks run on the signal-watching thread, not in a signal handler, so they may do
//! anything (spawn `ip`, write sysctls).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use std::io::Write as _;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

type Hook = Box<dyn FnOnce() + Send>;

fn hooks() -> &'static Mutex<BTreeMap<u64, Hook>> {
    static HOOKS: OnceLock<Mutex<BTreeMap<u64, Hook>>> = OnceLock::new();
    HOOKS.get_or_init(|| Mutex::new(BTreeMap::new()))
}

static NEXT_HOOK: AtomicU64 = AtomicU64::new(0);

/// The first stop signal's number (0: none yet).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The number of the first SIGINT/SIGTERM received, if any (for the `128+N` exit code).
pub fn received() -> Option<i32> {
    Some(RECEIVED.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// Removes its hook when dropped (the normal path already cleaned up).
#[derive(Debug)]
pub struct HookGuard(u64);

impl Drop for HookGuard {
    fn drop(&mut self) {
        if let Ok(mut h) = hooks().lock() {
            h.remove(&self.0);
        }
    }
}

/// Registers `f` to run if the process is forced to exit by a second signal. Keep the guard for as
/// long as the change exists; dropping it unregisters the hook.
pub fn on_forced_exit(f: impl FnOnce() + Send + 'static) -> HookGuard {
    let id = NEXT_HOOK.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut h) = hooks().lock() {
        h.insert(id, Box::new(f));
    }
    HookGuard(id)
}

fn run_hooks() {
    let all = match hooks().lock() {
        Ok(mut h) => std::mem::take(&mut *h),
        Err(_) => return,
    };
    // Newest first: undo in the reverse order of doing.
    for (_, f) in all.into_iter().rev() {
        f();
    }
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
                    run_hooks();
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
