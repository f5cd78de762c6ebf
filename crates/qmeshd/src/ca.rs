//! The cluster CA: made by qmeshd at its first start when the site gives
//! no PKI of its own, it signs the daemon's server certificate (anew at
//! every start, kept in memory only) and each agent's certificate at its
//! enrolment, bound to the host the agent proved the cluster key for.
//!
//! Where the CA lives is behind [`CaHome`], the one seam: today a
//! directory ([`CaDir`], the state directory's `ca/`, its key mode 0600).
//! A standby daemon taking over on another host will need the same CA,
//! from the shared store: that is one more `CaHome`, and nothing else
//! here changes.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use chrono::Datelike;
use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Why the CA could not be kept, found or used.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the cluster CA in {place} is damaged ({detail}); restore it from a backup, or \
         remove it so the daemon makes a new one (every agent then enrols again)"
    )]
    Damaged { place: String, detail: String },
    #[error("cannot make a certificate: {0}")]
    Make(#[from] rcgen::Error),
    #[error("the certificate request is not one the cluster CA signs: {0}")]
    Request(String),
    #[error("{0}")]
    Host(String),
}

/// A CA as kept: its certificate and its private key, PEM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaPem {
    pub cert: String,
    pub key: String,
}

/// Where the cluster CA lives.
pub trait CaHome {
    /// The CA kept here, if any.
    fn load(&self) -> Result<Option<CaPem>, CaError>;
    /// Keeps a new CA. It must not replace one already kept: the first
    /// one kept wins, and `load` then returns it.
    fn keep(&self, ca: &CaPem) -> Result<(), CaError>;
    /// Where, for messages.
    fn place(&self) -> String;
}

/// A directory: `ca.pem` (the certificate) and `ca.key` (mode 0600), in a
/// directory of mode 0700.
pub struct CaDir {
    dir: PathBuf,
}

impl CaDir {
    pub fn new(dir: impl Into<PathBuf>) -> CaDir {
        CaDir { dir: dir.into() }
    }

    fn cert_path(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    fn key_path(&self) -> PathBuf {
        self.dir.join("ca.key")
    }
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> CaError + 'a {
    move |source| CaError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

impl CaHome for CaDir {
    fn load(&self) -> Result<Option<CaPem>, CaError> {
        let (cert, key) = (self.cert_path(), self.key_path());
        let read = |path: &Path| match std::fs::read_to_string(path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io("read the cluster CA's", path)(e)),
        };
        match (read(&cert)?, read(&key)?) {
            (Some(cert), Some(key)) => Ok(Some(CaPem { cert, key })),
            (None, None) => Ok(None),
            _ => Err(CaError::Damaged {
                place: self.place(),
                detail: "one of ca.pem and ca.key is missing".into(),
            }),
        }
    }

    fn keep(&self, ca: &CaPem) -> Result<(), CaError> {
        std::fs::create_dir_all(&self.dir).map_err(io("make the directory", &self.dir))?;
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io("set the mode of", &self.dir))?;
        // The key first and never over another: a CA half kept is found
        // damaged at the next start, not silently replaced.
        write_new(&self.key_path(), &ca.key, 0o600)?;
        write_new(&self.cert_path(), &ca.cert, 0o644)
    }

    fn place(&self) -> String {
        self.dir.display().to_string()
    }
}

/// The cluster's store in etcd (docs/HA.md): every qmeshd of the queue
/// uses the CA the first one kept there, so an agent enrolled with one
/// head is trusted by the next after a failover. The record is the CA's
/// certificate and key as JSON under `<prefix>ca`; etcd's own TLS and
/// authentication guard it, as they guard the jobs.
pub struct CaInEtcd {
    pub store: std::sync::Arc<qmesh_store::EtcdStore>,
}

impl CaHome for CaInEtcd {
    fn load(&self) -> Result<Option<CaPem>, CaError> {
        let raw = self.store.read_extra("ca").map_err(|e| CaError::Damaged {
            place: self.place(),
            detail: e.to_string(),
        })?;
        raw.map(|bytes| {
            let v: serde_json::Value =
                serde_json::from_slice(&bytes).map_err(|e| CaError::Damaged {
                    place: self.place(),
                    detail: e.to_string(),
                })?;
            match (v["cert"].as_str(), v["key"].as_str()) {
                (Some(cert), Some(key)) => Ok(CaPem {
                    cert: cert.to_string(),
                    key: key.to_string(),
                }),
                _ => Err(CaError::Damaged {
                    place: self.place(),
                    detail: "the record lacks the certificate or the key".into(),
                }),
            }
        })
        .transpose()
    }

    fn keep(&self, ca: &CaPem) -> Result<(), CaError> {
        let record = serde_json::json!({ "cert": ca.cert, "key": ca.key }).to_string();
        self.store
            .keep_extra_once("ca", record.into_bytes())
            .map_err(|e| CaError::Damaged {
                place: self.place(),
                detail: e.to_string(),
            })
    }

