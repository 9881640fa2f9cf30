//! The text of a [`Profile`]: per side the top 10 functions by self share, the named contention
//! points (one line each), lost samples; then the notes.

use std::fmt::Write as _;

use super::contention::ContentionKind;
use super::{Profile, Space};
use crate::cpulist;

/// Functions printed per side.
pub const TOP_PRINTED: usize = 10;

/// Renders `p` as text (ends with a newline).
pub fn render_text(p: &Profile) -> String {
    let mut out = String::new();
    let collector = match p.collector_cpu {
        Some(c) => format!("collector on CPU {c}"),
        None => "collector unpinned".to_string(),
    };
    let _ = writeln!(
        out,
        "PROFILE  {} at {} Hz per CPU for {:.2} s ({collector}, {:.1} ms of its CPU; \
         symbolized in {:.0} ms)",
        p.event,
        p.frequency_hz,
        p.duration_ns as f64 / 1e9,
        p.collector_cpu_ns as f64 / 1e6,
        p.symbolize_ns as f64 / 1e6,
    );
    for s in &p.sides {
        let idle = if s.samples == 0 {
            0.0
        } else {
            s.idle_samples as f64 / s.samples as f64
        };
        let _ = writeln!(
            out,
            "{} (CPUs {}): {} samples, {} busy, {:.1}% idle",
            s.side,
            cpulist::format(&s.cpus),
            s.samples,
            s.busy_samples(),
            idle * 100.0
        );
        if s.busy_samples() == 0 {
            let _ = writeln!(out, "  no busy samples: the CPUs were idle");
        } else {
            let _ = writeln!(out, "  {:>6}  {:>6}  function", "self", "incl");
            for f in s.functions.iter().take(TOP_PRINTED) {
                let space = match f.space {
                    Space::Kernel => "[k]",
                    Space::User => "[u]",
                };
                let _ = writeln!(
                    out,
                    "  {:>5.1}%  {:>5.1}%  {space} {}",
                    f.self_share * 100.0,
                    f.inclusive_share * 100.0,
                    f.name
                );
            }
        }
        if s.contention.is_empty() {
            let _ = writeln!(out, "  contention: none of the known points was sampled");
        }
        for c in &s.contention {
            let lead = if c.kind == ContentionKind::SpinlockWait {
                "taken in"
            } else {
                "in"
            };
            let list: Vec<String> = c
                .functions
                .iter()
                .map(|f| format!("{} {:.1}%", f.name, f.share * 100.0))
                .collect();
            let _ = writeln!(
                out,
                "  contention: {} {:.1}% of busy time (self {:.1}%), {lead} {}",
                c.what,
                c.inclusive_share * 100.0,
                c.self_share * 100.0,
                list.join(", ")
            );
        }
        if s.lost_samples > 0 {
            let _ = writeln!(
                out,
                "  lost samples: {} (a ring buffer was full: a larger ring or a less busy \
                 collector CPU)",
                s.lost_samples
            );
        }
        if s.throttled > 0 {
            let _ = writeln!(
                out,
                "  throttled: {} times (samples took too long: lower the frequency)",
                s.throttled
            );
        }
        if s.kernel_frames > 0 && s.unresolved_kernel_frames * 100 > s.kernel_frames {
            let _ = writeln!(
                out,
                "  unresolved kernel frames: {:.1}%",
                s.unresolved_kernel_frames as f64 * 100.0 / s.kernel_frames as f64
            );
        }
    }
    for n in &p.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}
