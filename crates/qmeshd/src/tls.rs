//! TLS on the agents' TCP port (rustls), and what each connection there
//! tells the requests on it ([`AgentConn`]).
//!
//! With the cluster CA (the default, `crate::ca`) the daemon shows a
//! certificate the CA signed at this start, and asks agents for theirs:
//! an agent without one may still connect, to enrol or be refused by name
//! (`crate::trust`). With the site's PKI the daemon shows the site's
//! certificate, and with the site's client CA the handshake takes only
//! agents with a certificate it signed.
//!
//! The handshakes are done here, not inside tonic, so that an agent
//! refused for its certificate (none, or one another CA signed) is logged
//! with its address and the reason, and so that each connection's TLS
//! exporter and certificate reach its requests: tonic only sees
//! connections that passed. A refused agent retries (and tonic reconnects
//! within each try), so a refusal is logged once per address and reason
//! and then at most once a minute, with how many were not.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use qmesh_config::AgentTlsFiles;
use qmesh_proto::trust::{BINDING_LEN, EXPORTER_LABEL};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::Connected;
use tracing::{debug, warn};

use crate::ca::ClusterCa;

/// How long a connecting agent has to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// At most one refusal logged per address and reason in this time.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(60);

/// What a connection on the agents' port tells every request on it.
#[derive(Clone, Debug)]
pub struct AgentConn {
    pub remote: Option<SocketAddr>,
    /// The connection's TLS exporter ([`EXPORTER_LABEL`]); none on plain
    /// TCP. Proofs of the cluster key made on it include it.
    pub binding: Option<[u8; BINDING_LEN]>,
    pub client: ClientCert,
}

impl AgentConn {
    /// The exporter, or nothing on plain TCP.
    pub fn binding(&self) -> &[u8] {
        self.binding.as_ref().map_or(&[], |b| &b[..])
    }
}

/// The client certificate a connection presented, as far as trust goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientCert {
    None,
    /// One the site's CA signed.
    Site,
    /// One the cluster CA signed for this host.
    Cluster(String),
}

/// Which PKI the port's certificates come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pki {
    Site,
    Cluster,
}

/// The acceptor for the site's files; errors name the file and what is
/// wrong with it.
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

/// The acceptor with the cluster CA: a server certificate it signs now
/// for `names`, and client certificates it signed asked for but not
/// required (an agent enrols without one).
pub fn cluster_acceptor(ca: &ClusterCa, names: &[String]) -> anyhow::Result<TlsAcceptor> {
    let identity = ca
        .server_identity(names)
        .context("make the daemon's certificate with the cluster CA")?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    roots
        .add(ca.cert_der().clone())
        .context("the cluster CA's certificate is not usable as a CA")?;
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .context("client verifier for the cluster CA")?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_client_cert_verifier(verifier)
        .with_single_cert(identity.chain, identity.key)
        .context("the daemon's certificate from the cluster CA")?;
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

/// A connection on the agents' port, with what it tells its requests.
pub struct Conn<S> {
    io: S,
    info: AgentConn,
}

impl<S> Connected for Conn<S> {
    type ConnectInfo = AgentConn;

    fn connect_info(&self) -> AgentConn {
        self.info.clone()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Conn<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Conn<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Accepts on `listener` forever (until the receiver is gone), each
/// connection made ready by `ready` in a task of its own.
fn accept_loop<S, F, Fut>(listener: TcpListener, ready: F) -> ReceiverStream<io::Result<Conn<S>>>
where
    S: Send + 'static,
    F: Fn(TcpStream, SocketAddr) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Option<Conn<S>>> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(64);
    let ready = Arc::new(ready);
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
            // Without it a reply in several writes waits out the peer's
            // delayed ACK (40 ms per qstat relayed from a login node).
            let _ = tcp.set_nodelay(true);
            if tx.is_closed() {
                return;
            }
            let tx = tx.clone();
            let made = ready(tcp, peer);
            tokio::spawn(async move {
                if let Some(conn) = made.await
                    && tx.send(Ok(conn)).await.is_err()
                {
                    debug!(%peer, "the agents' server has stopped");
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

/// The plain TCP connections of `listener`, for tonic.
pub fn plain_incoming(listener: TcpListener) -> ReceiverStream<io::Result<Conn<TcpStream>>> {
    accept_loop(listener, |tcp, peer| async move {
        Some(Conn {
            io: tcp,
            info: AgentConn {
                remote: Some(peer),
                binding: None,
                client: ClientCert::None,
            },
        })
    })
}

/// The TLS connections of `listener` that passed their handshake, for
/// tonic. A failed handshake is logged and dropped; the accepting goes on.
pub fn incoming(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    pki: Pki,
) -> ReceiverStream<io::Result<Conn<TlsStream<TcpStream>>>> {
    let refusals = Arc::new(Refusals::default());
    accept_loop(listener, move |tcp, peer| {
        let acceptor = acceptor.clone();
        let refusals = refusals.clone();
        async move {
            let stream = handshake(acceptor, tcp, peer, &refusals).await?;
            let info = described(&stream, peer, pki)?;
            Some(Conn { io: stream, info })
        }
    })
}

/// What a connection that passed its handshake tells its requests.
fn described(stream: &TlsStream<TcpStream>, peer: SocketAddr, pki: Pki) -> Option<AgentConn> {
    let tls = stream.get_ref().1;
    let binding = match tls.export_keying_material([0u8; BINDING_LEN], EXPORTER_LABEL, None) {
        Ok(binding) => binding,
        Err(e) => {
            warn!(%peer, error = %e, "agent refused: no TLS exporter for its connection");
            return None;
        }
    };
    let presented = tls.peer_certificates().and_then(|certs| certs.first());
    let client = match (presented, pki) {
        (None, _) => ClientCert::None,
        (Some(_), Pki::Site) => ClientCert::Site,
        (Some(cert), Pki::Cluster) => {
            crate::ca::certified_host(cert).map_or(ClientCert::None, ClientCert::Cluster)
        }
    };
    Some(AgentConn {
        remote: Some(peer),
        binding: Some(binding),
        client,
    })
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
             a certificate the site's CA (tls_client_ca_file) signed"
        }
        Some(Error::InvalidCertificate(Cert::UnknownIssuer | Cert::BadSignature)) => {
            "its client certificate is not signed by the cluster CA (the site's \
             tls_client_ca_file, or the daemon's own); an agent enrolled with another daemon's \
             CA enrols again once its spool's tls directory is removed"
        }
        Some(Error::InvalidCertificate(Cert::Expired | Cert::ExpiredContext { .. })) => {
            "its client certificate has expired"
        }
        Some(Error::InvalidCertificate(Cert::NotValidYet | Cert::NotValidYetContext { .. })) => {
            "its client certificate is not valid yet (are the clocks apart?)"
        }
        Some(Error::InvalidCertificate(_)) => "its client certificate is not acceptable",
        Some(Error::InvalidMessage(_)) => {
            "it does not speak TLS; give it --server https://HOST:PORT (and --tls-ca-file where \
             the site's PKI is used)"
        }
        Some(Error::AlertReceived(_)) => {
            "it gave up on the daemon's certificate; with the site's PKI its --tls-ca-file must \
             hold the CA that signed the daemon's (tls_cert_file), and its --server name one the \
             certificate names; with the cluster CA it enrols again by itself"
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
