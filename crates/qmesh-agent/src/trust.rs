//! How this agent reaches the daemon and proves it holds the cluster
//! key without sending it (`qmesh_proto::trust`): channels over the
//! agent's own TLS (`crate::tls`), the proofs for its hello and for the
//! commands it relays, and its enrolment with the daemon's cluster CA.
//!
//! Four ways to the daemon, from `--server` and the TLS flags:
//! - `unix://`: the daemon's own agent socket; nothing to prove.
//! - `http://`: plain TCP (a daemon with `tls = false`); every proof, but
//!   what travels can be read.
//! - `https://` with `--tls-ca-file`: the site's PKI.
//! - `https://` without: the cluster CA. At its first start (for its
//!   `--host`) the agent makes a key pair and a certificate request,
//!   proves the key for them, and gets its certificate and the CA's; the
//!   daemon's answer proves the key too, or the agent keeps nothing. It
//!   keeps them in its spool's `tls/`, and from then on checks the
//!   daemon by that CA and shows its certificate. If the daemon's
//!   certificate stops being that CA's (the daemon's state was made
//!   anew), the agent enrols again, proving the key again.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use qmesh_proto::agent_client::AgentClient;
use qmesh_proto::trust::{ClusterKey, DAEMON_NAME, Statement};
use qmesh_proto::v1;
use tokio::sync::watch;
use tokio_rustls::rustls::ClientConfig;
use tokio_rustls::rustls::pki_types::ServerName;
use tonic::transport::{Channel, Endpoint};
use tracing::{info, warn};

use crate::error::{AgentError, Result};
use crate::tls::{self, Binding, Connector, CredentialFiles, Credentials, Source};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a connection the daemon has said nothing on is pinged
/// (HTTP/2 keepalive), when the agent knows several daemons: one that
/// stopped answering is left for the next within 8 s (docs/HA.md).
pub const FAILOVER_KEEP_ALIVE: Duration = Duration::from_secs(3);

/// The same with a sole daemon, which there is no other to leave for. The
/// daemon sends nothing to an agent with no jobs, so every idle agent
/// pings at this period: every 3 s, 10,000 agents cost the daemon more
/// than their heartbeats (docs/PERFORMANCE.md, "Thousands of hosts").
pub const SOLE_KEEP_ALIVE: Duration = Duration::from_secs(60);

/// The TLS flags of the command line.
#[derive(Clone, Debug, Default)]
pub struct TlsFlags<'a> {
    pub ca: Option<&'a Path>,
    pub cert: Option<&'a Path>,
    pub key: Option<&'a Path>,
}

enum Wire {
    Unix,
    Plain,
    Site {
        tcp: Tcp,
        config: Arc<ClientConfig>,
    },
    Cluster {
        tcp: Tcp,
        files: CredentialFiles,
        config: watch::Sender<Option<Arc<ClientConfig>>>,
        ca_refused: Arc<AtomicBool>,
    },
}

/// Where the daemon's TCP port is, and the name its certificate bears.
#[derive(Clone)]
struct Tcp {
    addr: String,
    name: ServerName<'static>,
}

/// A channel to the daemon, and the TLS exporter of its connection.
#[derive(Clone, Debug)]
pub struct Linked {
    pub channel: Channel,
    binding: Binding,
}

pub struct Trust {
    server: String,
    host: String,
    key: Option<ClusterKey>,
    wire: Wire,
    keep_alive: Duration,
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust")
            .field("server", &self.server)
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// The `host:port` of an `https://` URL, and its host alone.
fn tcp_address(server: &str) -> Result<(String, String)> {
    let uri: tonic::codegen::http::Uri = server
        .parse()
        .map_err(|e| AgentError::Config(format!("--server {server}: {e}")))?;
    match (uri.host(), uri.port_u16()) {
        (Some(host), Some(port)) => Ok((
            format!("{host}:{port}"),
            host.trim_matches(['[', ']']).to_string(),
        )),
        _ => Err(AgentError::Config(format!(
            "--server {server}: give the daemon's host and port, https://HOST:PORT"
        ))),
    }
}

fn server_name(name: &str) -> Result<ServerName<'static>> {
    ServerName::try_from(name.to_string())
        .map_err(|e| AgentError::Config(format!("\"{name}\" is not a TLS server name: {e}")))
}