    fn place(&self) -> String {
        format!("the store ({})", self.store.describe())
    }
}

/// Writes a file that must not exist yet, synced.
fn write_new(path: &Path, text: &str, mode: u32) -> Result<(), CaError> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(io("create", path))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io("write", path))
}

/// The cluster CA, ready to sign.
pub struct ClusterCa {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
    cert_der: CertificateDer<'static>,
}

impl std::fmt::Debug for ClusterCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterCa").finish_non_exhaustive()
    }
}

/// A certificate and its private key, for a TLS server.
pub struct ServerIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

impl ClusterCa {
    /// The CA kept in `home`, made and kept there first if there is none.
    /// Says whether it was made now.
    pub fn open(home: &dyn CaHome) -> Result<(ClusterCa, bool), CaError> {
        if let Some(pem) = home.load()? {
            return Ok((ClusterCa::from_pem(&pem, &home.place())?, false));
        }
        let made = ClusterCa::make()?;
        home.keep(&made)?;
        // Another daemon may have kept its own first: use what is kept.
        let kept = home.load()?.ok_or_else(|| CaError::Damaged {
            place: home.place(),
            detail: "it was not there after it was kept".into(),
        })?;
        Ok((ClusterCa::from_pem(&kept, &home.place())?, kept == made))
    }

    /// A new CA, not kept anywhere yet.
    fn make() -> Result<CaPem, CaError> {
        let mut params = CertificateParams::default();
        let mut name = DistinguishedName::new();
        name.push(DnType::CommonName, "qmesh cluster CA");
        params.distinguished_name = name;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.serial_number = Some(serial()?);
        set_validity(&mut params, 100);
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(CaPem {
            cert: cert.pem(),
            key: key.serialize_pem(),
        })
    }

    fn from_pem(pem: &CaPem, place: &str) -> Result<ClusterCa, CaError> {
        let damaged = |detail: String| CaError::Damaged {
            place: place.to_string(),
            detail,
        };
        let key = KeyPair::from_pem(&pem.key).map_err(|e| damaged(format!("its key: {e}")))?;
        let issuer = Issuer::from_ca_cert_pem(&pem.cert, key)
            .map_err(|e| damaged(format!("its certificate: {e}")))?;
        let der = x509_parser::pem::parse_x509_pem(pem.cert.as_bytes())
            .map_err(|e| damaged(format!("its certificate: {e}")))?
            .1
            .contents;
        Ok(ClusterCa {
            issuer,
            cert_pem: pem.cert.clone(),
            cert_der: CertificateDer::from(der),
        })
    }

    /// The CA's certificate, PEM, as agents keep it.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    pub fn cert_der(&self) -> &CertificateDer<'static> {
        &self.cert_der
    }

    /// A new server certificate for the daemon, for `names` (the first is
    /// the one agents check), with its key.
    pub fn server_identity(&self, names: &[String]) -> Result<ServerIdentity, CaError> {
        let mut params = CertificateParams::new(names.to_vec())?;
        params.distinguished_name.push(
            DnType::CommonName,
            names.first().map_or("qmeshd", String::as_str),
        );
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(serial()?);
        set_validity(&mut params, 10);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(ServerIdentity {
            chain: vec![cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        })
    }

    /// The certificate (PEM) of the agent of `host`, for the key pair of
    /// the request `csr` (DER). Of the request only its public key (and
    /// its signature, which proves the agent holds the private key) is
    /// taken: the name is the host the agent proved, and the certificate
    /// is for a TLS client only.
    pub fn issue_agent(&self, host: &str, csr: &[u8]) -> Result<String, CaError> {
        check_host(host)?;
        let mut request = CertificateSigningRequestParams::from_der(&csr.into()).map_err(|e| {
            CaError::Request(format!("{e}; is the agent the same version as the daemon?"))
        })?;
        let mut params = CertificateParams::default();
        params.subject_alt_names = vec![SanType::DnsName(
            host.try_into()
                .map_err(|e: rcgen::Error| CaError::Host(format!("host name \"{host}\": {e}")))?,
        )];
        params.distinguished_name.push(DnType::CommonName, host);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(serial()?);
        set_validity(&mut params, 10);
        request.params = params;
        Ok(request.signed_by(&self.issuer)?.pem())
    }
}

/// Whether `host` may be named in a certificate: what host names are
/// made of (letters, digits, `-`, `.`, `_`), up to 253 characters.
pub fn check_host(host: &str) -> Result<(), CaError> {
    if qmesh_proto::trust::is_certificate_host(host) {
        Ok(())
    } else {
        Err(CaError::Host(format!(
            "\"{host}\" is not a host name a certificate can bear (letters, digits, '-', '.', \
             '_'); start the agent with --host NAME"
        )))
    }
}

