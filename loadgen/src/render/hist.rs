//! How a latency histogram is written in a report: its percentiles on one line
//! ([`hist`]) and what lay above its range ([`overflow`]).

use std::fmt;

use common::numfmt;

use crate::latency::{HistogramSummary, Overflow};

/// `  name: p50 …  p99 …  max … (n=…)`, or `no samples (n=0)`.
pub(super) fn hist(out: &mut fmt::Formatter<'_>, name: &str, s: &HistogramSummary) -> fmt::Result {
    if s.count == 0 {
        return writeln!(out, "  {name}: no samples (n=0)");
    }
    let cells: Vec<String> = s
        .percentiles
        .iter()
        .map(|&(p, v)| {
            let v = v.map_or("-".to_string(), |v| numfmt::ns(v as f64));
            if p >= 100.0 {
                format!("max {v}")
            } else {
                format!("p{p} {v}")
            }
        })
        .collect();
    writeln!(
        out,
        "  {name}: {} (n={})",
        cells.join("  "),
        numfmt::count(s.count)
    )
}

/// "N samples above X; true max Y" when a histogram could not hold every value.
pub(super) fn overflow(out: &mut fmt::Formatter<'_>, o: &Overflow) -> fmt::Result {
    if o.above == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "    {} samples above {} (the histogram's range; recorded at its top for the percentiles); true max {}",
        numfmt::count(o.above),
        numfmt::ns(o.range_max_ns as f64),
        numfmt::ns(o.true_max_ns as f64)
    )
}
