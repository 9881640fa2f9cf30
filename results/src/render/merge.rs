//! What `connstorm merge` prints of the merged record.

use crate::record::PhaseRecord;

/// What `connstorm merge` says of a merged phase, in the numbers' one format ([`crate::numfmt`],
/// as the bench summary): `phase load: 24,000 successes in 3.000 s: 480,000 CPM = 8,000 conn/s`,
/// or that nothing was measured.
pub fn merged_phase_line(p: &PhaseRecord) -> String {
    match (p.cpm, p.achieved_per_sec) {
        (Some(cpm), Some(per_sec)) => format!(
            "phase {}: {} successes in {} s: {} CPM = {} conn/s",
            p.name,
            crate::numfmt::count(p.successes),
            crate::numfmt::fixed(p.measured_secs, 3),
            crate::numfmt::fixed(cpm, 0),
            crate::numfmt::fixed(per_sec, 0)
        ),
        _ => format!(
            "phase {}: nothing measured — no connection succeeded in {} s",
            p.name,
            crate::numfmt::fixed(p.measured_secs, 3)
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::analysis::merge_tests::{four, load, server};
    use crate::analysis::{merge, MergeInput};
    use crate::record::{NetnsIdentity, RunRecord};

    /// `merge` printed "8000.0 /s (480000 /min)" and notes with "40000 accepted": the numbers go
    /// through the one formatter (separators, CPM, `conn/s`).
    #[test]
    fn numbers_in_merge_text_use_the_one_format() {
        let mut inputs: Vec<MergeInput> = (0..2).map(|i| load(i, 2, 4_000, 3, 0)).collect();
        inputs.push(server(24_000, 24_000));
        let m = merge(&inputs).unwrap();
        let p = &m.record.phases[0];
        assert_eq!(
            merged_phase_line(p),
            "phase load: 24,000 successes in 3.000 s: 480,000 CPM = 8,000 conn/s"
        );
        let note = &p.cross_check.as_ref().unwrap().note;
        assert!(
            note.starts_with("servers accepted 24,000 connections, server namespaces' Tcp.PassiveOpens 24,000, generators completed 24,000 handshakes"),
            "{note}"
        );
        assert!(
            note.contains(": 12,000 handshakes, 12,000 attempts, Tcp.ActiveOpens 12,000: agree"),
            "{note}"
        );
        let mut none = p.clone();
        none.successes = 0;
        none.set_rates();
        assert_eq!(
            merged_phase_line(&none),
            "phase load: nothing measured — no connection succeeded in 3.000 s"
        );
    }

    /// Servers in two namespaces: the merged record keeps their counters apart from the
    /// generators' (`server.counters`, each namespace once), sums their TLS accepts, counts their
    /// drops as the run's, and the report names both counter lines (it printed the generators'
    /// `Tcp.PassiveOpens +0` as the run's beside a cross-check of 3,018 accepts).
    #[test]
    fn server_namespaces_counters_and_tls_accepts_are_kept_apart_and_summed() {
        let mut inputs = four();
        let want: u64 = (0..4).map(|i| (250 + i) * 3).sum();
        for (k, accepted) in [(0u64, 1_000u64), (1, want - 1_000)] {
            let mut s = server(accepted, accepted as i64);
            s.path = PathBuf::from(format!("/runs/server{k}.json"));
            s.record.counters_netns = Some(NetnsIdentity {
                inode: 4_026_533_000 + k,
                boot_id: Some("b00t".into()),
                hostname: Some(format!("srv{k}")),
            });
            let p = &mut s.record.phases[0];
            p.counters
                .insert("TcpExt.ListenOverflows".into(), 5 + k as i64);
            let side = p.server.as_mut().unwrap();
            side.tls_accepted = Some(accepted);
            side.tls_resumed = Some(accepted / 2);
            inputs.push(s);
        }
        let m = merge(&inputs).unwrap();
        let p = &m.record.phases[0];
        let side = p.server.as_ref().unwrap();
        assert_eq!(side.accepted(), want);
        assert_eq!(side.counters["Tcp.PassiveOpens"], want as i64);
        assert_eq!(side.counters["TcpExt.ListenOverflows"], 11);
        assert_eq!(side.tls_accepted, Some(want));
        assert_eq!(side.tls_resumed, Some(500 + (want - 1_000) / 2));
        assert!(
            !p.counters.contains_key("Tcp.PassiveOpens"),
            "{:?}",
            p.counters
        );
        assert_eq!(p.drops(), vec![("TcpExt.ListenOverflows", 11)]);
        let c = p.cross_check.as_ref().unwrap();
        assert_eq!(c.kernel_passive_opens, Some(want as i64));
        assert!(c.agree, "{}", c.note);
        let text = crate::render::report(
            &[crate::render::build_report(&m.record, "merged.json", &[]).unwrap()],
            crate::render::ReportFormat::Text,
            crate::render::Counters::Key,
        );
        assert!(
            text.contains("kernel counters (the generators' namespaces): ")
                && text.contains(&format!(
                    "kernel counters (the server namespaces, the servers' whole run): TcpExt.ListenOverflows +11, Tcp.PassiveOpens +{}",
                    crate::numfmt::count(want)
                )),
            "{text}"
        );
        // Written and read back, the server namespaces' counters stay.
        let back: RunRecord =
            serde_json::from_str(&serde_json::to_string(&m.record).unwrap()).unwrap();
        assert_eq!(
            back.phases[0].server.as_ref().unwrap().counters,
            side.counters
        );
    }
}
