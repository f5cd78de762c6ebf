//! The store the daemon runs on: sled in the state directory (the
//! default), or etcd (`[store] backend = "etcd"`), where this qmeshd may
//! have to stand by until it leads (`crate::leader`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use qmesh_config::{EtcdStoreSettings, Settings, StoreSettings};
use qmesh_store::{EtcdSettings, EtcdStore, SledStore, Store};
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

use super::load::Dirs;

/// The open store, by engine.
#[derive(Clone)]
pub enum OpenStore {
    Sled(Arc<SledStore>),
    Etcd(Arc<EtcdStore>),
}

impl OpenStore {
    /// Opens the configured store. etcd is not reached yet: a standby may
    /// start while etcd is down and wait for it.
    pub fn open(settings: &Settings, dirs: &Dirs, server_name: &str) -> anyhow::Result<OpenStore> {
        match &settings.store {
            StoreSettings::Sled => Ok(OpenStore::Sled(Arc::new(
                SledStore::open(&dirs.store).context("open the store")?,
            ))),
            StoreSettings::Etcd(etcd) => {
                let store = EtcdStore::open(etcd_settings(etcd, server_name)?)
                    .context("open the etcd store")?;
                Ok(OpenStore::Etcd(Arc::new(store)))
            }
        }
    }

    pub fn as_store(&self) -> Arc<dyn Store> {
        match self {
            OpenStore::Sled(s) => s.clone(),
            OpenStore::Etcd(s) => s.clone(),
        }
    }

    /// The store in a daemon's messages: "in DIR", or "(etcd at ... under ...)".
    pub fn describe(&self, dirs: &Dirs) -> String {
        match self {
            OpenStore::Sled(_) => format!("in {}", dirs.store.display()),
            OpenStore::Etcd(s) => format!("({})", s.describe()),
        }
    }

    /// Tells `observe` how long each group commit took.
    pub fn observe_flushes(&self, observe: qmesh_store::FlushObserver) {
        match self {
            OpenStore::Sled(s) => s.observe_flushes(observe),
            OpenStore::Etcd(s) => s.observe_flushes(observe),
        }
    }
}

/// The store's settings from `[store]`; the files named are read now, so a
/// wrong one fails at start with its name.
fn etcd_settings(etcd: &EtcdStoreSettings, server_name: &str) -> anyhow::Result<EtcdSettings> {
    let prefix = etcd
        .prefix
        .clone()
        .unwrap_or_else(|| format!("/qmesh/{server_name}/"));
    let mut settings = EtcdSettings::new(etcd.endpoints.clone(), &prefix);
    settings.client.request_timeout = Duration::from_secs(etcd.request_timeout_secs.into());
    settings.compact_every = (etcd.compact_interval_secs > 0)
        .then(|| Duration::from_secs(etcd.compact_interval_secs.into()));
    if let Some(ca) = &etcd.ca_file {
        let pem = std::fs::read(ca)
            .with_context(|| format!("read etcd's CA {} ([store] ca_file)", ca.display()))?;
        let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem));
        if let (Some(cert), Some(key)) = (&etcd.cert_file, &etcd.key_file) {
            let cert_pem = std::fs::read(cert).with_context(|| {
                format!(
                    "read the client certificate for etcd {} ([store] cert_file)",
                    cert.display()
                )
            })?;
            let key_pem = std::fs::read(key).with_context(|| {
                format!(
                    "read the client key for etcd {} ([store] key_file)",
                    key.display()
                )
            })?;
            tls = tls.identity(Identity::from_pem(cert_pem, key_pem));
        }
        settings.client.tls = Some(tls);
    }
    if let (Some(user), Some(file)) = (&etcd.user, &etcd.password_file) {
        let password = std::fs::read_to_string(file).with_context(|| {
            format!(
                "read etcd's password {} ([store] password_file)",
                file.display()
            )
        })?;
        settings.client.user = Some((user.clone(), password.trim_end_matches('\n').to_string()));
    }
    Ok(settings)
}
