//! Helpers shared by the integration tests.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Path of a checked-in test file under `tests/data/`.
pub fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Runs a Python 3 script that uses the `hdrh` package (`pip install hdrhistogram==0.10.8`),
/// feeding `stdin`, and returns its stdout parsed as JSON.
///
/// # Panics
/// Loudly, never skipping, if python3 or the `hdrh` module is missing, or the script fails.
pub fn python_hdrh(script: &str, stdin: &str) -> serde_json::Value {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string());
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(format!("import hdrh.histogram, hdrh.log, json, sys\n{script}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run {python} ({e}): the cross-implementation test needs Python 3 with `python3 -m pip install hdrhistogram==0.10.8`")
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'hdrh"),
        "the Python hdrh module is missing: run `python3 -m pip install hdrhistogram==0.10.8`\n{stderr}"
    );
    assert!(out.status.success(), "python script failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "python printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
