//! The classic Prometheus text format (0.0.4) from the OpenMetrics text `prometheus-client`
//! writes, for scrapers that ask for `text/plain` (`promtool check metrics` reads only this
//! one: it refuses the `info` type).
//!
//! What differs, for the metrics connstorm writes (counters, gauges, info, histograms; no
//! exemplars, no `_created`): a counter's `# HELP`/`# TYPE` name the sample (`x_total`, not
//! `x`); an info metric `x` becomes the gauge `x_info`; `# UNIT` and `# EOF` are left out.
//! Sample lines are the same in both.

/// Converts OpenMetrics text (as [`prometheus_client::encoding::text::encode`] writes it) to
/// the classic text format 0.0.4.
pub fn from_openmetrics(om: &str) -> String {
    // Types by family name, from the `# TYPE` lines (a family's HELP comes before its TYPE).
    let types: std::collections::HashMap<&str, &str> = om
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .collect();
    let mut out = String::with_capacity(om.len());
    for line in om.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let descriptor = ["# HELP ", "# TYPE "]
            .iter()
            .find_map(|p| line.strip_prefix(p).map(|rest| (*p, rest)));
        match descriptor {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let (name, tail) = match types.get(name).copied() {
                    Some("counter") => (format!("{name}_total"), tail),
                    Some("info") if prefix == "# TYPE " => (format!("{name}_info"), "gauge"),
                    Some("info") => (format!("{name}_info"), tail),
                    Some("stateset") if prefix == "# TYPE " => (name.to_string(), "gauge"),
                    Some("unknown") if prefix == "# TYPE " => (name.to_string(), "untyped"),
                    _ => (name.to_string(), tail),
                };
                out.push_str(prefix);
                out.push_str(&name);
                out.push(' ');
                out.push_str(tail);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_info_and_units_follow_the_classic_spelling() {
        let om = "# HELP c_seconds Help of c.\n# TYPE c_seconds counter\n# UNIT c_seconds seconds\n\
                  c_seconds_total{a=\"1\"} 2.5\n# HELP e Engine.\n# TYPE e info\ne_info{engine=\"epoll\"} 1\n\
                  # HELP g A gauge.\n# TYPE g gauge\ng 3\n# EOF\n";
        assert_eq!(
            from_openmetrics(om),
            "# HELP c_seconds_total Help of c.\n# TYPE c_seconds_total counter\n\
             c_seconds_total{a=\"1\"} 2.5\n# HELP e_info Engine.\n# TYPE e_info gauge\ne_info{engine=\"epoll\"} 1\n\
             # HELP g A gauge.\n# TYPE g gauge\ng 3\n"
        );
    }
}
