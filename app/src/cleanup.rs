//! Undo actions for a forced exit. Changes to the host that must never be left behind (the
//! `bench --netns` namespaces, `ab` toggles) register how to undo themselves here for as long as
//! they exist; the binary's signal thread calls [`run_all`] when a second SIGINT/SIGTERM makes it
//! exit without unwinding. The actions run on that thread, not in a signal handler, so they may do
//! anything (spawn `ip`, write sysctls).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

type Hook = Box<dyn FnOnce() + Send>;

fn hooks() -> &'static Mutex<BTreeMap<u64, Hook>> {
    static HOOKS: OnceLock<Mutex<BTreeMap<u64, Hook>>> = OnceLock::new();
    HOOKS.get_or_init(|| Mutex::new(BTreeMap::new()))
}

static NEXT_HOOK: AtomicU64 = AtomicU64::new(0);

/// Removes its action when dropped (the normal path already undid the change).
#[derive(Debug)]
pub struct HookGuard(u64);

impl Drop for HookGuard {
    fn drop(&mut self) {
        if let Ok(mut h) = hooks().lock() {
            h.remove(&self.0);
        }
    }
}

/// Registers `f` to run if the process is forced to exit (see [`run_all`]). Keep the guard for as
/// long as the change exists; dropping it unregisters `f` without running it.
pub fn on_forced_exit(f: impl FnOnce() + Send + 'static) -> HookGuard {
    let id = NEXT_HOOK.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut h) = hooks().lock() {
        h.insert(id, Box::new(f));
    }
    HookGuard(id)
}

/// Runs every registered action once, newest first (undo in the reverse order of doing), and
/// forgets them. For the binary's forced-exit path only.
pub fn run_all() {
    let all = match hooks().lock() {
        Ok(mut h) => std::mem::take(&mut *h),
        Err(_) => return,
    };
    for (_, f) in all.into_iter().rev() {
        f();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn actions_run_newest_first_and_dropped_guards_never_run() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let push = |n: u32| {
            let log = Arc::clone(&log);
            move || log.lock().unwrap().push(n)
        };
        let _first = on_forced_exit(push(1));
        let dropped = on_forced_exit(push(2));
        let _third = on_forced_exit(push(3));
        drop(dropped);
        run_all();
        assert_eq!(*log.lock().unwrap(), [3, 1]);
        run_all();
        assert_eq!(*log.lock().unwrap(), [3, 1], "actions run once");
    }
}
