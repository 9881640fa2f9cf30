//! The warnings a run record carries, derived from the record itself so that `bench`, `sweep`
//! and `report` say the same thing in the same words: interruption, engine fallback, one line
//! per cause for the whole run ([`crate::diagnosis`]), other drop counters summed over the run,
//! and count mismatches with the kernel.

use crate::record::RunRecord;

/// A non-zero drop or retransmit counter in words (meanings from `results::record`).
fn counter_warning(name: &str, delta: i64) -> String {
    let short = name.rsplit('.').next().unwrap_or(name);
    let what = crate::record::describe_counter(name, delta);
    if crate::record::is_retransmit_counter(name) {
        format!("{short}: {what}")
    } else {
        format!("{short} +{delta}: {what} — drops make this a different experiment")
    }
}

/// Warnings derived from the record itself (so old and new records read the same): interruption,
/// engine fallback, one line per cause for the whole run ([`crate::diagnosis::of_phases`]),
/// other drop counters summed over the run, count mismatches.
pub fn derived(r: &RunRecord) -> Vec<String> {
    let mut w = Vec::new();
    if r.run.interrupted {
        w.push(
            "run interrupted by a signal (SIGINT/SIGTERM): numbers cover only what ran".to_string(),
        );
    }
    if let Some(why) = &r.run.engine_fallback_reason {
        w.push(format!("engine auto fell back to epoll: {why}"));
    }
    let causes: Vec<String> = crate::diagnosis::of_phases(&r.phases)
        .into_iter()
        .map(|c| c.line)
        .collect();
    // A drop counter that no cause line names gets a line of its own.
    let named = |k: &str| {
        let bare = k.rsplit_once('.').map_or(k, |(_, b)| b);
        causes
            .iter()
            .any(|c| c.contains(k) || mentions_word(c, bare))
    };
    let mut other: std::collections::BTreeMap<&str, i64> = Default::default();
    for p in &r.phases {
        for (k, v) in p.drops() {
            if !named(k) {
                *other.entry(k).or_insert(0) += v;
            }
        }
    }
    w.extend(causes);
    for (k, v) in other {
        w.push(counter_warning(k, v));
    }
    for p in &r.phases {
        if let Some(c) = &p.cross_check {
            if !c.agree {
                w.push(format!(
                    "{}: our counts disagree with the kernel's: {}",
                    p.name, c.note
                ));
            }
        }
    }
    w
}

/// [`derived`] warnings followed by the stored ones that do not repeat a derived one.
///
/// A stored warning repeats a derived one when it is the same text, names a counter that a
/// phase's drop counters include (records from older builds stored their own drop warnings),
/// speaks of the interruption of an interrupted run, or quotes the note of a failed cross-check.
pub fn all(r: &RunRecord) -> Vec<String> {
    let mut out = derived(r);
    let counters: Vec<&str> = r
        .phases
        .iter()
        .flat_map(|p| p.drops().into_iter().map(|(k, _)| k))
        .collect();
    let notes: Vec<&str> = r
        .phases
        .iter()
        .filter_map(|p| p.cross_check.as_ref())
        .filter(|x| !x.agree && !x.note.is_empty())
        .map(|x| x.note.as_str())
        .collect();
    let repeats = |w: &str| {
        counters.iter().any(|c| {
            w.contains(c)
                || c.rsplit_once('.')
                    .is_some_and(|(_, bare)| mentions_word(w, bare))
        }) || (r.run.interrupted && w.contains("interrupted"))
            || notes.iter().any(|n| w.contains(n))
    };
    for w in &r.warnings {
        if !repeats(w) && !out.contains(w) {
            out.push(w.clone());
        }
    }
    out
}

/// Whether `word` occurs in `text` as a whole word (not inside a longer name).
fn mentions_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}
