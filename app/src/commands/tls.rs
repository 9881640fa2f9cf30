//! The TLS client options every command that makes TLS connections takes (`load --tls`, `bench
//! --tls`, and `sweep`/`ab` through bench's options): one set of flags ([`TlsClientArgs`]) and
//! one place that turns them into [`loadgen::tls::TlsOptions`] ([`TlsClientArgs::options`]), so
//! `bench --target HOST --tls` offers the same SNI and ALPN and checks the certificate exactly
//! as `load --tls` does (issue 36 item 6).

use std::path::PathBuf;

use loadgen::tls::{Resume, TlsOptions, TlsVersion, Verify};

use crate::bad_input;

/// The `--tls*` client options, flattened into `load` and `bench` (each has its own `--tls`).
#[derive(Debug, Clone, Default, clap::Args)]
#[group(skip)]
pub struct TlsClientArgs {
    /// With --tls: the protocol versions offered: `auto` (1.3 and 1.2), `1.2`, `1.3`.
    #[arg(long, value_enum, default_value = "auto", requires = "tls")]
    pub tls_version: TlsVersion,
    /// With --tls: the server name sent as SNI and checked against the certificate. Default:
    /// the target's host name when it is a name (`bench` with its own server: `localhost`); an
    /// IP target is checked against the certificate's IP addresses and sends no SNI.
    #[arg(long, value_name = "NAME", requires = "tls")]
    pub sni: Option<String>,
    /// With --tls: an ALPN protocol to offer, e.g. `http/1.1`; repeat or comma-separate for
    /// more. Default: `http/1.1` with --http (as HTTPS clients offer it), else none (no ALPN
    /// extension).
    #[arg(long, value_name = "PROTO", value_delimiter = ',', requires = "tls")]
    pub alpn: Vec<String>,
    /// With --tls: session resumption within each worker (one client config and one session
    /// store per worker, 2 TLS 1.3 tickets per in-flight slot, at least 8): `off` (every
    /// handshake full; the default), `tickets` (TLS 1.3 tickets, TLS 1.2 RFC 5077 tickets),
    /// `ids` (TLS 1.2 session IDs; needs --tls-version 1.2).
    #[arg(long, value_enum, value_name = "off|tickets|ids", requires = "tls")]
    pub tls_resume: Option<Resume>,
    /// With --tls: the share of connections that offer a session kept from an earlier one,
    /// `0%`..`100%` (e.g. `30%`): the others start as a new client does, so the run is that mix
    /// of resumed and full handshakes. Exactly that share of every 100 connections of a worker
    /// offers one, spread evenly. Default with --tls-resume: 100% (every connection after a
    /// worker's first). Given alone it implies --tls-resume tickets, except `0%`: no connection
    /// would offer a session, so resumption stays off (no session kept, none asked for; the
    /// record says resumption off). `--tls-resume tickets --tls-resume-share 0%` keeps the
    /// tickets the server sends without offering any.
    #[arg(
        long,
        value_name = "PERCENT",
        requires = "tls",
        allow_hyphen_values = true
    )]
    pub tls_resume_share: Option<String>,
    /// With --tls: the cipher suites to offer, in order, comma-separated, e.g.
    /// `TLS13_AES_256_GCM_SHA384,TLS13_AES_128_GCM_SHA256` (rustls' names; for TLS 1.3 the IANA
    /// name `TLS_AES_128_GCM_SHA256` is accepted too). Default: every suite of the aws-lc-rs
    /// provider, AES-128-GCM first (as browsers and h2load offer them). The report counts the
    /// suites agreed.
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "tls")]
    pub tls_ciphers: Vec<String>,
    /// With --tls: the key exchange groups to offer, in order, comma-separated: `x25519`,
    /// `p256` (secp256r1), `p384` (secp384r1), `X25519MLKEM768` (hybrid post-quantum, TLS 1.3),
    /// `SECP256R1MLKEM768`, `MLKEM768`, `MLKEM1024`. The first one's key share is sent; a server
    /// that wants another answers with a HelloRetryRequest. Default: x25519,p256,p384. The
    /// report counts the groups agreed.
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "tls")]
    pub tls_groups: Vec<String>,
    /// With --tls: accept any server certificate (the handshake's signatures are still
    /// checked); the report's first line then says TLS UNVERIFIED. `bench` takes it only with
    /// --target: its own server's certificate is known, so it is always checked.
    #[arg(long, requires = "tls")]
    pub insecure: bool,
    /// With --tls: check the server's certificate against the CA certificates in this PEM file.
    /// Default: the system's bundle, /etc/ssl/certs/ca-certificates.crt (`bench` with its own
    /// server: that server's certificate).
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub ca: Option<PathBuf>,
}

