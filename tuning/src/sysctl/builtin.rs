//! The presets shipped inside connstorm: the TOML files of the repository's `presets/`
//! directory (format: presets/README.md), compiled in.

use super::{Preset, PresetError};

/// Built-in preset names, in the order `tune presets` lists them.
pub const BUILTIN_PRESETS: &[&str] = &["c1m-server", "loadgen-client", "low-latency", "throughput"];

fn text(name: &str) -> Option<&'static str> {
    Some(match name {
        "c1m-server" => include_str!("../../../presets/c1m-server.toml"),
        "loadgen-client" => include_str!("../../../presets/loadgen-client.toml"),
        "low-latency" => include_str!("../../../presets/low-latency.toml"),
        "throughput" => include_str!("../../../presets/throughput.toml"),
        _ => return None,
    })
}

/// The built-in preset `name` (origin `builtin:NAME`); `None` for a name not in
/// [`BUILTIN_PRESETS`].
///
/// # Errors
/// [`PresetError`] if a shipped file does not parse (the tests below rule that out).
pub fn builtin_preset(name: &str) -> Option<Result<Preset, PresetError>> {
    text(name).map(|t| Preset::parse_toml(t, &format!("builtin:{name}")))
}

/// The built-in preset `name`, for `--preset NAME`.
///
/// # Errors
/// A message listing [`BUILTIN_PRESETS`] for an unknown name; the parse error's text if it does not
/// parse.
pub fn named_preset(name: &str) -> Result<Preset, String> {
    let Some(p) = builtin_preset(name) else {
        return Err(format!(
            "unknown preset {name:?}: choose one of {} (`connstorm tune presets`), or pass --file",
            BUILTIN_PRESETS.join(", ")
        ));
    };
    p.map_err(|e| e.to_string())
}

/// Every built-in preset, in [`BUILTIN_PRESETS`] order.
///
/// # Errors
/// As [`builtin_preset`].
pub fn builtin_presets() -> Result<Vec<Preset>, PresetError> {
    BUILTIN_PRESETS
        .iter()
        .filter_map(|n| builtin_preset(n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_gives_a_builtin_and_lists_the_names_for_an_unknown_one() {
        assert_eq!(
            named_preset("throughput").unwrap(),
            builtin_preset("throughput").unwrap().unwrap()
        );
        assert_eq!(
            named_preset("nope").unwrap_err(),
            "unknown preset \"nope\": choose one of c1m-server, loadgen-client, low-latency, throughput (`connstorm tune presets`), or pass --file"
        );
    }

    #[test]
    fn every_builtin_parses_under_its_name() {
        let all = builtin_presets().unwrap();
        assert_eq!(all.len(), BUILTIN_PRESETS.len());
        for (n, p) in BUILTIN_PRESETS.iter().zip(all) {
            assert_eq!(p.origin, format!("builtin:{n}"));
            assert!(!p.sysctls.is_empty(), "{n}");
        }
        assert!(builtin_preset("nope").is_none());
    }
}
