//! Legend names of records read from files: what `plot` and `report --format html` call each
//! record.

use std::path::{Path, PathBuf};

use super::Named;
use crate::record::RunRecord;

/// The records with their legend names: the label; for a record without one, its command and
/// start time (`sweep 2026-11-29T22:15:03Z`); repeated names get their start time (or, if that
/// repeats too, the file name) added — unless `keep_repeats` (A/B plots, where a side's trials
/// share a name on purpose).
pub fn legend_names(records: &[(PathBuf, RunRecord)], keep_repeats: bool) -> Vec<Named<'_>> {
    records
        .iter()
        .zip(names(records, keep_repeats))
        .map(|((_, record), name)| Named { name, record })
        .collect()
}

fn names(records: &[(PathBuf, RunRecord)], keep_repeats: bool) -> Vec<String> {
    let stem = |p: &Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let base = |rec: &RunRecord| {
        if rec.label.is_empty() {
            format!("{} {}", rec.run.command, rec.run.started_at)
        } else {
            rec.label.clone()
        }
    };
    records
        .iter()
        .map(|(path, rec)| {
            let name = base(rec);
            let same: Vec<&RunRecord> = records
                .iter()
                .map(|(_, r)| r)
                .filter(|r| base(r) == name)
                .collect();
            if same.len() == 1 || keep_repeats {
                name
            } else if !rec.label.is_empty()
                && same
                    .iter()
                    .filter(|r| r.run.started_at == rec.run.started_at)
                    .count()
                    == 1
            {
                format!("{name} ({})", rec.run.started_at)
            } else {
                format!("{name} ({})", stem(path))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(label: &str, started_at: &str) -> RunRecord {
        let mut r = RunRecord::new("sweep", serde_json::Value::Null);
        r.label = label.into();
        r.run.started_at = started_at.into();
        r.run.command = "sweep".into();
        r
    }

    /// Repeated labels get their start time, then their file name; A/B sides keep the repeats.
    #[test]
    fn repeated_names_are_told_apart_except_in_ab_sides() {
        let recs = vec![
            (PathBuf::from("d/one.json"), rec("x", "T1")),
            (PathBuf::from("d/two.json"), rec("x", "T2")),
            (PathBuf::from("d/three.json"), rec("y", "T3")),
            (PathBuf::from("d/four.json"), rec("y", "T3")),
            (PathBuf::from("d/five.json"), rec("", "T5")),
        ];
        let got: Vec<String> = legend_names(&recs, false)
            .into_iter()
            .map(|n| n.name)
            .collect();
        assert_eq!(
            got,
            ["x (T1)", "x (T2)", "y (three)", "y (four)", "sweep T5"]
        );
        let kept: Vec<String> = legend_names(&recs, true)
            .into_iter()
            .map(|n| n.name)
            .collect();
        assert_eq!(kept, ["x", "x", "y", "y", "sweep T5"]);
    }
}