/// Whom the certificate check trusts when neither `--ca` nor `--insecure` is given.
#[derive(Debug, Clone, Copy)]
pub enum DefaultTrust<'a> {
    /// The system's CA bundle ([`loadgen::tls::SYSTEM_CA_BUNDLE`]): an external server.
    System,
    /// These certificates (PEM): `bench`'s in-process server, whose certificate it knows.
    Pem(&'a str),
}

/// Parses `--tls-resume-share`: `30%` or `30`, 0 to 100.
fn share(s: &str) -> anyhow::Result<u8> {
    let t = s.trim();
    let n = t.strip_suffix('%').unwrap_or(t).trim();
    match n.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) && v.fract() == 0.0 => Ok(v as u8),
        Ok(_) => Err(bad_input(format!(
            "--tls-resume-share {s}: give a whole percent from 0% to 100% of the connections, e.g. --tls-resume-share 30%"
        ))),
        Err(_) => Err(bad_input(format!(
            "--tls-resume-share {s:?} is not a percent: give one from 0% to 100%, e.g. --tls-resume-share 30%"
        ))),
    }
}

impl TlsClientArgs {
    /// The TLS options these flags ask for, checked (the one place `load` and `bench` build
    /// them): `name` is the default server name (`--sni` wins), `http` whether the connection
    /// carries HTTP (ALPN `http/1.1` by default), `trust` whom to trust without `--ca`.
    ///
    /// # Errors
    /// Bad input (exit 2), one line naming the option and the fix: `--insecure` with `--ca`,
    /// `--tls-resume off` with `--tls-resume-share`, a share outside 0–100%, and what
    /// [`TlsOptions::client_config`] refuses (an unknown group or suite, a CA file that cannot
    /// be used, a group of the wrong version).
    pub fn options(
        &self,
        name: String,
        http: bool,
        trust: DefaultTrust<'_>,
    ) -> anyhow::Result<TlsOptions> {
        if let (true, Some(ca)) = (self.insecure, &self.ca) {
            return Err(bad_input(format!(
                "--insecure and --ca {} contradict each other: --ca checks the server's certificate against that CA, --insecure checks nothing; drop one of them",
                ca.display()
            )));
        }
        let share = self.tls_resume_share.as_deref().map(share).transpose()?;
        let resume = match (self.tls_resume, share) {
            // 0% alone (or with off): no connection offers a session, so none is asked for or
            // kept; turning tickets on for it recorded "tickets 0%" and made the server issue
            // tickets nobody would offer.
            (None | Some(Resume::Off), Some(0)) => Resume::Off,
            (Some(Resume::Off), Some(_)) => {
                return Err(bad_input(
                    "--tls-resume-share asks for a share of connections that resume, but --tls-resume off asks for none: drop --tls-resume off (the share alone means tickets) or drop --tls-resume-share",
                ))
            }
            (None, Some(_)) => Resume::Tickets,
            (r, _) => r.unwrap_or(Resume::Off),
        };
        let verify = if self.insecure {
            Verify::Insecure
        } else if let Some(ca) = &self.ca {
            Verify::Ca(ca.clone())
        } else {
            match trust {
                DefaultTrust::System => Verify::Ca(loadgen::tls::SYSTEM_CA_BUNDLE.into()),
                DefaultTrust::Pem(pem) => Verify::CaPem(pem.to_string()),
            }
        };
        let alpn = if self.alpn.is_empty() && http {
            vec!["http/1.1".to_string()]
        } else {
            self.alpn.clone()
        };
        let o = TlsOptions {
            version: self.tls_version,
            server_name: self.sni.clone().unwrap_or(name),
            alpn,
            resume,
            verify,
            ciphers: self.tls_ciphers.clone(),
            groups: self.tls_groups.clone(),
            resume_share_pct: share.unwrap_or(100),
        };
        o.client_config().map_err(bad_input)?;
        Ok(o)
    }
}

