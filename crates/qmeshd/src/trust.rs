//! Whom the agents' TCP port believes, and on what proof.
//!
//! Another host's agent proves it holds the cluster key by answering a
//! challenge: the daemon gives a nonce (`Agent.Challenge`), the agent
//! sends an HMAC under the key over the nonce, the host it claims and the
//! TLS connection (`qmesh_proto::trust`). The key never travels. A nonce
//! is good for one proof, within a minute, and only from this daemon
//! process: it carries its own time and a MAC under a secret the daemon
//! draws at start, so giving one costs no memory, and only proofs that
//! hold are remembered (to refuse their replay).
//!
//! With the cluster CA (`crate::ca`, the default) an agent first enrols:
//! it proves the key for its host and a certificate request, and gets a
//! certificate naming that host, with a proof of the key over it and the
//! CA's certificate. From then on its connections present that
//! certificate, and the daemon takes a session, or a relayed command,
//! only for the host the certificate names. With the site's PKI the
//! site's certificates are checked in the TLS handshake as before.
//!
//! The local agent on the daemon's Unix socket is trusted by the socket's
//! mode (0600) and proves nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use qmesh_proto::trust::{ClusterKey, Statement};
use qmesh_proto::v1;
use ring::hmac;

use crate::ca::{CaError, ClusterCa};
use crate::tls::{AgentConn, ClientCert};

/// How long a nonce is good for.
const NONCE_LIFE: Duration = Duration::from_secs(60);

/// What the agents' port uses for TLS, as far as trust goes.
#[derive(Debug)]
pub enum Mode {
    /// Plain TCP (`tls = false`), or no TCP port at all.
    Plain,
    /// The site's PKI; with `client_certificates`, the handshake takes
    /// only agents with a certificate the site's CA signed.
    Site { client_certificates: bool },
    /// The cluster CA: agents enrol, and their certificates name their
    /// host.
    Cluster(Arc<ClusterCa>),
}

/// Why an agent, or a command it relays, is refused. The text names the
/// host and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(
        "the agent for host \"{host}\" sent the cluster key in the clear, which this daemon \
         no longer accepts: upgrade qmesh-agent on {host} (agents now prove the key without \
         sending it)"
    )]
    KeyInTheClear { host: String },
    #[error(
        "the agent for host \"{host}\" proved no cluster key; give it --cluster-key-file with \
         the daemon's key"
    )]
    NoProof { host: String },
    #[error(
        "the agent for host \"{host}\" proved a wrong cluster key; check its --cluster-key-file \
         (it must hold the daemon's key). With the right key, its proof was made on another TLS \
         connection: something between the agent and the daemon is not the daemon"
    )]
    WrongKey { host: String },
    #[error(
        "the agent for host \"{host}\" answered a challenge this daemon did not give, gave over \
         a minute ago, or saw answered already; it asks for a new one"
    )]
    StaleNonce { host: String },
    #[error(
        "the agent for host \"{host}\" has no certificate from the cluster CA; start it with \
         --server https://HOST:PORT and --cluster-key-file (no --tls-ca-file): it enrols by \
         itself"
    )]
    NoCertificate { host: String },
    #[error(
        "the agent claims host \"{claimed}\" but its certificate names host \"{certified}\": a \
         certificate is good for its own host only (an agent that changed its --host enrols \
         again once its spool's tls directory is removed)"
    )]
    OtherHost { claimed: String, certified: String },
    #[error(
        "this daemon enrols no agents: {why}; give the agent --tls-ca-file (and its own \
         certificate) as the site's PKI says"
    )]
    NoClusterCa { why: &'static str },
    #[error("host \"{host}\": {source}")]
    Certificate {
        host: String,
        #[source]
        source: CaError,
    },
}