impl Trust {
    /// The way to `server` for the agent of `host`, with `key` (the
    /// cluster key, if given) and the TLS flags; enrolled credentials are
    /// kept under `spool`.
    pub fn new(
        server: &str,
        host: &str,
        key: Option<ClusterKey>,
        flags: &TlsFlags<'_>,
        spool: &Path,
    ) -> Result<Trust> {
        let https = server.starts_with("https://");
        if !https && (flags.ca.is_some() || flags.cert.is_some()) {
            return Err(AgentError::Config(format!(
                "--tls-ca-file and --tls-cert-file are for a daemon reached over TLS; \
                 give --server https://HOST:PORT, not {server}"
            )));
        }
        let wire = if server.starts_with("unix://") {
            Wire::Unix
        } else if !https {
            Wire::Plain
        } else if let Some(ca) = flags.ca {
            let (addr, host_name) = tcp_address(server)?;
            Wire::Site {
                tcp: Tcp {
                    addr,
                    name: server_name(&host_name)?,
                },
                config: tls::site_config(ca, flags.cert, flags.key)?,
            }
        } else {
            if flags.cert.is_some() {
                return Err(AgentError::Config(
                    "--tls-cert-file is the site's PKI: give --tls-ca-file too, or neither \
                     (the agent then enrols with the daemon's cluster CA)"
                        .into(),
                ));
            }
            if key.is_none() {
                return Err(AgentError::Config(format!(
                    "{server} is TLS with the daemon's cluster CA, which this agent enrols with \
                     by proving the cluster key: give --cluster-key-file (or --tls-ca-file \
                     where the site's PKI is used)"
                )));
            }
            tls::check_host(host)?;
            let (addr, _) = tcp_address(server)?;
            Wire::Cluster {
                tcp: Tcp {
                    addr,
                    name: server_name(DAEMON_NAME)?,
                },
                files: CredentialFiles::new(spool.join("tls")),
                config: watch::channel(None).0,
                ca_refused: Arc::default(),
            }
        };
        if key.is_none() && matches!(wire, Wire::Plain) {
            warn!(
                "no --cluster-key-file: a daemon reached over TCP takes this agent only if \
                 it needs no key"
            );
        }
        Ok(Trust {
            server: server.to_string(),
            host: host.to_string(),
            key,
            wire,
            keep_alive: FAILOVER_KEEP_ALIVE,
        })
    }

