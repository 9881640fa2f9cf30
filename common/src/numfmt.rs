//! The one number formatter of connstorm: every text renderer (the binary's summaries and
//! progress lines, reports, comparisons, sweep tables, plot axes and legends) formats numbers
//! here, so the same figure reads the same everywhere.
//!
//! Rules: thousands separators (`,`) in text; a space between a number and its unit
//! (`850 ns`, `1,315,550 CPM`); no noise digits on axes (`100,000`, not `100000.0`). JSON and
//! CSV keep raw numbers and never go through this module. Values that are not finite (a
//! per-connection figure with no connection, a median of nothing) print as [`NA`].

/// What a value that was not measured prints as (`null` in JSON).
pub const NA: &str = "n/a";

/// Inserts thousands separators into the integer part of a plain decimal string.
fn group_digits(s: &str) -> String {
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", s),
    };
    let (int, frac) = match rest.find('.') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let mut out = String::with_capacity(s.len() + int.len() / 3);
    out.push_str(sign);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out.push_str(frac);
    out
}

/// An integer count with separators: `1315550` → `1,315,550`.
pub fn count(n: u64) -> String {
    group_digits(&n.to_string())
}

/// A signed integer with separators: `-20527` → `-20,527`.
pub fn signed(n: i64) -> String {
    group_digits(&n.to_string())
}

/// A value with a fixed number of decimals and separators: `fixed(21034.26, 1)` → `21,034.3`;
/// [`NA`] when not finite.
pub fn fixed(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return NA.into();
    }
    group_digits(&format!("{v:.decimals$}"))
}

/// [`fixed`] of a value that may not exist (a rate of a phase without a success): [`NA`] for
/// `None`.
pub fn fixed_opt(v: Option<f64>, decimals: usize) -> String {
    fixed(v.unwrap_or(f64::NAN), decimals)
}

/// A value with as many decimals as its size deserves (3 significant digits below 100, none
/// from 100): `21,034`, `45.2`, `3.07`, `0.052`; [`NA`] when not finite.
pub fn value(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 || a == 0.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        // Three significant digits.
        (2 - a.log10().floor() as i64).clamp(0, 9) as usize
    };
    fixed(v, decimals)
}

/// A value as exact as it was given (a rate from `--rate`, an offered rate, a size): up to 3
/// decimals, trailing zeros dropped, separators: `1.5` → `1.5`, `2000` → `2,000`,
/// `16666.6667` → `16,666.667`, `0.25` → `0.25`; [`NA`] when not finite. Never rounds a given
/// `1.5/s` to `2/s`.
pub fn exact(v: f64) -> String {
    if !v.is_finite() {
        return NA.into();
    }
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    group_digits(if s == "-0" { "0" } else { s })
}

/// An optional value with its unit: `45.2 µs`, `n/a`.
pub fn with_unit(v: Option<f64>, unit: &str) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{} {unit}", value(v)),
        _ => NA.into(),
    }
}

/// Nanoseconds with a readable unit and a space: `850 ns`, `45.1 µs`, `1.23 ms`, `1.002 s`;
/// [`NA`] when not finite.
pub fn ns(v: f64) -> String {
    if !v.is_finite() {
        NA.into()
    } else if v.abs() < 1_000.0 {
        format!("{v:.0} ns")
    } else if v.abs() < 1_000_000.0 {
        format!("{:.1} µs", v / 1e3)
    } else if v.abs() < 1_000_000_000.0 {
        format!("{:.2} ms", v / 1e6)
    } else {
        format!("{} s", fixed(v / 1e9, 3))
    }
}

/// A relative change as a signed percentage: `0.1` → `+10.0%`; [`NA`] when not finite.
pub fn pct_change(v: f64) -> String {
    if v.is_finite() {
        format!("{:+.1}%", v * 100.0)
    } else {
        NA.into()
    }
}

/// A share as a percentage: `0.362` → `36.2%`; [`NA`] when not finite.
pub fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{:.1}%", v * 100.0)
    } else {
        NA.into()
    }
}

/// A plot axis tick: separators, no trailing zeros: `100,000`, `2.5`, `0.05`.
pub fn axis(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if v.abs() >= 100.0 || v == v.trunc() {
        return fixed(v, 0);
    }
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    group_digits(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_keeps_the_given_precision_without_noise() {
        assert_eq!(exact(1.5), "1.5");
        assert_eq!(exact(2000.0), "2,000");
        assert_eq!(exact(1_000_000.0 / 60.0), "16,666.667");
        assert_eq!(exact(0.25), "0.25");
        assert_eq!(exact(1234.5), "1,234.5");
        assert_eq!(exact(-0.0001), "0");
        assert_eq!(exact(f64::NAN), NA);
    }

    #[test]
    fn separators_units_and_na() {
        assert_eq!(count(1_315_550), "1,315,550");
        assert_eq!(count(999), "999");
        assert_eq!(signed(-20_527), "-20,527");
        assert_eq!(fixed(21_034.26, 1), "21,034.3");
        assert_eq!(fixed_opt(Some(8_000.0), 0), "8,000");
        assert_eq!(fixed_opt(None, 0), "n/a");
        assert_eq!(value(21_034.4), "21,034");
        assert_eq!(value(45.23), "45.2");
        assert_eq!(value(3.071), "3.07");
        assert_eq!(value(0.0523), "0.0523");
        assert_eq!(value(f64::NAN), "n/a");
        assert_eq!(with_unit(None, "µs"), "n/a");
        assert_eq!(with_unit(Some(45.23), "µs"), "45.2 µs");
        assert_eq!(ns(850.0), "850 ns");
        assert_eq!(ns(45_100.0), "45.1 µs");
        assert_eq!(ns(1_234_000.0), "1.23 ms");
        assert_eq!(ns(1_002_000_000.0), "1.002 s");
        assert_eq!(pct_change(0.1), "+10.0%");
        assert_eq!(pct_change(-0.99), "-99.0%");
        assert_eq!(pct(0.362), "36.2%");
        assert_eq!(axis(100_000.0), "100,000");
        assert_eq!(axis(2.5), "2.5");
        assert_eq!(axis(0.05), "0.05");
        assert_eq!(axis(20.0), "20");
    }
}
