//! How a daemon comes to lead its queue, the step between "the store is
//! open" and "serving": on sled it leads from the start (load, start the
//! task, serve); on etcd it serves first, refusing everything with the
//! leader's name, stands by until it wins the election (`crate::leader`),
//! then loads from its warm copy, starts the task and opens its gate.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;
use tracing::info;

use super::load::Dirs;
use super::serve::{Served, Sockets};
use super::signals::Signals;
use super::store::OpenStore;
use super::{Running, Wiring};
use crate::args::Args;
use crate::leader::{self, Role};
use crate::tls;
use qmesh_config::Settings;
use qmesh_store::EtcdStore;

/// What every way of leading needs.
pub struct Begin<'a> {
    pub args: &'a Args,
    pub settings: &'a Settings,
    pub dirs: &'a Dirs,
    pub store: &'a OpenStore,
    pub wiring: Wiring,
    pub tls: Option<(tokio_rustls::TlsAcceptor, tls::Pki)>,
    pub stop: &'a watch::Receiver<bool>,
    pub host: &'a str,
}

/// A daemon that leads: its task, its sockets' files and servers, and on
/// etcd the election it won (given up at shutdown).
pub struct Leading {
    pub running: Running,
    pub sockets: [PathBuf; 2],
    pub servers: Vec<Served>,
    pub won: Option<(leader::Leader, watch::Sender<Role>)>,
}

/// On sled: the only daemon of its queue leads at once.
pub async fn alone(begin: Begin<'_>) -> anyhow::Result<Leading> {
    let Begin {
        args,
        settings,
        dirs,
        store,
        wiring,
        tls,
        stop,
        host,
    } = begin;
    let link = wiring.link.clone();
    let loaded = super::load::load(dirs, settings, store.clone())?;
    let running = super::start_task(loaded, wiring, dirs, settings, 0)?;
    let (_, role) = watch::channel(Role::Leading { term: 0 });
    let sockets = Sockets::bind(args, settings, dirs).await?;
    let files = sockets.files();
    let servers = super::serve::serve(sockets, &link, tls, stop, (&role, host))?;
    Ok(Leading {
        running,
        sockets: files,
        servers,
        won: None,
    })
}

/// On etcd: serve refusals, stand by until elected, then lead. `None`
/// when a signal stopped the daemon while it stood by (it has closed
/// everything it opened).
pub async fn after_standing_by(
    begin: Begin<'_>,
    etcd: &EtcdStore,
    signals: &mut Signals,
    stop_tx: &watch::Sender<bool>,
) -> anyhow::Result<Option<Leading>> {
    let Begin {
        args,
        settings,
        dirs,
        store,
        wiring,
        tls,
        stop,
        host,
    } = begin;
    let link = wiring.link.clone();
    let (role_tx, role) = watch::channel(Role::Starting);
    let sockets = Sockets::bind(args, settings, dirs).await?;
    let files = sockets.files();
    let me = leader::LeaderInfo {
        host: host.to_string(),
        agents: super::advertised(settings, args.listen.as_deref(), host),
        pid: std::process::id(),
    };
    let servers = super::serve::serve(sockets, &link, tls, stop, (&role, host))?;
    super::notify_ready();
    let ttl = match &settings.store {
        qmesh_config::StoreSettings::Etcd(e) => e.lease_ttl_secs,
        qmesh_config::StoreSettings::Sled => qmesh_config::DEFAULT_LEASE_TTL,
    };
    let won = tokio::select! {
        won = leader::take_over(etcd, ttl, &me, &role_tx) => won,
        () = signals.next() => {
            info!("stopping while standing by");
            let _ = stop_tx.send(true);
            for server in servers {
                let _ = tokio::time::timeout(Duration::from_secs(3), server).await;
            }
            for file in files {
                let _ = std::fs::remove_file(&file);
            }
            return Ok(None);
        }
    };
    // Loading reads the store from the calling thread.
    let loaded = tokio::task::block_in_place(|| super::load::load(dirs, settings, store.clone()))?;
    etcd.stop_mirror();
    let running = super::start_task(loaded, wiring, dirs, settings, won.term.revision)?;
    leader::keep_leading(&won, etcd, link.events.clone(), role_tx.clone());
    let _ = role_tx.send(Role::Leading {
        term: won.term.revision,
    });
    Ok(Some(Leading {
        running,
        sockets: files,
        servers,
        won: Some((won, role_tx)),
    }))
}
