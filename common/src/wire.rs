//! The wire a run puts on the network, in words: the protocol of each connection and who closes
//! it how (issue 36: a comparison with another client is only like for like on the same wire,
//! and an HTTP client that sends `Connection: close` sees the server close after the response,
//! while connstorm's `--close rst` resets the connection itself). Every report's first line
//! starts with it (`load`, `bench`, `report` on a record), from the close mode's name as the
//! command line and the record spell it (`rst`, `fin`, `server`).

/// The words before the wire's description in text (`wire: `); a JSON field named `wire` holds
/// the description without them ([`value`]).
pub const PREFIX: &str = "wire: ";

/// The description of a [`describe`] line without its [`PREFIX`], for a JSON field already named
/// `wire` (seen: `"wire": "wire: TCP, …"`).
pub fn value(line: &str) -> &str {
    line.strip_prefix(PREFIX).unwrap_or(line)
}

/// `wire: …`: the protocol (`TCP`, `TLS`, `HTTP/1.1`, `HTTP/1.1 over TLS`) and the close
/// discipline after the exchange, from `close` (`rst`, `fin`, `server`; any other spelling is
/// printed as given) and whether each connection carries a request (`http`) and a TLS handshake
/// (`tls`). E.g. `wire: HTTP/1.1, server closes after the response (like wrk -H 'Connection:
/// close')` or `wire: HTTP/1.1, client RST after the response (not what HTTP clients do)`.
pub fn describe(close: &str, http: bool, tls: bool) -> String {
    let proto = match (http, tls) {
        (true, true) => "HTTP/1.1 over TLS",
        (true, false) => "HTTP/1.1",
        (false, true) => "TLS",
        (false, false) => "TCP",
    };
    let how = if http {
        match close {
            "server" => {
                "server closes after the response (like wrk -H 'Connection: close')".to_string()
            }
            "rst" => "client RST after the response (not what HTTP clients do)".to_string(),
            "fin" => {
                "client closes first (FIN) after the response, TIME_WAIT on the client".to_string()
            }
            other => format!("close {other} after the response"),
        }
    } else if tls {
        // Without a request the client sends close_notify after the TLS handshake and reads
        // until the server closes (its session tickets come then); the close mode is how the
        // client's own socket ends after that.
        match close {
            "rst" => "client close_notify after the TLS handshake, RST after the server's close (SO_LINGER 0)"
                .to_string(),
            "fin" | "server" => "client close_notify after the TLS handshake, its FIN after the server's close (TIME_WAIT on the server)"
                .to_string(),
            other => format!("client close_notify after the TLS handshake, close {other}"),
        }
    } else {
        // Without a request: after the TCP handshake (and a greeting read with --expect-bytes).
        let after = "after the handshake";
        match close {
            "server" => format!("server closes first {after}, TIME_WAIT on the server"),
            "rst" => format!("client RST {after} (SO_LINGER 0, no TIME_WAIT)"),
            "fin" => format!("client closes first (FIN) {after}, TIME_WAIT on the client"),
            other => format!("close {other} {after}"),
        }
    };
    format!("{PREFIX}{proto}, {how}")
}

/// [`describe`] where the server's mode is known (`bench`, `sweep`, `ab`, `scale` with their own
/// server; `server_mode` as the record spells it, `rst`, `close`, `greet:N`, `hold`, `http`):
/// `--close server` waits for the server's close, and a server in `--mode rst` ends each
/// connection with an RST (SO_LINGER 0), not a FIN: no TIME_WAIT on either side, so the wire is
/// said so rather than as a FIN that leaves the server in TIME_WAIT. Any other mode (or an
/// external server, `external`, or none recorded) reads as [`describe`].
pub fn describe_with_server(close: &str, http: bool, tls: bool, server_mode: &str) -> String {
    if close == "server" && server_mode == "rst" && !http && !tls {
        return "wire: TCP, server RST first after the handshake (its --mode rst: SO_LINGER 0, no TIME_WAIT)".to_string();
    }
    describe(close, http, tls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_wires_say_who_closes_and_how_clients_compare() {
        assert_eq!(
            describe("server", true, false),
            "wire: HTTP/1.1, server closes after the response (like wrk -H 'Connection: close')"
        );
        assert_eq!(
            describe("rst", true, true),
            "wire: HTTP/1.1 over TLS, client RST after the response (not what HTTP clients do)"
        );
        assert!(describe("fin", true, false).contains("client closes first (FIN)"));
        assert!(describe("rst", false, false).starts_with("wire: TCP, client RST"));
        assert_eq!(
            value(&describe("rst", false, false)),
            "TCP, client RST after the handshake (SO_LINGER 0, no TIME_WAIT)"
        );
        assert!(describe("server", false, false).starts_with("wire: TCP, server closes first"));
        assert!(describe("rst", false, true)
            .starts_with("wire: TLS, client close_notify after the TLS handshake, RST after"));
        // An unknown spelling (a future record) is printed, not hidden.
        assert!(describe("half", false, false).contains("close half"));
    }

    /// Like for like: `--close server` against bench's own server in `--mode rst` is an RST
    /// from the server, no TIME_WAIT anywhere; other modes and an external server are as before.
    #[test]
    fn a_server_in_mode_rst_is_named_as_the_rst_it_sends() {
        let w = describe_with_server("server", false, false, "rst");
        assert!(w.starts_with("wire: TCP, server RST first"), "{w}");
        assert!(!w.contains("TIME_WAIT on the server"), "{w}");
        for mode in ["close", "greet:16", "external", ""] {
            assert_eq!(
                describe_with_server("server", false, false, mode),
                describe("server", false, false)
            );
        }
        assert_eq!(
            describe_with_server("rst", false, false, "rst"),
            describe("rst", false, false)
        );
    }
}