impl Refusal {
    /// The refusal in a few fixed words, for logs held to one line a
    /// minute per address and reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::KeyInTheClear { .. } => "the cluster key sent in the clear (an old agent)",
            Refusal::NoProof { .. } => "no proof of the cluster key",
            Refusal::WrongKey { .. } => "a wrong cluster key",
            Refusal::StaleNonce { .. } => "a stale or replayed challenge",
            Refusal::NoCertificate { .. } => "no certificate from the cluster CA",
            Refusal::OtherHost { .. } => "a certificate for another host",
            Refusal::NoClusterCa { .. } => "an enrolment with no cluster CA",
            Refusal::Certificate { .. } => "a certificate that cannot be issued",
        }
    }

    /// Whether the refusal is about the agent's proof (unauthenticated),
    /// not what it asked.
    pub fn unauthenticated(&self) -> bool {
        !matches!(
            self,
            Refusal::NoClusterCa { .. } | Refusal::Certificate { .. }
        )
    }
}

/// A relayed caller, as the relay's metadata names it.
#[derive(Clone, Copy, Debug)]
pub struct RelayedCaller<'a> {
    pub host: &'a str,
    pub uid: u32,
    pub gid: u32,
    pub user: &'a str,
    pub group: &'a str,
}

/// What a relayed request offers as proof.
#[derive(Clone, Copy, Debug, Default)]
pub struct RelayProof<'a> {
    /// The nonce and the proof, hex.
    pub nonce: Option<&'a str>,
    pub proof: Option<&'a str>,
    /// It carries the key itself, as old agents sent it.
    pub legacy_key: bool,
}

