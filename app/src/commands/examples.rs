//! The examples block of every command's `--help` and man page.
//!
//! Each command defines its examples beside its options, as the text of its `after_help`: the
//! heading [`HEADING`] on a line of its own, then lines indented by two spaces, each either
//! `# what the next commands do` or a command line a person can paste (`connstorm …`, maybe
//! piped or redirected). The block ends at the first line that is not indented (a blank line).
//! The binary adds the exit codes after it; [`split`] takes the block back out of that text,
//! for the man page's EXAMPLES section (`super::man`) and for the test that parses every
//! example.

/// The first line of an examples block.
pub const HEADING: &str = "Examples:";

/// One example: what it does, and the command lines that do it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// The `# …` line before the commands, without `# ` (empty when there is none).
    pub what: String,
    /// The command lines, as typed.
    pub commands: Vec<String>,
}

/// The examples block in `text` (a command's after-help text), and `text` without it (what
/// follows it, e.g. the exit codes, with the blank line between them dropped). No block: no
/// examples, and `text` unchanged.
pub fn split(text: &str) -> (Vec<Example>, String) {
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = lines.iter().position(|l| l.trim_end() == HEADING) else {
        return (Vec::new(), text.to_string());
    };
    let end = lines[start + 1..]
        .iter()
        .position(|l| !l.starts_with("  "))
        .map_or(lines.len(), |i| start + 1 + i);
    let mut examples: Vec<Example> = Vec::new();
    for line in &lines[start + 1..end] {
        let line = line.trim();
        if let Some(what) = line.strip_prefix('#') {
            examples.push(Example {
                what: what.trim().to_string(),
                commands: Vec::new(),
            });
        } else {
            match examples.last_mut() {
                Some(e) => e.commands.push(line.to_string()),
                None => examples.push(Example {
                    what: String::new(),
                    commands: vec![line.to_string()],
                }),
            }
        }
    }
    // Drop the blank lines that separated the block from the text around it.
    let before = lines[..start].join("\n");
    let after = lines[end..]
        .iter()
        .skip_while(|l| l.trim().is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    let rest = match (before.trim().is_empty(), after.is_empty()) {
        (true, _) => after,
        (false, true) => before.trim_end().to_string(),
        (false, false) => format!("{}\n\n{after}", before.trim_end()),
    };
    (examples, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_is_taken_out_and_what_follows_it_kept() {
        let text = "Examples:\n  # Run it\n  connstorm bench\n  connstorm report runs/*.json\n  \
                    # Stop it\n  connstorm man | man -l -\n\nExit codes (every command):\n  0  ok";
        let (examples, rest) = split(text);
        assert_eq!(
            examples,
            [
                Example {
                    what: "Run it".into(),
                    commands: vec![
                        "connstorm bench".into(),
                        "connstorm report runs/*.json".into()
                    ],
                },
                Example {
                    what: "Stop it".into(),
                    commands: vec!["connstorm man | man -l -".into()],
                },
            ]
        );
        assert_eq!(rest, "Exit codes (every command):\n  0  ok");
    }

    #[test]
    fn text_around_the_block_stays_and_no_block_is_no_examples() {
        let (examples, rest) = split("Before.\n\nExamples:\n  connstorm bench\n\nAfter.");
        assert_eq!(examples.len(), 1);
        assert_eq!(examples[0].what, "");
        assert_eq!(rest, "Before.\n\nAfter.");
        let (none, same) = split("Exit codes (every command):\n  0  ok");
        assert!(none.is_empty());
        assert_eq!(same, "Exit codes (every command):\n  0  ok");
    }
}
