//! TLS to the daemon's TCP port, made here rather than inside tonic: at
//! enrolment the agent has no CA yet and takes the daemon's certificate
//! on the strength of its proof of the cluster key (`crate::trust`), and
//! every proof of the key includes the connection's TLS exporter, which
//! only the connection's own ends know.
//!
//! Three ways to check the daemon: the site's CA (`--tls-ca-file`, with
//! this agent's certificate when the daemon asks for one); the cluster
//! CA this agent got at enrolment, kept with its certificate in the
//! spool's `tls/`; or, for enrolment only, none.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use qmesh_proto::trust::{BINDING_LEN, EXPORTER_LABEL};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::crypto::{
    CryptoProvider, verify_tls12_signature, verify_tls13_signature,
};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    self, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tonic::codegen::http::Uri;
use tonic::codegen::{Context, Poll, Service};

use crate::error::{AgentError, Result};

/// How long the relay's first connection waits for this agent's
/// enrolment before it gives up.
const ENROLMENT_WAIT: Duration = Duration::from_secs(10);

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn builder() -> Result<rustls::ConfigBuilder<ClientConfig, rustls::WantsVerifier>> {
    ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| AgentError::Config(format!("TLS protocol versions: {e}")))
}

fn finish(mut config: ClientConfig) -> Arc<ClientConfig> {
    config.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(config)
}

fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| AgentError::Config(format!("{what} is not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(AgentError::Config(format!(
            "{what} holds no PEM certificate"
        )));
    }
    Ok(certs)
}

fn roots(pem: &[u8], what: &str) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(pem, what)? {
        roots
            .add(cert)
            .map_err(|e| AgentError::Config(format!("{what} is not a usable CA: {e}")))?;
    }
    Ok(roots)
}

fn with_identity(
    builder: rustls::ConfigBuilder<ClientConfig, rustls::client::WantsClientCert>,
    cert: &[u8],
    key: &[u8],
    what: &str,
) -> Result<ClientConfig> {
    let chain = certificates(cert, what)?;
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|e| AgentError::Config(format!("the key of {what} is not a PEM key: {e}")))?;
    builder
        .with_client_auth_cert(chain, key)
        .map_err(|e| AgentError::Config(format!("{what} and its key do not go together: {e}")))
}

/// The site's PKI: its CA, and this agent's certificate and key if the
/// daemon asks for one.
pub fn site_config(
    ca: &Path,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> Result<Arc<ClientConfig>> {
    let read = |what: &'static str, path: &Path| {
        std::fs::read(path).map_err(|e| AgentError::io(what, path, e))
    };
    let roots = roots(
        &read("read the TLS CA file", ca)?,
        &ca.display().to_string(),
    )?;
    let builder = builder()?.with_root_certificates(roots);
    let config = match (cert, key) {
        (Some(cert), Some(key)) => with_identity(
            builder,
            &read("read the TLS certificate file", cert)?,
            &read("read the TLS key file", key)?,
            &cert.display().to_string(),
        )?,
        _ => builder.with_no_client_auth(),
    };
    Ok(finish(config))
}

/// What this agent got at enrolment: the cluster CA's certificate, its
/// own, and its own private key (PEM).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub ca: String,
    pub cert: String,
    pub key: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").finish_non_exhaustive()
    }
}

/// With the cluster CA: the daemon's certificate must be the CA's, and
/// this agent shows its own.
pub fn cluster_config(creds: &Credentials) -> Result<Arc<ClientConfig>> {
    let roots = roots(creds.ca.as_bytes(), "the cluster CA this agent keeps")?;
    let builder = builder()?.with_root_certificates(roots);
    Ok(finish(with_identity(
        builder,
        creds.cert.as_bytes(),
        creds.key.as_bytes(),
        "this agent's certificate",
    )?))
}

