//! The agents' port's trust, made once the state directory is taken: the
//! cluster key read (or, for a daemon that listens and was given none,
//! made in the state directory), and the TLS the port speaks: the site's
//! PKI when configured, else the cluster CA the daemon makes and keeps
//! in its state directory (`ca/`), else, with `tls = false`, none.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use qmesh_config::{AgentTls, Settings};
use qmesh_proto::trust::{ClusterKey, DAEMON_NAME};
use tokio_rustls::TlsAcceptor;
use tracing::{info, warn};

use super::load::Dirs;
use crate::ca::{CaDir, ClusterCa};
use crate::tls::{self, Pki};
use crate::trust::{Mode, Trust};

/// What the agents' port believes, and its TLS.
pub struct AgentsPort {
    pub trust: Arc<Trust>,
    pub tls: Option<(TlsAcceptor, Pki)>,
}

/// The trust of a daemon that listens for agents on TCP (`listening`) or
/// not; `site` is the acceptor of the site's files, read at start.
pub fn prepare(
    settings: &Settings,
    dirs: &Dirs,
    store: &super::store::OpenStore,
    listening: bool,
    site: Option<TlsAcceptor>,
) -> anyhow::Result<AgentsPort> {
    if !listening {
        return Ok(AgentsPort {
            trust: Arc::new(Trust::local_only()),
            tls: None,
        });
    }
    let site_client_ca = settings
        .tls
        .site()
        .is_some_and(|files| files.client_ca.is_some());
    let key = match &settings.cluster_key_file {
        Some(path) => Some(read_key(path)?),
        // The site's client certificates alone vouch, as they always did.
        None if site_client_ca => None,
        None => Some(made_key(&dirs.state.join("cluster.key"))?),
    };
    let (mode, acceptor) = match (&settings.tls, site) {
        (AgentTls::Site(files), Some(acceptor)) => (
            Mode::Site {
                client_certificates: files.client_ca.is_some(),
            },
            Some((acceptor, Pki::Site)),
        ),
        (AgentTls::Site(_), None) => anyhow::bail!("the site's TLS files were not read"),
        (AgentTls::Off, _) => {
            warn!(
                "the agents' port is plain TCP (tls = false): agents prove the cluster key \
                 without sending it, but what travels (jobs, commands) can be read on the network"
            );
            (Mode::Plain, None)
        }
        (AgentTls::ClusterCa, _) => {
            // On etcd, every head uses the one CA the store keeps.
            let home: Box<dyn crate::ca::CaHome> = match store {
                super::store::OpenStore::Etcd(etcd) => Box::new(crate::ca::CaInEtcd {
                    store: etcd.clone(),
                }),
                super::store::OpenStore::Sled(_) => Box::new(CaDir::new(dirs.state.join("ca"))),
            };
            let (ca, made) = ClusterCa::open(home.as_ref()).context("open the cluster CA")?;
            if made {
                info!(
                    ca = %home.place(),
                    "made the cluster CA: agents on other hosts enrol with it at their first start"
                );
            }
            let mut names = vec![DAEMON_NAME.to_string()];
            if let Ok(host) = nix::unistd::gethostname() {
                names.extend(host.into_string().ok().filter(|h| h != DAEMON_NAME));
            }
            let acceptor = tls::cluster_acceptor(&ca, &names)?;
            (Mode::Cluster(Arc::new(ca)), Some((acceptor, Pki::Cluster)))
        }
    };
    let trust = Trust::new(key, mode)?;
    Ok(AgentsPort {
        trust: Arc::new(trust),
        tls: acceptor,
    })
}

fn read_key(path: &Path) -> anyhow::Result<ClusterKey> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("read the cluster key {}", path.display()))?;
    ClusterKey::from_file_text(&text).with_context(|| format!("the cluster key {}", path.display()))
}

/// The key the daemon made in its state directory, made now if it is not
/// there yet (mode 0600).
fn made_key(path: &Path) -> anyhow::Result<ClusterKey> {
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut file) => {
            let text = qmesh_proto::trust::new_key_text()?;
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("write the cluster key {}", path.display()))?;
            info!(
                key = %path.display(),
                "made the cluster key: copy it to every host with an agent (readable by root \
                 alone) and give it as --cluster-key-file, or name it in cluster_key_file"
            );
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(e).with_context(|| format!("make the cluster key {}", path.display()));
        }
    }
    read_key(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_made_key_is_long_random_readable_by_the_daemon_alone_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster.key");
        made_key(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.trim().len(), 64, "{text}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        made_key(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "kept");
        std::fs::write(&path, "\n").unwrap();
        let err = format!("{:#}", made_key(&path).unwrap_err());
        assert!(
            err.contains("cluster.key") && err.contains("empty"),
            "{err}"
        );
    }
}