pub struct Trust {
    key: Option<ClusterKey>,
    mode: Mode,
    nonces: Nonces,
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust")
            .field("key", &self.key.is_some())
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Trust {
    /// Trust with `key` in `mode`. Only the site's client certificates
    /// may stand without a key: anything else would take any agent.
    pub fn new(key: Option<ClusterKey>, mode: Mode) -> anyhow::Result<Trust> {
        let certified = matches!(
            mode,
            Mode::Site {
                client_certificates: true
            }
        );
        anyhow::ensure!(
            key.is_some() || certified,
            "the agents' port needs the cluster key (cluster_key_file) or the site's client \
             certificates (tls_client_ca_file)"
        );
        Ok(Trust {
            key,
            mode,
            nonces: Nonces::new()?,
        })
    }

    /// No TCP port: nothing is believed from other hosts.
    pub fn local_only() -> Trust {
        Trust {
            key: None,
            mode: Mode::Plain,
            nonces: Nonces::new().unwrap_or_else(|_| Nonces::fixed()),
        }
    }

    /// A fresh nonce for one proof.
    pub fn challenge(&self) -> Vec<u8> {
        self.nonces.give(Instant::now())
    }

    /// Whether `hello` may open a session, as it came on `conn` (`None`:
    /// the daemon's Unix socket).
    pub fn check_hello(
        &self,
        hello: &v1::AgentHello,
        conn: Option<&AgentConn>,
    ) -> Result<(), Refusal> {
        let Some(conn) = conn else {
            return Ok(());
        };
        let host = hello.host.as_str();
        if let Mode::Cluster(_) = self.mode {
            match &conn.client {
                ClientCert::Cluster(certified) if certified == host => {}
                ClientCert::Cluster(certified) => {
                    return Err(Refusal::OtherHost {
                        claimed: host.into(),
                        certified: certified.clone(),
                    });
                }
                _ => return Err(Refusal::NoCertificate { host: host.into() }),
            }
        }
        let Some(key) = &self.key else {
            // The site's client certificate, checked in the handshake.
            return Ok(());
        };
        if hello.proof.is_empty() {
            return Err(if hello.cluster_key.is_empty() {
                Refusal::NoProof { host: host.into() }
            } else {
                Refusal::KeyInTheClear { host: host.into() }
            });
        }
        let statement = Statement::Hello {
            nonce: &hello.nonce,
            host,
            binding: conn.binding(),
        };
        self.redeem(key, &statement, &hello.nonce, &hello.proof, host)
    }

    /// An agent's enrolment: its certificate, and the daemon's proof.
    pub fn enrol(
        &self,
        request: &v1::EnrolRequest,
        conn: Option<&AgentConn>,
    ) -> Result<v1::Enrolled, Refusal> {
        let host = request.host.as_str();
        let Mode::Cluster(ca) = &self.mode else {
            let why = match self.mode {
                Mode::Plain => "its agents' port is plain TCP (tls = false)",
                _ => "the site's PKI is configured (tls_cert_file)",
            };
            return Err(Refusal::NoClusterCa { why });
        };
        let (Some(key), Some(conn)) = (&self.key, conn) else {
            return Err(Refusal::NoClusterCa {
                why: "an agent enrols on the agents' TCP port only",
            });
        };
        let binding = conn.binding();
        let statement = Statement::Enrol {
            nonce: &request.nonce,
            host,
            binding,
            csr: &request.csr,
            agent_nonce: &request.agent_nonce,
        };
        if request.proof.is_empty() {
            return Err(Refusal::NoProof { host: host.into() });
        }
        self.redeem(key, &statement, &request.nonce, &request.proof, host)?;
        let certificate =
            ca.issue_agent(host, &request.csr)
                .map_err(|source| Refusal::Certificate {
                    host: host.into(),
                    source,
                })?;
        let proof = key.prove(&Statement::Enrolled {
            nonce: &request.nonce,
            agent_nonce: &request.agent_nonce,
            host,
            binding,
            certificate: &certificate,
            ca: ca.cert_pem(),
        });
        Ok(v1::Enrolled {
            certificate,
            ca: ca.cert_pem().to_string(),
            proof,
        })
    }

    /// Whether a command relayed by the agent of `caller.host` on `conn`
    /// is vouched for: by the connection's certificate from the cluster
    /// CA for that host, else by a proof of the key, else (the site's PKI
    /// without a key) by a client certificate the site's CA signed.
    pub fn vouch_relay(
        &self,
        caller: &RelayedCaller<'_>,
        offered: &RelayProof<'_>,
        conn: &AgentConn,
    ) -> Result<(), Refusal> {
        let host = caller.host;
        if let ClientCert::Cluster(certified) = &conn.client {
            return if certified == host {
                Ok(())
            } else {
                Err(Refusal::OtherHost {
                    claimed: host.into(),
                    certified: certified.clone(),
                })
            };
        }
        let Some(key) = &self.key else {
            return match conn.client {
                ClientCert::Site => Ok(()),
                _ => Err(Refusal::NoProof { host: host.into() }),
            };
        };
        let hex = |text: Option<&str>| text.and_then(qmesh_proto::trust::from_hex);
        let (Some(nonce), Some(proof)) = (hex(offered.nonce), hex(offered.proof)) else {
            return Err(if offered.legacy_key {
                Refusal::KeyInTheClear { host: host.into() }
            } else {
                Refusal::NoProof { host: host.into() }
            });
        };
        let statement = Statement::Relay {
            nonce: &nonce,
            host,
            binding: conn.binding(),
            uid: caller.uid,
            gid: caller.gid,
            user: caller.user,
            group: caller.group,
        };
        self.redeem(key, &statement, &nonce, &proof, host)
    }

    /// Checks a proof of `statement` over `nonce`, and takes the nonce so
    /// that it proves nothing again. A nonce is taken only by a proof that
    /// holds: one seen on the wire cannot be spent by another.
    fn redeem(
        &self,
        key: &ClusterKey,
        statement: &Statement<'_>,
        nonce: &[u8],
        proof: &[u8],
        host: &str,
    ) -> Result<(), Refusal> {
        let now = Instant::now();
        let stale = || Refusal::StaleNonce { host: host.into() };
        let given = self.nonces.check(nonce, now).ok_or_else(stale)?;
        if !key.verify(statement, proof) {
            return Err(Refusal::WrongKey { host: host.into() });
        }
        if self.nonces.take(given, now) {
            Ok(())
        } else {
            Err(stale())
        }
    }
}

/// A nonce's parts: when it was given (seconds since the daemon's
/// start), 16 random bytes, and a MAC of both under the daemon's secret.
const NONCE_LEN: usize = 8 + 16 + 32;

/// The nonces this daemon gives, and those already answered.
struct Nonces {
    secret: hmac::Key,
    born: Instant,
    /// Answered nonces (their random part) and when they were given;
    /// forgotten once too old to be answered anyway.
    taken: Mutex<Taken>,
}

/// The answered nonces, and the age (seconds) they were last swept at.
/// A sweep walks them all, so it runs at most once a second: thousands of
/// agents proving the key at once (a daemon's restart) must not walk the
/// list once each, O(agents²).
#[derive(Default)]
struct Taken {
    nonces: HashMap<[u8; 16], u64>,
    swept: u64,
}

impl Nonces {
    fn new() -> anyhow::Result<Nonces> {
        let secret = qmesh_proto::trust::random::<32>()?;
        Ok(Nonces {
            secret: hmac::Key::new(hmac::HMAC_SHA256, &secret),
            born: Instant::now(),
            taken: Mutex::default(),
        })
    }