    /// This is the agent's only daemon: its connections are pinged every
    /// [`SOLE_KEEP_ALIVE`], not [`FAILOVER_KEEP_ALIVE`].
    pub fn sole_daemon(mut self) -> Trust {
        self.keep_alive = SOLE_KEEP_ALIVE;
        self
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    fn endpoint(&self, url: &str) -> Result<Endpoint> {
        Ok(Endpoint::from_shared(url.to_string())
            .map_err(|e| AgentError::Config(format!("--server {}: {e}", self.server)))?
            .tcp_nodelay(true)
            .connect_timeout(CONNECT_TIMEOUT)
            // A daemon that stopped answering (paused, or its host gone
            // without a reset) is noticed within 8 s: the session moves to
            // the next server and the relay's waiting calls fail over
            // while a standby takes over (docs/HA.md).
            .http2_keep_alive_interval(self.keep_alive)
            .keep_alive_timeout(Duration::from_secs(5)))
    }

    /// The connector for `tcp`, checking the daemon as `source` says.
    fn connector(tcp: &Tcp, source: Source, binding: &Binding) -> Connector {
        Connector {
            addr: tcp.addr.clone(),
            name: tcp.name.clone(),
            source,
            binding: binding.clone(),
        }
    }

    /// The connector of this agent's TLS, if it speaks TLS.
    fn tls_connector(&self, binding: &Binding) -> Option<Connector> {
        match &self.wire {
            Wire::Unix | Wire::Plain => None,
            Wire::Site { tcp, config } => {
                Some(Self::connector(tcp, Source::Fixed(config.clone()), binding))
            }
            Wire::Cluster {
                tcp,
                config,
                ca_refused,
                ..
            } => Some(Self::connector(
                tcp,
                Source::Enrolled {
                    config: config.subscribe(),
                    ca_refused: ca_refused.clone(),
                },
                binding,
            )),
        }
    }

    /// A channel for one session, connected now.
    pub async fn connect(&self) -> Result<Linked> {
        let binding = Binding::default();
        let channel = match self.tls_connector(&binding) {
            None => self.endpoint(&self.server)?.connect().await,
            // The URL only names the channel: the connector dials and
            // speaks TLS itself.
            Some(connector) => {
                self.endpoint("http://qmeshd")?
                    .connect_with_connector(connector)
                    .await
            }
        }
        .map_err(|e| AgentError::connect(&self.server, &e))?;
        Ok(Linked { channel, binding })
    }

    /// A channel that connects at its first call and again after the
    /// connection breaks (the relay: the daemon may start later).
    pub fn lazy(&self) -> Result<Linked> {
        let binding = Binding::default();
        let channel = match self.tls_connector(&binding) {
            None => self.endpoint(&self.server)?.connect_lazy(),
            Some(connector) => self
                .endpoint("http://qmeshd")?
                .connect_with_connector_lazy(connector),
        };
        Ok(Linked { channel, binding })
    }

    /// Makes sure this agent has what it needs before a session: with the
    /// cluster CA, its certificate (kept, or got now by enrolling). One
    /// try; the caller retries.
    pub async fn ready(&self) -> Result<()> {
        let Wire::Cluster {
            files,
            config,
            ca_refused,
            ..
        } = &self.wire
        else {
            return Ok(());
        };
        if ca_refused.swap(false, Ordering::SeqCst) {
            warn!(
                tls = %files.dir().display(),
                "the daemon's certificate is not from the cluster CA this agent enrolled with \
                 (was the daemon's state made anew?); enrolling again"
            );
            files.forget(&self.host);
            config.send_replace(None);
        }
        if config.borrow().is_some() {
            return Ok(());
        }
        let creds = match files.load(&self.host)? {
            Some(creds) => creds,
            None => {
                let creds = self.enrol().await?;
                files.keep(&self.host, &creds)?;
                info!(
                    host = %self.host,
                    tls = %files.dir().display(),
                    "enrolled with the daemon's cluster CA: certificate kept"
                );
                creds
            }
        };
        config.send_replace(Some(tls::cluster_config(&creds)?));
        Ok(())
    }

    /// Whether this agent's connections carry a certificate from the
    /// cluster CA, which vouches for the commands it relays.
    fn certified(&self) -> bool {
        matches!(self.wire, Wire::Cluster { .. })
    }

    /// The nonce and proof for a hello on `linked` (none over the local
    /// socket, or without a key).
    pub async fn hello_proof(&self, linked: &Linked) -> Result<(Vec<u8>, Vec<u8>)> {
        let (Some(key), false) = (&self.key, matches!(self.wire, Wire::Unix)) else {
            return Ok((Vec::new(), Vec::new()));
        };
        let nonce = self.challenge(&linked.channel).await?;
        let proof = key.prove(&Statement::Hello {
            nonce: &nonce,
            host: &self.host,
            binding: &linked.binding.get(),
        });
        Ok((nonce, proof))
    }

    /// Whether each relayed command needs a proof of the key of its own
    /// (no certificate from the cluster CA vouches).
    pub fn relays_with_proofs(&self) -> bool {
        self.key.is_some() && !self.certified() && !matches!(self.wire, Wire::Unix)
    }

    /// The nonce and proof, hex, for a command relayed on `linked` for
    /// this caller.
    pub async fn relay_proof(
        &self,
        linked: &Linked,
        uid: u32,
        gid: u32,
        user: &str,
        group: &str,
    ) -> Result<(String, String)> {
        let Some(key) = &self.key else {
            return Err(AgentError::Config("no cluster key to prove".into()));
        };
        let nonce = self.challenge(&linked.channel).await?;
        let proof = key.prove(&Statement::Relay {
            nonce: &nonce,
            host: &self.host,
            binding: &linked.binding.get(),
            uid,
            gid,
            user,
            group,
        });
        Ok((
            qmesh_proto::trust::to_hex(&nonce),
            qmesh_proto::trust::to_hex(&proof),
        ))
    }

    async fn challenge(&self, channel: &Channel) -> Result<Vec<u8>> {
        let given = AgentClient::new(channel.clone())
            .challenge(v1::ChallengeRequest {})
            .await
            .map_err(|status| AgentError::refused(&self.server, &status))?;
        Ok(given.into_inner().nonce)
    }

    /// Asks the cluster CA for this agent's certificate, proving the key;
    /// takes the answer only if it proves the key too.
    async fn enrol(&self) -> Result<Credentials> {
        let (Wire::Cluster { tcp, .. }, Some(key)) = (&self.wire, &self.key) else {
            return Err(AgentError::Config(
                "only an agent of the cluster CA enrols".into(),
            ));
        };
        let binding = Binding::default();
        let connector = Self::connector(tcp, Source::Fixed(tls::enrolment_config()?), &binding);
        let channel = self
            .endpoint("http://qmeshd")?
            .connect_with_connector(connector)
            .await
            .map_err(|e| AgentError::connect(&self.server, &e))?;
        let nonce = self.challenge(&channel).await?;
        let pair = rcgen::KeyPair::generate().map_err(enrol_failed)?;
        let mut params =
            rcgen::CertificateParams::new(vec![self.host.clone()]).map_err(enrol_failed)?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, self.host.as_str());
        let csr = params
            .serialize_request(&pair)
            .map_err(enrol_failed)?
            .der()
            .to_vec();
        let agent_nonce = qmesh_proto::trust::random::<32>()
            .map_err(|e| AgentError::Config(e.to_string()))?
            .to_vec();
        let binding = binding.get();
        let proof = key.prove(&Statement::Enrol {
            nonce: &nonce,
            host: &self.host,
            binding: &binding,
            csr: &csr,
            agent_nonce: &agent_nonce,
        });
        let answer = AgentClient::new(channel)
            .enrol(v1::EnrolRequest {
                host: self.host.clone(),
                csr,
                nonce: nonce.clone(),
                agent_nonce: agent_nonce.clone(),
                proof,
            })
            .await
            .map_err(|status| AgentError::Enrol {
                url: self.server.clone(),
                why: status.message().to_string(),
            })?
            .into_inner();
        let proven = key.verify(
            &Statement::Enrolled {
                nonce: &nonce,
                agent_nonce: &agent_nonce,
                host: &self.host,
                binding: &binding,
                certificate: &answer.certificate,
                ca: &answer.ca,
            },
            &answer.proof,
        );
        if !proven {
            return Err(AgentError::Enrol {
                url: self.server.clone(),
                why: "the answer does not prove the cluster key: the daemon has another key, \
                      or something between the two is not the daemon; the agent keeps nothing"
                    .into(),
            });
        }
        Ok(Credentials {
            ca: answer.ca,
            cert: answer.certificate,
            key: pair.serialize_pem(),
        })
    }
}

