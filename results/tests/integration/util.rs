//! Helpers shared by the integration tests.

use std::path::PathBuf;

/// Path of a checked-in test file under `tests/data/`.
pub fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}
