//! What `compare`, `ab` and `plot --kind ab` refuse before comparing: sides measured with
//! different setups ([`check_setups`]) and one run given twice ([`refuse_duplicates`]). Both are
//! bad input ([`BadInput`], exit code 2 in the binary).

use std::path::PathBuf;

use common::error::BadInput;

use super::Comparison;
use crate::record::RunRecord;

/// Refuses a comparison whose sides' setups differ in a way that makes them different
/// experiments ([`super::SetupDifference::refuses`]), unless `allow_mismatch`
/// (`--allow-mismatch`).
///
/// # Errors
/// Bad input naming every refusing difference and how to go on.
pub fn check_setups(c: &Comparison, allow_mismatch: bool) -> Result<(), BadInput> {
    let refusing: Vec<String> = c
        .setup_differences
        .iter()
        .filter(|d| d.refuses)
        .map(|d| d.describe())
        .collect();
    if refusing.is_empty() || allow_mismatch {
        return Ok(());
    }
    Err(BadInput(format!(
        "the sides were measured with different setups: {}; a difference in the numbers could come from that, not from what you changed. Re-run with the same setup, or add --allow-mismatch to compare anyway (the differences are then listed in the output)",
        refusing.join("; ")
    )))
}

/// Refuses a set of records in which one run appears twice (the same path, or files holding the
/// same record, or the same host and start instant: a copy with only its label edited): each
/// trial must be its own run, and a repeated one would make the verdict look stronger than the
/// data are (overlapping globs do this).
///
/// # Errors
/// Bad input naming both files.
pub fn refuse_duplicates<'a>(
    records: impl IntoIterator<Item = (&'a PathBuf, &'a RunRecord)>,
) -> Result<(), BadInput> {
    let mut seen: Vec<(&PathBuf, &RunRecord)> = Vec::new();
    for (p, rec) in records {
        if let Some((first, _)) = seen
            .iter()
            .find(|(q, r)| *q == p || *r == rec || same_start(r, rec))
        {
            return Err(BadInput(format!(
                "{} and {} are the same run: each trial must be its own run (a repeated one would make the verdict look stronger than the data are); drop one of them",
                first.display(),
                p.display()
            )));
        }
        seen.push((p, rec));
    }
    Ok(())
}

/// Whether two records are one run: the same host and the same start instant (ms since the
/// epoch). Runs on one host are sequential, so two runs cannot share their start millisecond; a
/// copy with only its label edited is still the same run.
fn same_start(a: &RunRecord, b: &RunRecord) -> bool {
    a.run.started_unix_ms.is_some()
        && a.run.started_unix_ms == b.run.started_unix_ms
        && a.host.hostname == b.host.hostname
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::compare::SetupDifference;

    fn run(ms: Option<u64>, host: &str, label: &str) -> RunRecord {
        let mut r = RunRecord::new("bench", serde_json::Value::Null);
        r.run.started_unix_ms = ms;
        r.host.hostname = Some(host.into());
        r.label = label.into();
        r
    }

    /// A relabelled copy (same host, same start instant) is the run it was copied from; runs
    /// without a start instant are told apart by their content.
    #[test]
    fn a_relabelled_copy_is_the_same_run() {
        let (p1, p2) = (PathBuf::from("a.json"), PathBuf::from("b.json"));
        let (a, copy) = (run(Some(7), "h", "A"), run(Some(7), "h", "B"));
        let err = refuse_duplicates([(&p1, &a), (&p2, &copy)]).unwrap_err();
        assert!(
            err.0.starts_with("a.json and b.json are the same run"),
            "{err}"
        );
        let other_host = run(Some(7), "g", "B");
        assert_eq!(refuse_duplicates([(&p1, &a), (&p2, &other_host)]), Ok(()));
        let (x, y) = (run(None, "h", "A"), run(None, "h", "B"));
        assert_eq!(refuse_duplicates([(&p1, &x), (&p2, &y)]), Ok(()));
        assert!(
            refuse_duplicates([(&p1, &x), (&p1, &y)]).is_err(),
            "same path"
        );
    }

    #[test]
    fn refusing_differences_need_allow_mismatch() {
        let diff = |what: &str, refuses| SetupDifference {
            what: what.into(),
            a: vec!["io_uring".into()],
            b: vec!["epoll".into()],
            refuses,
        };
        let mut c = crate::analysis::compare::compare(&[], &[], (None, None), &Default::default());
        c.setup_differences = vec![diff("kernel", false)];
        assert_eq!(check_setups(&c, false), Ok(()));
        c.setup_differences.push(diff("engine", true));
        let err = check_setups(&c, false).unwrap_err();
        assert!(
            err.0
                .contains("different setups: engine: A io_uring, B epoll;"),
            "{err}"
        );
        assert!(!err.0.contains("kernel"), "{err}");
        assert_eq!(check_setups(&c, true), Ok(()));
    }
}
