//! The error kind that means "what the user gave us is wrong": the binary maps it to exit
//! code 2 wherever it sits in an error's chain, and the composition crate (`connstorm-app`)
//! raises it for bad options it only finds while resolving them (CPU lists, `--out`, netem).

/// An error in what the user gave (command line, file, host state): exit code 2.
///
/// The message must say what is wrong and how to fix it (e.g. `"--backlog 0 is outside
/// 1..=2147483647: ..."`). Wrap it in an `anyhow::Error` (`anyhow::Error::new(BadInput(msg))`)
/// or return it as the source of another error; the binary finds it with `downcast_ref` on
/// each link of the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_displays_its_message_only() {
        let e = BadInput("--rate 0/s: give a positive rate".into());
        assert_eq!(e.to_string(), "--rate 0/s: give a positive rate");
        let dynamic: Box<dyn std::error::Error> = Box::new(e.clone());
        assert_eq!(dynamic.downcast_ref::<BadInput>(), Some(&e));
    }
}