fn enrol_failed(e: rcgen::Error) -> AgentError {
    AgentError::Config(format!(
        "make this agent's key pair and certificate request: {e}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Option<ClusterKey> {
        Some(ClusterKey::from_file_text("k").unwrap())
    }

    #[test]
    fn tls_files_go_with_an_https_server_only_and_the_cluster_ca_needs_the_key() {
        let spool = Path::new("/nonexistent/spool");
        let ca = Path::new("/ca.pem");
        let with_ca = TlsFlags {
            ca: Some(ca),
            ..Default::default()
        };
        let err = Trust::new("http://h:1", "n1", key(), &with_ca, spool)
            .unwrap_err()
            .to_string();
        assert!(err.contains("give --server https://"), "{err}");
        let err = Trust::new("https://h:1", "n1", None, &TlsFlags::default(), spool)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--cluster-key-file"), "{err}");
        let err = Trust::new(
            "https://h:1",
            "n1",
            key(),
            &TlsFlags {
                ca: Some(Path::new("/nonexistent/ca.pem")),
                ..Default::default()
            },
            spool,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
        let err = Trust::new("https://h", "n1", key(), &TlsFlags::default(), spool)
            .unwrap_err()
            .to_string();
        assert!(err.contains("HOST:PORT"), "{err}");
        let cluster = Trust::new("https://h:1", "n1", key(), &TlsFlags::default(), spool).unwrap();
        assert!(!cluster.relays_with_proofs(), "its certificate vouches");
        assert_eq!(
            cluster.keep_alive, FAILOVER_KEEP_ALIVE,
            "another daemon may lead"
        );
        assert_eq!(cluster.sole_daemon().keep_alive, SOLE_KEEP_ALIVE);
        let plain = Trust::new("http://h:1", "n1", key(), &TlsFlags::default(), spool).unwrap();
        assert!(plain.relays_with_proofs());
        let local = Trust::new("unix:///s", "n1", None, &TlsFlags::default(), spool).unwrap();
        assert!(!local.relays_with_proofs());
    }
}