/// The host an agent's certificate from the cluster CA names (its one DNS
/// name), if it names exactly one. The handshake has already checked the
/// CA's signature.
pub fn certified_host(cert: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert).ok()?;
    let names = cert.subject_alternative_name().ok()??;
    let mut dns = names
        .value
        .general_names
        .iter()
        .filter_map(|name| match name {
            x509_parser::extensions::GeneralName::DNSName(host) => Some(host.to_string()),
            _ => None,
        });
    match (dns.next(), dns.next()) {
        (Some(host), None) => Some(host),
        _ => None,
    }
}

/// A random serial number (positive, 16 bytes).
fn serial() -> Result<SerialNumber, CaError> {
    let mut bytes =
        qmesh_proto::trust::random::<16>().map_err(|e| CaError::Request(e.to_string()))?;
    bytes[0] &= 0x7f;
    Ok(SerialNumber::from_slice(&bytes))
}

/// Valid from yesterday (clocks a little apart) to the first of this
/// month `years` on.
fn set_validity(params: &mut CertificateParams, years: i32) {
    let today = chrono::Utc::now().date_naive();
    let yesterday = today.pred_opt().unwrap_or(today);
    params.not_before = rcgen::date_time_ymd(
        yesterday.year(),
        yesterday.month() as u8,
        yesterday.day() as u8,
    );
    params.not_after = rcgen::date_time_ymd(today.year() + years, today.month() as u8, 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(names: &[&str]) -> (KeyPair, Vec<u8>) {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        let csr = params.serialize_request(&key).unwrap();
        (key, csr.der().to_vec())
    }

    #[test]
    fn the_ca_is_made_once_with_its_key_readable_by_the_daemon_alone() {
        let dir = tempfile::tempdir().unwrap();
        let home = CaDir::new(dir.path().join("ca"));
        let (first, made) = ClusterCa::open(&home).unwrap();
        assert!(made);
        let (again, made) = ClusterCa::open(&home).unwrap();
        assert!(!made, "kept, not made again");
        assert_eq!(first.cert_pem(), again.cert_pem());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("ca/ca.key")), 0o600);
        assert_eq!(mode(&dir.path().join("ca")), 0o700);
        // Kept elsewhere, it is the same CA: the seam a standby needs.
        let pem = home.load().unwrap().unwrap();
        let other = CaDir::new(dir.path().join("copy"));
        other.keep(&pem).unwrap();
        assert_eq!(
            ClusterCa::open(&other).unwrap().0.cert_pem(),
            first.cert_pem()
        );
        // It never replaces a CA already kept.
        assert!(matches!(other.keep(&pem), Err(CaError::Io { .. })));
    }

    #[test]
    fn a_half_kept_ca_is_reported_damaged_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let home = CaDir::new(dir.path());
        std::fs::write(dir.path().join("ca.key"), "x").unwrap();
        let err = ClusterCa::open(&home).unwrap_err().to_string();
        assert!(err.contains("ca.pem and ca.key"), "{err}");
        std::fs::write(dir.path().join("ca.pem"), "not a certificate").unwrap();
        let err = ClusterCa::open(&home).unwrap_err().to_string();
        assert!(
            err.contains("damaged") && err.contains("remove it"),
            "{err}"
        );
    }

    #[test]
    fn an_agent_s_certificate_names_the_host_it_proved_whatever_its_request_says() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, _) = ClusterCa::open(&CaDir::new(dir.path())).unwrap();
        let (_, csr) = request(&["qmeshd", "adm1"]);
        let pem = ca.issue_agent("node7", &csr).unwrap();
        let der = x509_parser::pem::parse_x509_pem(pem.as_bytes())
            .unwrap()
            .1
            .contents;
        assert_eq!(certified_host(&der).as_deref(), Some("node7"));
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let eku = cert.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth && !eku.server_auth, "a client only");
        // Signed by the CA.
        let (_, ca_cert) = x509_parser::parse_x509_certificate(ca.cert_der()).unwrap();
        cert.verify_signature(Some(ca_cert.public_key())).unwrap();
    }

    #[test]
    fn a_request_that_is_not_one_or_a_host_that_is_not_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, _) = ClusterCa::open(&CaDir::new(dir.path())).unwrap();
        let err = ca.issue_agent("node7", b"garbage").unwrap_err().to_string();
        assert!(err.contains("certificate request"), "{err}");
        let (_, csr) = request(&["x"]);
        // A request whose signature does not hold: its public key is not
        // proven to be the agent's.
        let mut forged = csr.clone();
        let last = forged.len() - 1;
        forged[last] ^= 1;
        assert!(ca.issue_agent("node7", &forged).is_err());
        for bad in ["", "a/b", "*.example", "-x", "x y"] {
            let err = ca.issue_agent(bad, &csr).unwrap_err().to_string();
            assert!(err.contains("--host NAME"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_server_certificate_names_what_agents_check() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, _) = ClusterCa::open(&CaDir::new(dir.path())).unwrap();
        let id = ca
            .server_identity(&["qmeshd".into(), "adm1".into()])
            .unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(&id.chain[0]).unwrap();
        let eku = cert.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.server_auth);
        // Not an agent's certificate: it names two hosts.
        assert_eq!(certified_host(&id.chain[0]), None);
    }
}
