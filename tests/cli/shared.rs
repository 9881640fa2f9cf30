//! Helpers every command family's tests use: the binary under test, the CPUs to pin to, a JSON
//! count, and a wait for a listener that does not connect.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The path of the `connstorm` binary under test.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_connstorm")
}

/// A `connstorm` command with stdin closed to /dev/null (a test never types into it).
pub fn command() -> Command {
    let mut c = Command::new(exe());
    c.stdin(Stdio::null());
    c
}

/// The server's and the load's CPU: the first two this process may use (the first for both on
/// a one-CPU machine).
pub fn cpus() -> (String, String) {
    let c = testkit::allowed_cpus();
    let server = c[0].to_string();
    let load = c.get(1).unwrap_or(&c[0]).to_string();
    (server, load)
}

/// A JSON count, or a panic naming the value that is not one.
pub fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Waits until something listens on 127.0.0.1:`port` in this namespace, from
/// /proc/thread-self/net/tcp (state 0A = LISTEN), without connecting (a probe connection would
/// add to the counts).
pub fn wait_listening(port: u16) {
    let want = format!(":{port:04X} 00000000:0000 0A");
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        let t = std::fs::read_to_string("/proc/thread-self/net/tcp").unwrap();
        if t.contains(&want) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nothing listens on port {port} after 10 s");
}
