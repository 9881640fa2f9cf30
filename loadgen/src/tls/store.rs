//! One worker's TLS session store, sized to its slots.
//!
//! rustls' `ClientSessionMemoryCache` keeps at most 8 TLS 1.3 tickets per server
//! (`MAX_TLS13_TICKETS_PER_SERVER`, rustls 0.23 `client/handy.rs`), and a ticket is used at most
//! once (RFC 8446 §C.4; `take_tls13_ticket`). A worker with more than 8 handshakes in flight to
//! one server therefore starts the 9th and later ones without a ticket — full handshakes although
//! the run asked for resumption (measured: `--concurrency 32 --tls-resume tickets --http`
//! resumed about half). This store keeps up to `2 × slots` tickets per server (a server sends 2
//! per connection by default, rustls `ServerConfig::send_tls13_tickets`), oldest dropped first,
//! so every handshake of a warm worker finds one. TLS 1.2 keeps one session (ID or ticket) per
//! server, as rustls does; a session ID may be reused (RFC 5246 §7.3).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

/// What is kept for one server name.
#[derive(Debug, Default)]
struct Entry {
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    tls13: VecDeque<Tls13ClientSessionValue>,
}

/// A session store keeping up to `max_tickets` TLS 1.3 tickets per server name. Its mutex is
/// taken only by its own worker (uncontended). A worker talks to one name (`--sni`, or the
/// first target's), so the names are a short list searched in place: a lookup per handshake
/// allocates nothing (a map keyed by `ServerName<'static>` would need an owned copy of the
/// name for every lookup).
#[derive(Debug)]
pub(crate) struct SessionStore {
    max_tickets: usize,
    servers: Mutex<Vec<(ServerName<'static>, Entry)>>,
}

impl SessionStore {
    /// A store for a worker with `slots` slots: `2 × slots` tickets per server, at least 8.
    pub(crate) fn for_slots(slots: usize) -> SessionStore {
        SessionStore {
            max_tickets: slots.saturating_mul(2).max(8),
            servers: Mutex::new(Vec::new()),
        }
    }

    fn edit<R>(&self, name: &ServerName<'_>, f: impl FnOnce(&mut Entry) -> R) -> R {
        let mut servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        let i = match servers.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                servers.push((name.to_owned(), Entry::default()));
                servers.len() - 1
            }
        };
        f(&mut servers[i].1)
    }

    fn read<R>(&self, name: &ServerName<'_>, f: impl FnOnce(&Entry) -> Option<R>) -> Option<R> {
        let servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        servers
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, e)| f(e))
    }
}

impl ClientSessionStore for SessionStore {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.edit(&server_name, |e| e.kx_hint = Some(group));
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.read(server_name, |e| e.kx_hint)
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.edit(&server_name, |e| e.tls12 = Some(value));
    }

    fn tls12_session(&self, server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.read(server_name, |e| e.tls12.clone())
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.edit(server_name, |e| e.tls12 = None);
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        let max = self.max_tickets;
        self.edit(&server_name, |e| {
            if e.tls13.len() >= max {
                e.tls13.pop_front();
            }
            e.tls13.push_back(value);
        });
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        self.edit(server_name, |e| e.tls13.pop_back())
    }
}

/// The same store seen by a connection that offers no session (`--tls-resume-share` below
/// 100%): it starts as a new client does (no ticket, no session ID, no remembered key-share
/// group, as `Resumption::disabled()` gives), but the sessions the server gives it are kept for
/// the worker's other connections.
#[derive(Debug)]
pub(crate) struct KeepOnly(pub Arc<SessionStore>);

impl ClientSessionStore for KeepOnly {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.0.set_kx_hint(server_name, group);
    }

    fn kx_hint(&self, _server_name: &ServerName<'_>) -> Option<NamedGroup> {
        None
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.0.set_tls12_session(server_name, value);
    }

    fn tls12_session(&self, _server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        None
    }

    fn remove_tls12_session(&self, _server_name: &ServerName<'static>) {}

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        self.0.insert_tls13_ticket(server_name, value);
    }

    fn take_tls13_ticket(
        &self,
        _server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        None
    }
}