/// For enrolment: any daemon's certificate. Who the daemon is, is proven
/// by its answer (an HMAC under the cluster key over this connection),
/// not by a CA; the handshake's signatures are still checked, so the
/// exporter the proofs include belongs to whoever holds that
/// certificate's key.
pub fn enrolment_config() -> Result<Arc<ClientConfig>> {
    let verifier = Arc::new(ProvenLater(provider()));
    Ok(finish(
        builder()?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth(),
    ))
}

/// See [`enrolment_config`].
#[derive(Debug)]
struct ProvenLater(Arc<CryptoProvider>);

impl ServerCertVerifier for ProvenLater {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Whether `host` can be named in a certificate and a file name: what
/// host names are made of (letters, digits, `-`, `.`, `_`).
pub fn check_host(host: &str) -> Result<()> {
    if qmesh_proto::trust::is_certificate_host(host) {
        Ok(())
    } else {
        Err(AgentError::Config(format!(
            "--host \"{host}\" is not a host name a certificate can bear (letters, digits, \
             '-', '.', '_')"
        )))
    }
}

/// Where an enrolled agent keeps what it got: `DIR/ca.pem`, and
/// `DIR/HOST.pem` and `DIR/HOST.key` (mode 0600) for each host it
/// enrolled as, in a directory of mode 0700.
#[derive(Clone, Debug)]
pub struct CredentialFiles {
    dir: PathBuf,
}

impl CredentialFiles {
    pub fn new(dir: impl Into<PathBuf>) -> CredentialFiles {
        CredentialFiles { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn paths(&self, host: &str) -> [PathBuf; 3] {
        [
            self.dir.join("ca.pem"),
            self.dir.join(format!("{host}.pem")),
            self.dir.join(format!("{host}.key")),
        ]
    }

    /// What this agent keeps for `host`, if it has all of it.
    pub fn load(&self, host: &str) -> Result<Option<Credentials>> {
        let mut texts = Vec::with_capacity(3);
        for path in self.paths(host) {
            match std::fs::read_to_string(&path) {
                Ok(text) => texts.push(text),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(AgentError::io("read", path, e)),
            }
        }
        let key = texts.pop().unwrap_or_default();
        let cert = texts.pop().unwrap_or_default();
        let ca = texts.pop().unwrap_or_default();
        Ok(Some(Credentials { ca, cert, key }))
    }

    /// Keeps what enrolment gave, each file replaced whole.
    pub fn keep(&self, host: &str, creds: &Credentials) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| AgentError::io("make the directory", &self.dir, e))?;
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| AgentError::io("set the mode of", &self.dir, e))?;
        let [ca, cert, key] = self.paths(host);
        // The key last: a certificate without its key is not loaded.
        crate::record::write_atomic(&ca, creds.ca.as_bytes(), 0o644)?;
        crate::record::write_atomic(&cert, creds.cert.as_bytes(), 0o644)?;
        crate::record::write_atomic(&key, creds.key.as_bytes(), 0o600)
    }

    /// Forgets what this agent keeps for `host` (the daemon's CA changed).
    pub fn forget(&self, host: &str) {
        for path in self.paths(host) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The TLS exporter of a channel's latest connection, which proofs made
/// on that channel include.
#[derive(Clone, Debug, Default)]
pub struct Binding(Arc<Mutex<Option<[u8; BINDING_LEN]>>>);

impl Binding {
    /// The exporter, or nothing (plain TCP, not connected yet).
    pub fn get(&self) -> Vec<u8> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map_or_else(Vec::new, |b| b.to_vec())
    }

    fn set(&self, binding: [u8; BINDING_LEN]) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(binding);
    }
}

/// Where a connector takes its TLS settings from.
#[derive(Clone, Debug)]
pub enum Source {
    Fixed(Arc<ClientConfig>),
    /// What this agent's enrolment gave; the connection waits for it.
    /// `ca_refused` is set when the daemon's certificate is not the
    /// cluster CA's this agent keeps (the daemon's CA changed).
    Enrolled {
        config: watch::Receiver<Option<Arc<ClientConfig>>>,
        ca_refused: Arc<AtomicBool>,
    },
}

