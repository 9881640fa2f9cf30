//! The binary's error kinds beyond `anyhow`: bad input (exit code 2), [`common::error::BadInput`].

pub use common::error::BadInput;

/// Builds a bad-input error (exit code 2) from a message that says what is wrong and how to fix
/// it.
pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}