    /// For a daemon with no TCP port whose random numbers failed: its
    /// nonces are never answered anyway (no key).
    fn fixed() -> Nonces {
        Nonces {
            secret: hmac::Key::new(hmac::HMAC_SHA256, b"no agents' port"),
            born: Instant::now(),
            taken: Mutex::default(),
        }
    }

    fn age(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.born).as_secs()
    }

    fn give(&self, now: Instant) -> Vec<u8> {
        let mut nonce = Vec::with_capacity(NONCE_LEN);
        nonce.extend_from_slice(&self.age(now).to_be_bytes());
        // The MAC keeps a nonce unique even if the random bytes failed.
        let random = qmesh_proto::trust::random::<16>().unwrap_or_default();
        nonce.extend_from_slice(&random);
        let tag = hmac::sign(&self.secret, &nonce);
        nonce.extend_from_slice(tag.as_ref());
        nonce
    }

    /// The nonce's random part and time, if this daemon gave it less than
    /// a minute ago.
    fn check(&self, nonce: &[u8], now: Instant) -> Option<([u8; 16], u64)> {
        if nonce.len() != NONCE_LEN {
            return None;
        }
        let (given, tag) = nonce.split_at(24);
        hmac::verify(&self.secret, given, tag).ok()?;
        let when = u64::from_be_bytes(given[..8].try_into().ok()?);
        if self.age(now).saturating_sub(when) > NONCE_LIFE.as_secs() {
            return None;
        }
        Some((given[8..24].try_into().ok()?, when))
    }

