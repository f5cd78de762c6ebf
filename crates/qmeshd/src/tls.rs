//! TLS on the agents' TCP port (rustls): the daemon shows its
//! certificate, and with a cluster CA configured, an agent must present a
//! client certificate that CA signed.
//!
//! The handshakes are done here, not inside tonic, so that an agent
//! refused for its certificate (none, or one another CA signed) is logged
//! with its address and the reason; tonic only sees connections that
//! passed. A refused agent retries (and tonic reconnects within each try),
//! so a refusal is logged once per address and reason and then at most
//! once a minute, with how many were not.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use qmesh_config::AgentTlsFiles;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;
use tracing::{debug, warn};

/// How long a connecting agent has to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// At most one refusal logged per address and reason in this time.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(60);

/// The acceptor for the configured files; errors name the file and what
/// is wrong with it.
pub fn acceptor(files: &AgentTlsFiles) -> anyhow::Result<TlsAcceptor> {
    let certs = certificates(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key).with_context(|| {
        format!(
            "read the daemon's TLS key {} (a PEM private key)",
            files.key.display()
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = match &files.client_ca {
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for cert in certificates(ca)? {
                roots.add(cert).with_context(|| {
                    format!(
                        "the cluster CA {} is not a usable CA certificate",
                        ca.display()
                    )
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .with_context(|| format!("client verifier for the CA {}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(certs, key).with_context(|| {
        format!(
            "the TLS certificate {} and key {} do not go together",
            files.cert.display(),
            files.key.display()
        )
    })?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The certificates of a PEM file; at least one.
fn certificates(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("read the PEM certificates in {}", path.display()))?;
    if certs.is_empty() {
        bail!("{} holds no PEM certificate", path.display());
    }
    Ok(certs)
}

/// The TLS connections of `listener` that passed their handshake, for
/// tonic. A failed handshake is logged and dropped; the accepting goes on.
pub fn incoming(
    listener: TcpListener,
    acceptor: TlsAcceptor,
) -> ReceiverStream<std::io::Result<TlsStream<TcpStream>>> {
    let (tx, rx) = mpsc::channel(64);
    let refusals = Arc::new(Refusals::default());
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    warn!(error = %e, "accept on the agents' TCP port");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            if tx.is_closed() {
                return;
            }
            let acceptor = acceptor.clone();
            let tx = tx.clone();
            let refusals = refusals.clone();
            tokio::spawn(async move {
                if let Some(stream) = handshake(acceptor, tcp, peer, &refusals).await
                    && tx.send(Ok(stream)).await.is_err()
                {
                    debug!(%peer, "the agents' server has stopped");
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

async fn handshake(
    acceptor: TlsAcceptor,
    tcp: TcpStream,
    peer: SocketAddr,
    refusals: &Refusals,
) -> Option<TlsStream<TcpStream>> {
    let (why, error): (&'static str, String) =
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
            Ok(Ok(stream)) => return Some(stream),
            Ok(Err(e)) => (refusal(&e), e.to_string()),
            Err(_) => ("no TLS handshake within 10 s", String::new()),
        };
    match refusals.to_log(peer.ip(), why, Instant::now()) {
        Some(0) => warn!(%peer, %error, "agent refused: {why}"),
        Some(held) => warn!(%peer, %error, held_back = held, "agent refused: {why}"),
        None => debug!(%peer, %error, "agent refused: {why}"),
    }
    None
}

/// An address and why it was refused.
type Refused = (IpAddr, &'static str);

/// Per address and reason, when a refusal was last logged and how many
/// were not since (see the module comment).
#[derive(Default)]
struct Refusals(Mutex<HashMap<Refused, (Instant, u64)>>);

impl Refusals {
    /// Whether to log a refusal of `ip` for `why` at `now`: `Some(n)` with
    /// the `n` held back since the last one logged, `None` to hold this
    /// one back.
    fn to_log(&self, ip: IpAddr, why: &'static str, now: Instant) -> Option<u64> {
        let mut seen = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Forget the quiet ones, so a scan of many addresses cannot grow it.
        if seen.len() > 1024 {
            seen.retain(|_, (at, _)| now.duration_since(*at) < REFUSAL_LOG_EVERY);
        }
        match seen.get_mut(&(ip, why)) {
            Some((at, held)) if now.duration_since(*at) < REFUSAL_LOG_EVERY => {
                *held += 1;
                None
            }
            Some((at, held)) => {
                *at = now;
                Some(std::mem::take(held))
            }
            None => {
                seen.insert((ip, why), (now, 0));
                Some(0)
            }
        }
    }
}

/// Why a handshake failed, in the words of what to do about it.
fn refusal(e: &std::io::Error) -> &'static str {
    use rustls::{CertificateError as Cert, Error};
    let tls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match tls {
        Some(Error::NoCertificatesPresented) => {
            "it presented no client certificate; give it --tls-cert-file and --tls-key-file, \
             a certificate the cluster CA (tls_client_ca_file) signed"
        }
        Some(Error::InvalidCertificate(Cert::UnknownIssuer | Cert::BadSignature)) => {
            "its client certificate is not signed by the cluster CA (tls_client_ca_file)"
        }
        Some(Error::InvalidCertificate(Cert::Expired | Cert::ExpiredContext { .. })) => {
            "its client certificate has expired"
        }
        Some(Error::InvalidCertificate(Cert::NotValidYet | Cert::NotValidYetContext { .. })) => {
            "its client certificate is not valid yet (are the clocks apart?)"
        }
        Some(Error::InvalidCertificate(_)) => "its client certificate is not acceptable",
        Some(Error::InvalidMessage(_)) => {
            "it does not speak TLS; give it --server https://HOST:PORT and --tls-ca-file"
        }
        Some(Error::AlertReceived(_)) => {
            "it gave up on the daemon's certificate; its --tls-ca-file must hold the CA that \
             signed the daemon's (tls_cert_file), and its --server name one the certificate names"
        }
        _ => "the TLS handshake failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_logged_once_a_minute_per_address_and_reason_with_the_count_held_back() {
        let refusals = Refusals::default();
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let t0 = Instant::now();
        assert_eq!(refusals.to_log(a, "no cert", t0), Some(0));
        assert_eq!(
            refusals.to_log(a, "no cert", t0 + Duration::from_secs(1)),
            None
        );
        assert_eq!(
            refusals.to_log(a, "no cert", t0 + Duration::from_secs(2)),
            None
        );
        assert_eq!(
            refusals.to_log(b, "no cert", t0 + Duration::from_secs(2)),
            Some(0)
        );
        assert_eq!(
            refusals.to_log(a, "not TLS", t0 + Duration::from_secs(2)),
            Some(0)
        );
        assert_eq!(
            refusals.to_log(a, "no cert", t0 + Duration::from_secs(61)),
            Some(2)
        );
        assert_eq!(
            refusals.to_log(a, "no cert", t0 + Duration::from_secs(62)),
            None
        );
    }
}
