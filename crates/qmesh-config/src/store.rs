//! `[store]`: where the daemon keeps its state. The embedded sled store in
//! the state directory is the default and needs nothing; `backend =
//! "etcd"` keeps it in an etcd cluster instead, shared by two or three
//! qmeshd of which one leads and the others stand by (docs/HA.md).

use std::path::PathBuf;

use serde::Deserialize;

/// The `[store]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSection {
    /// "sled" (the default) or "etcd".
    pub backend: Option<String>,
    /// etcd's client URLs, e.g. ["https://etcd1:2379", "https://etcd2:2379"].
    #[serde(default)]
    pub endpoints: Vec<String>,
    /// The key prefix of this cluster's state; default "/qmesh/<server name>/".
    pub prefix: Option<String>,
    /// TLS to etcd: its CA, and a client certificate and key if it asks.
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// etcd's user, when its authentication is on, and a file holding
    /// the password.
    pub user: Option<String>,
    pub password_file: Option<PathBuf>,
    /// Seconds the leader's election lease lasts without renewal: how long
    /// a dead leader holds the queue before a standby takes over.
    pub lease_ttl: Option<u32>,
    /// Seconds one request to one etcd member may take.
    pub request_timeout: Option<u32>,
    /// Seconds between the leader's compactions of etcd's history (each
    /// keeps one interval of it, for standbys' watches); 0: never, for an
    /// etcd that compacts itself (--auto-compaction-retention).
    pub compact_interval: Option<u32>,
    /// Where agents and login nodes reach this qmeshd when it leads
    /// (shown by standbys); default: this host's name and the port of
    /// [agents] listen.
    pub advertise: Option<String>,
}

/// Where the state is kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StoreSettings {
    /// sled in the state directory.
    #[default]
    Sled,
    Etcd(Box<EtcdStoreSettings>),
}

/// `[store] backend = "etcd"`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdStoreSettings {
    pub endpoints: Vec<String>,
    /// `None`: "/qmesh/<server name>/".
    pub prefix: Option<String>,
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub user: Option<String>,
    pub password_file: Option<PathBuf>,
    pub lease_ttl_secs: u32,
    pub request_timeout_secs: u32,
    /// 0: the leader does not compact etcd's history.
    pub compact_interval_secs: u32,
    pub advertise: Option<String>,
}

/// The lease's TTL by default: a dead leader is replaced in about this.
pub const DEFAULT_LEASE_TTL: u32 = 2;

/// How often the leader compacts etcd's history by default (as
/// Kubernetes' API server does).
pub const DEFAULT_COMPACT_INTERVAL: u32 = 300;

impl StoreSection {
    /// The settings, or the key that is wrong and why.
    pub fn check(self) -> Result<StoreSettings, (String, String)> {
        match self.backend.as_deref() {
            None | Some("sled") => {
                if !self.endpoints.is_empty() {
                    return Err((
                        "store.endpoints".into(),
                        "is for backend = \"etcd\"; the sled store needs none".into(),
                    ));
                }
                Ok(StoreSettings::Sled)
            }
            Some("etcd") => {
                if self.endpoints.is_empty() {
                    return Err((
                        "store.endpoints".into(),
                        "backend = \"etcd\" needs etcd's client URLs, e.g. \
                         endpoints = [\"http://etcd1:2379\", \"http://etcd2:2379\", \"http://etcd3:2379\"]"
                            .into(),
                    ));
                }
                if self.cert_file.is_some() != self.key_file.is_some() {
                    return Err((
                        "store.cert_file".into(),
                        "a client certificate for etcd needs both cert_file and key_file".into(),
                    ));
                }
                if self.user.is_some() != self.password_file.is_some() {
                    return Err((
                        "store.user".into(),
                        "etcd's authentication needs both user and password_file".into(),
                    ));
                }
                if let Some(prefix) = &self.prefix
                    && (!prefix.starts_with('/') || !prefix.ends_with('/'))
                {
                    return Err((
                        "store.prefix".into(),
                        format!(
                            "\"{prefix}\" must start and end with \"/\", e.g. \"/qmesh/cluster1/\""
                        ),
                    ));
                }
                let lease_ttl_secs = self.lease_ttl.unwrap_or(DEFAULT_LEASE_TTL);
                if !(2..=60).contains(&lease_ttl_secs) {
                    return Err((
                        "store.lease_ttl".into(),
                        format!("{lease_ttl_secs} s is out of range: write 2 to 60 (seconds)"),
                    ));
                }
                Ok(StoreSettings::Etcd(Box::new(EtcdStoreSettings {
                    endpoints: self.endpoints,
                    prefix: self.prefix,
                    ca_file: self.ca_file,
                    cert_file: self.cert_file,
                    key_file: self.key_file,
                    user: self.user,
                    password_file: self.password_file,
                    lease_ttl_secs,
                    request_timeout_secs: self.request_timeout.unwrap_or(5).max(1),
                    compact_interval_secs: self
                        .compact_interval
                        .unwrap_or(DEFAULT_COMPACT_INTERVAL),
                    advertise: self.advertise,
                })))
            }
            Some(other) => Err((
                "store.backend".into(),
                format!("\"{other}\" is not a store; write \"sled\" (the default) or \"etcd\""),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<StoreSettings, (String, String)> {
        toml::from_str::<StoreSection>(text).unwrap().check()
    }

    #[test]
    fn sled_is_the_default_and_etcd_needs_endpoints() {
        assert_eq!(parse("").unwrap(), StoreSettings::Sled);
        let (key, why) = parse("backend = \"etcd\"").unwrap_err();
        assert_eq!(key, "store.endpoints");
        assert!(why.contains("client URLs"), "{why}");
        let StoreSettings::Etcd(e) =
            parse("backend = \"etcd\"\nendpoints = [\"http://a:2379\"]").unwrap()
        else {
            panic!("etcd")
        };
        assert_eq!(e.lease_ttl_secs, DEFAULT_LEASE_TTL);
        assert_eq!(e.compact_interval_secs, DEFAULT_COMPACT_INTERVAL);
        let StoreSettings::Etcd(e) =
            parse("backend = \"etcd\"\nendpoints = [\"a\"]\ncompact_interval = 0").unwrap()
        else {
            panic!("etcd")
        };
        assert_eq!(e.compact_interval_secs, 0, "0: the leader does not compact");
        assert!(
            parse("backend = \"zookeeper\"")
                .unwrap_err()
                .1
                .contains("\"sled\"")
        );
        assert!(
            parse("backend = \"etcd\"\nendpoints = [\"a\"]\nprefix = \"qmesh\"")
                .unwrap_err()
                .1
                .contains("start and end")
        );
    }
}