/// The run record's TLS setup ([`results::record::TlsSetup`]) of what a client offered.
pub fn setup_of(o: &TlsOptions) -> results::record::TlsSetup {
    results::record::TlsSetup {
        version: match o.version {
            TlsVersion::Auto => "auto",
            TlsVersion::V12 => "1.2",
            TlsVersion::V13 => "1.3",
        }
        .into(),
        server_name: o.server_name.clone(),
        alpn: o.alpn.clone(),
        groups: o.offered_groups(),
        ciphers: o.offered_ciphers(),
        resume: match o.resume {
            Resume::Off => "off",
            Resume::Tickets => "tickets",
            Resume::Ids => "ids",
        }
        .into(),
        resume_share_pct: (o.resume != Resume::Off).then_some(o.resume_share_pct),
        verified: o.verified(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> TlsClientArgs {
        TlsClientArgs::default()
    }

    /// The share alone implies tickets; with `off` it is refused; outside 0–100% refused;
    /// `--insecure` with `--ca` refused; each with one line naming the option.
    #[test]
    fn resume_share_and_trust_options_are_checked_in_one_place() {
        let mut a = args();
        a.tls_resume_share = Some("30%".into());
        let o = a
            .options("localhost".into(), false, DefaultTrust::System)
            .unwrap();
        assert_eq!((o.resume, o.resume_share_pct), (Resume::Tickets, 30));
        a.tls_resume = Some(Resume::Off);
        let e = a
            .options("localhost".into(), false, DefaultTrust::System)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--tls-resume off"), "{e}");
        for bad in ["101%", "-1", "30.5%", "lots"] {
            let mut a = args();
            a.tls_resume_share = Some(bad.into());
            let e = a
                .options("localhost".into(), false, DefaultTrust::System)
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("--tls-resume-share") && !e.contains('\n'),
                "{e}"
            );
        }
        // A share of 0% alone, or with off: resumption stays off (no session kept or asked
        // for), recorded as off; with tickets given it keeps them and offers none.
        for resume in [None, Some(Resume::Off)] {
            let mut a = args();
            a.tls_resume = resume;
            a.tls_resume_share = Some("0%".into());
            let o = a
                .options("localhost".into(), false, DefaultTrust::System)
                .unwrap();
            assert_eq!(o.resume, Resume::Off, "{resume:?}");
            let setup = setup_of(&o);
            assert_eq!(
                (setup.resume.as_str(), setup.resume_share_pct),
                ("off", None)
            );
        }
        let mut a = args();
        a.tls_resume = Some(Resume::Tickets);
        a.tls_resume_share = Some("0".into());
        let o = a
            .options("localhost".into(), false, DefaultTrust::System)
            .unwrap();
        assert_eq!((o.resume, o.resume_share_pct), (Resume::Tickets, 0));
        let mut a = args();
        a.insecure = true;
        a.ca = Some("ca.pem".into());
        let e = a
            .options("localhost".into(), false, DefaultTrust::System)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--insecure and --ca ca.pem"), "{e}");
        // Defaults: no resumption, every connection would offer one if asked; ALPN with HTTP.
        let o = args()
            .options("example.com".into(), true, DefaultTrust::System)
            .unwrap();
        assert_eq!(o.resume, Resume::Off);
        assert_eq!(o.alpn, ["http/1.1"]);
        assert_eq!(o.server_name, "example.com");
        assert!(matches!(o.verify, Verify::Ca(_)));
    }
}
