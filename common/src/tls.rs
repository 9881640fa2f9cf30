//! The one wording of a TLS run whose server certificate was not checked (`--insecure`), which
//! `load`, `bench` and `report` put in their first line: a figure measured against a server
//! nobody authenticated is said to be so where the reader looks first.

/// The part of a report's first line that says the server's certificate was not checked:
/// `", TLS UNVERIFIED (--insecure: the server's certificate was not checked)"` when `verified`
/// is false, else nothing. Appended after the rest of the line's facts.
pub fn unverified_marker(verified: bool) -> &'static str {
    if verified {
        ""
    } else {
        ", TLS UNVERIFIED (--insecure: the server's certificate was not checked)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unverified_run_is_marked() {
        assert_eq!(unverified_marker(true), "");
        assert!(unverified_marker(false).contains("UNVERIFIED (--insecure"));
    }
}
