//! The binary's error kinds beyond `anyhow`: bad input (exit code 2).

/// An error in what the user gave us (command line, file, host state): exit code 2.
///
/// Wrap with `anyhow::Error::new(BadInput(msg))` or [`bad_input`]; the message must say what is
/// wrong and how to fix it.
#[derive(Debug)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Builds a bad-input error (exit code 2) from a message.
pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}