    /// Takes an answered nonce; false if it was taken already.
    fn take(&self, (random, when): ([u8; 16], u64), now: Instant) -> bool {
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        let age = self.age(now);
        if taken.nonces.len() >= 1024 && taken.swept != age {
            taken.swept = age;
            taken
                .nonces
                .retain(|_, given| age.saturating_sub(*given) <= NONCE_LIFE.as_secs());
        }
        taken.nonces.insert(random, when).is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> ClusterKey {
        ClusterKey::from_file_text(text).unwrap()
    }

    fn tcp(binding: Option<[u8; 32]>, client: ClientCert) -> AgentConn {
        AgentConn {
            remote: Some("10.0.0.7:40000".parse().unwrap()),
            binding,
            client,
        }
    }

    fn hello(trust: &Trust, with: &ClusterKey, host: &str, binding: &[u8]) -> v1::AgentHello {
        let nonce = trust.challenge();
        let proof = with.prove(&Statement::Hello {
            nonce: &nonce,
            host,
            binding,
        });
        v1::AgentHello {
            host: host.into(),
            nonce,
            proof,
            ..Default::default()
        }
    }

    #[test]
    fn a_hello_proving_the_key_passes_once_and_a_wrong_key_or_the_key_in_the_clear_do_not() {
        let trust = Trust::new(Some(key("right")), Mode::Plain).unwrap();
        let conn = tcp(None, ClientCert::None);
        let good = hello(&trust, &key("right"), "n1", b"");
        trust.check_hello(&good, Some(&conn)).unwrap();
        // The same answer again: a replay.
        let err = trust.check_hello(&good, Some(&conn)).unwrap_err();
        assert!(matches!(err, Refusal::StaleNonce { .. }), "{err}");

        let wrong = hello(&trust, &key("wrong"), "n1", b"");
        let err = trust.check_hello(&wrong, Some(&conn)).unwrap_err();
        assert!(err.to_string().contains("wrong cluster key"), "{err}");
        assert!(err.to_string().contains("--cluster-key-file"), "{err}");
        // The wrong answer did not spend the nonce: the right one still may.
        let mut fixed = wrong.clone();
        fixed.proof = key("right").prove(&Statement::Hello {
            nonce: &wrong.nonce,
            host: "n1",
            binding: b"",
        });
        trust.check_hello(&fixed, Some(&conn)).unwrap();

        let old = v1::AgentHello {
            host: "n1".into(),
            cluster_key: "right".into(),
            ..Default::default()
        };
        let err = trust
            .check_hello(&old, Some(&conn))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("in the clear") && err.contains("upgrade"),
            "{err}"
        );
        let none = v1::AgentHello {
            host: "n1".into(),
            ..Default::default()
        };
        let err = trust.check_hello(&none, Some(&conn)).unwrap_err();
        assert!(matches!(err, Refusal::NoProof { .. }), "{err}");
        // The local socket proves nothing.
        trust.check_hello(&none, None).unwrap();
    }

    #[test]
    fn a_proof_made_for_another_connection_or_another_host_does_not_pass() {
        let trust = Trust::new(Some(key("k")), Mode::Plain).unwrap();
        let on_a = hello(&trust, &key("k"), "n1", &[1; 32]);
        let err = trust
            .check_hello(&on_a, Some(&tcp(Some([2; 32]), ClientCert::None)))
            .unwrap_err();
        assert!(matches!(err, Refusal::WrongKey { .. }), "{err}");
        let mut other = hello(&trust, &key("k"), "n1", b"");
        other.host = "n2".into();
        assert!(
            trust
                .check_hello(&other, Some(&tcp(None, ClientCert::None)))
                .is_err()
        );
    }

    #[test]
    fn answered_nonces_are_swept_once_a_second_and_stay_taken_until_too_old() {
        let nonces = Nonces::new().unwrap();
        let t0 = nonces.born;
        let random = |i: u32| {
            let mut r = [0u8; 16];
            r[..4].copy_from_slice(&i.to_be_bytes());
            r
        };
        // 1,100 answered at second 0: more than a sweep's threshold.
        for i in 0..1100 {
            assert!(nonces.take((random(i), 0), t0));
        }
        assert!(!nonces.take((random(5), 0), t0), "taken once only");
        // A minute and more later, the next take sweeps them away, once.
        let later = t0 + NONCE_LIFE + Duration::from_secs(2);
        assert!(nonces.take((random(2000), 62), later));
        let taken = nonces.taken.lock().unwrap();
        assert_eq!(taken.nonces.len(), 1, "the old ones are forgotten");
        assert_eq!(taken.swept, 62);
    }