/// Makes tonic's connections: TCP to `addr`, TLS as `source` says, the
/// exporter kept in `binding`. The channel's URL is only its name.
#[derive(Clone, Debug)]
pub struct Connector {
    pub addr: String,
    pub name: ServerName<'static>,
    pub source: Source,
    pub binding: Binding,
}

type Connecting =
    Pin<Box<dyn std::future::Future<Output = io::Result<TokioIo<TlsStream<TcpStream>>>> + Send>>;

impl Service<Uri> for Connector {
    type Response = TokioIo<TlsStream<TcpStream>>;
    type Error = io::Error;
    type Future = Connecting;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: Uri) -> Connecting {
        let this = self.clone();
        Box::pin(async move { this.connect().await })
    }
}

impl Connector {
    async fn connect(self) -> io::Result<TokioIo<TlsStream<TcpStream>>> {
        let (config, ca_refused) = match self.source {
            Source::Fixed(config) => (config, None),
            Source::Enrolled {
                mut config,
                ca_refused,
            } => {
                let ready = tokio::time::timeout(ENROLMENT_WAIT, config.wait_for(|c| c.is_some()))
                    .await
                    .ok()
                    .and_then(|got| got.ok().and_then(|c| c.clone()));
                let Some(config) = ready else {
                    return Err(io::Error::other(
                        "this host's agent has not enrolled with the daemon yet; see its log",
                    ));
                };
                (config, Some(ca_refused))
            }
        };
        let tcp = TcpStream::connect(&self.addr).await?;
        tcp.set_nodelay(true)?;
        let tls = match TlsConnector::from(config).connect(self.name, tcp).await {
            Ok(tls) => tls,
            Err(e) => {
                if let Some(flag) = ca_refused
                    && another_ca(&e)
                {
                    flag.store(true, Ordering::SeqCst);
                }
                return Err(e);
            }
        };
        let binding = tls
            .get_ref()
            .1
            .export_keying_material([0u8; BINDING_LEN], EXPORTER_LABEL, None)
            .map_err(io::Error::other)?;
        self.binding.set(binding);
        Ok(TokioIo::new(tls))
    }
}

/// Whether a handshake failed because the daemon's certificate is not
/// signed by the CA this agent trusts.
fn another_ca(e: &io::Error) -> bool {
    let tls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    matches!(
        tls,
        Some(rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer | CertificateError::BadSignature
        ))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_kept_with_the_key_readable_by_the_agent_alone_and_per_host() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let files = CredentialFiles::new(dir.path().join("tls"));
        assert!(files.load("n1").unwrap().is_none());
        let creds = Credentials {
            ca: "CA".into(),
            cert: "CERT".into(),
            key: "KEY".into(),
        };
        files.keep("n1", &creds).unwrap();
        assert_eq!(files.load("n1").unwrap(), Some(creds));
        assert!(files.load("n2").unwrap().is_none(), "another host's");
        let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(dir.path().join("tls/n1.key")), 0o600);
        assert_eq!(mode(dir.path().join("tls")), 0o700);
        files.forget("n1");
        assert!(files.load("n1").unwrap().is_none());
        assert!(!format!("{:?}", files.load("n1")).contains("KEY"));
    }

    #[test]
    fn a_site_file_that_is_not_there_or_not_pem_is_named() {
        let err = site_config(Path::new("/nonexistent/ca.pem"), None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not pem").unwrap();
        let err = site_config(&ca, None, None).unwrap_err().to_string();
        assert!(err.contains("ca.pem") && err.contains("no PEM"), "{err}");
        let err = cluster_config(&Credentials {
            ca: String::new(),
            cert: String::new(),
            key: String::new(),
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("cluster CA"), "{err}");
        enrolment_config().unwrap();
        check_host("node7.example").unwrap();
        for bad in ["", "../x", "a/b", ".x", "x y"] {
            let err = check_host(bad).unwrap_err().to_string();
            assert!(err.contains("--host"), "{bad}: {err}");
        }
    }
}