    #[test]
    fn a_nonce_not_given_here_or_given_over_a_minute_ago_is_refused() {
        let trust = Trust::new(Some(key("k")), Mode::Plain).unwrap();
        let other = Trust::new(Some(key("k")), Mode::Plain).unwrap();
        let conn = tcp(None, ClientCert::None);
        let theirs = hello(&other, &key("k"), "n1", b"");
        let err = trust.check_hello(&theirs, Some(&conn)).unwrap_err();
        assert!(matches!(err, Refusal::StaleNonce { .. }), "{err}");
        let now = Instant::now();
        let nonce = trust.nonces.give(now);
        assert!(trust.nonces.check(&nonce, now + NONCE_LIFE).is_some());
        assert!(
            trust
                .nonces
                .check(&nonce, now + NONCE_LIFE + Duration::from_secs(1))
                .is_none()
        );
        let mut forged = nonce.clone();
        forged[0] ^= 1;
        assert!(
            trust.nonces.check(&forged, now).is_none(),
            "its time changed"
        );
    }

    #[test]
    fn with_the_cluster_ca_a_session_needs_a_certificate_for_the_host_it_claims() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, _) = ClusterCa::open(&crate::ca::CaDir::new(dir.path())).unwrap();
        let trust = Trust::new(Some(key("k")), Mode::Cluster(Arc::new(ca))).unwrap();
        let binding = [7; 32];
        let a = tcp(Some(binding), ClientCert::Cluster("hostA".into()));
        trust
            .check_hello(&hello(&trust, &key("k"), "hostA", &binding), Some(&a))
            .unwrap();
        let err = trust
            .check_hello(&hello(&trust, &key("k"), "hostB", &binding), Some(&a))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("claims host \"hostB\"") && err.contains("names host \"hostA\""),
            "{err}"
        );
        let bare = tcp(Some(binding), ClientCert::None);
        let err = trust
            .check_hello(&hello(&trust, &key("k"), "hostA", &binding), Some(&bare))
            .unwrap_err();
        assert!(matches!(err, Refusal::NoCertificate { .. }), "{err}");
    }

    fn csr(host: &str) -> Vec<u8> {
        let pair = rcgen::KeyPair::generate().unwrap();
        rcgen::CertificateParams::new(vec![host.to_string()])
            .unwrap()
            .serialize_request(&pair)
            .unwrap()
            .der()
            .to_vec()
    }

    fn enrol_request(
        trust: &Trust,
        with: &ClusterKey,
        host: &str,
        binding: &[u8],
    ) -> v1::EnrolRequest {
        let nonce = trust.challenge();
        let csr = csr(host);
        let agent_nonce = vec![9; 32];
        let proof = with.prove(&Statement::Enrol {
            nonce: &nonce,
            host,
            binding,
            csr: &csr,
            agent_nonce: &agent_nonce,
        });
        v1::EnrolRequest {
            host: host.into(),
            csr,
            nonce,
            agent_nonce,
            proof,
        }
    }

    #[test]
    fn enrolment_gives_a_certificate_for_the_proven_host_with_the_daemon_s_proof_over_it() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, _) = ClusterCa::open(&crate::ca::CaDir::new(dir.path())).unwrap();
        let ca_pem = ca.cert_pem().to_string();
        let trust = Trust::new(Some(key("k")), Mode::Cluster(Arc::new(ca))).unwrap();
        let binding = [3; 32];
        let conn = tcp(Some(binding), ClientCert::None);
        let request = enrol_request(&trust, &key("k"), "node7", &binding);
        let answer = trust.enrol(&request, Some(&conn)).unwrap();
        assert_eq!(answer.ca, ca_pem);
        let der = x509_parser::pem::parse_x509_pem(answer.certificate.as_bytes())
            .unwrap()
            .1
            .contents;
        assert_eq!(crate::ca::certified_host(&der).as_deref(), Some("node7"));
        // The agent checks the daemon's proof; with another key or another
        // CA it would not hold.
        let holds = |with: &ClusterKey, ca: &str| {
            with.verify(
                &Statement::Enrolled {
                    nonce: &request.nonce,
                    agent_nonce: &request.agent_nonce,
                    host: "node7",
                    binding: &binding,
                    certificate: &answer.certificate,
                    ca,
                },
                &answer.proof,
            )
        };
        assert!(holds(&key("k"), &ca_pem));
        assert!(!holds(&key("k"), "another CA"));
        assert!(!holds(&key("guess"), &ca_pem));

        // A wrong key gets no certificate.
        let wrong = enrol_request(&trust, &key("guess"), "node8", &binding);
        let err = trust.enrol(&wrong, Some(&conn)).unwrap_err();
        assert!(matches!(err, Refusal::WrongKey { .. }), "{err}");
        // Nor does a proof made on another connection (a man in the middle).
        let relayed = enrol_request(&trust, &key("k"), "node8", &[4; 32]);
        assert!(trust.enrol(&relayed, Some(&conn)).is_err());
    }

    #[test]
    fn the_site_s_pki_or_plain_tcp_enrol_no_agent_and_say_what_to_do() {
        let trust = Trust::new(
            Some(key("k")),
            Mode::Site {
                client_certificates: false,
            },
        )
        .unwrap();
        let request = enrol_request(&trust, &key("k"), "n1", b"");
        let err = trust
            .enrol(&request, Some(&tcp(None, ClientCert::None)))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tls_cert_file") && err.contains("--tls-ca-file"),
            "{err}"
        );
        assert!(Trust::new(None, Mode::Plain).is_err(), "no key: no trust");
    }

    fn relayed(trust: &Trust, with: &ClusterKey, host: &str, user: &str) -> (String, String) {
        let nonce = trust.challenge();
        let proof = with.prove(&Statement::Relay {
            nonce: &nonce,
            host,
            binding: b"",
            uid: 1000,
            gid: 100,
            user,
            group: "users",
        });
        (
            qmesh_proto::trust::to_hex(&nonce),
            qmesh_proto::trust::to_hex(&proof),
        )
    }

    #[test]
    fn a_relayed_command_is_vouched_for_by_a_proof_for_its_caller_or_its_host_s_certificate() {
        let trust = Trust::new(Some(key("k")), Mode::Plain).unwrap();
        let conn = tcp(None, ClientCert::None);
        let alice = RelayedCaller {
            host: "login1",
            uid: 1000,
            gid: 100,
            user: "alice",
            group: "users",
        };
        let (nonce, proof) = relayed(&trust, &key("k"), "login1", "alice");
        let offered = RelayProof {
            nonce: Some(&nonce),
            proof: Some(&proof),
            legacy_key: false,
        };
        trust.vouch_relay(&alice, &offered, &conn).unwrap();
        assert!(
            trust.vouch_relay(&alice, &offered, &conn).is_err(),
            "replayed"
        );
        // A proof for alice does not vouch for root.
        let (nonce, proof) = relayed(&trust, &key("k"), "login1", "alice");
        let root = RelayedCaller {
            uid: 0,
            gid: 0,
            user: "root",
            group: "root",
            ..alice
        };
        let offered = RelayProof {
            nonce: Some(&nonce),
            proof: Some(&proof),
            legacy_key: false,
        };
        assert!(trust.vouch_relay(&root, &offered, &conn).is_err());
        let err = trust
            .vouch_relay(
                &alice,
                &RelayProof {
                    legacy_key: true,
                    ..Default::default()
                },
                &conn,
            )
            .unwrap_err();
        assert!(matches!(err, Refusal::KeyInTheClear { .. }), "{err}");

        // A certificate from the cluster CA vouches for its own host only.
        let certified = tcp(Some([1; 32]), ClientCert::Cluster("login1".into()));
        trust
            .vouch_relay(&alice, &RelayProof::default(), &certified)
            .unwrap();
        let elsewhere = RelayedCaller {
            host: "adm1",
            ..alice
        };
        let err = trust
            .vouch_relay(&elsewhere, &RelayProof::default(), &certified)
            .unwrap_err();
        assert!(matches!(err, Refusal::OtherHost { .. }), "{err}");
    }
}
