//! Where the daemon listens and how clients reach it.
//!
//! The local socket is found in this order: `QMESH_SOCKET`; for root, and
//! for any user when a system daemon runs, `/run/qmesh/qmeshd.sock`; else a
//! per-user path (`$XDG_RUNTIME_DIR/qmesh/qmeshd.sock`, or
//! `/tmp/qmesh-UID/qmeshd.sock`), which is where a daemon started by that
//! user listens by default.

use std::path::{Path, PathBuf};

use tonic::transport::{Channel, Endpoint};

/// The environment variable that names the daemon's socket.
pub const SOCKET_ENV: &str = "QMESH_SOCKET";

/// The socket of a system-wide daemon.
pub const SYSTEM_SOCKET: &str = "/run/qmesh/qmeshd.sock";

/// The socket a daemon run by `uid` listens on when none is given.
pub fn daemon_default_socket(uid: u32) -> PathBuf {
    if uid == 0 {
        return PathBuf::from(SYSTEM_SOCKET);
    }
    user_socket(uid)
}

/// `/var/lib/qmesh` for root; else `$XDG_STATE_HOME/qmesh` or
/// `~/.local/state/qmesh`.
pub fn default_state_dir(uid: u32) -> PathBuf {
    if uid == 0 {
        return PathBuf::from("/var/lib/qmesh");
    }
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("qmesh");
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/state/qmesh"),
        None => PathBuf::from(format!("/tmp/qmesh-{uid}/state")),
    }
}

/// The socket a client run by `uid` talks to when none is given.
pub fn client_default_socket(uid: u32) -> PathBuf {
    if let Some(path) = std::env::var_os(SOCKET_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    if uid == 0 || Path::new(SYSTEM_SOCKET).exists() {
        return PathBuf::from(SYSTEM_SOCKET);
    }
    user_socket(uid)
}

fn user_socket(uid: u32) -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|p| !p.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("qmesh").join("qmeshd.sock"),
        None => PathBuf::from(format!("/tmp/qmesh-{uid}")).join("qmeshd.sock"),
    }
}

/// Connects to a daemon's Unix socket.
pub async fn connect_unix(path: &Path) -> Result<Channel, tonic::transport::Error> {
    Endpoint::from_shared(format!("unix://{}", path.display()))?
        .connect()
        .await
}

/// Connects to `unix:///path` or `http://host:port` (the agents' form).
pub async fn connect_url(url: &str) -> Result<Channel, tonic::transport::Error> {
    connect_url_tls(url, None).await
}

/// A channel to `url` that connects at its first call and again after
/// the connection breaks (an agent's relay: the daemon may start later).
pub fn lazy_url_tls(
    url: &str,
    tls: Option<tonic::transport::ClientTlsConfig>,
) -> Result<Channel, tonic::transport::Error> {
    // A relay's: a daemon that stopped answering is noticed within 8 s
    // and the calls waiting on it fail over (see `connect_url_tls`).
    let mut endpoint = Endpoint::from_shared(url.to_string())?
        .tcp_nodelay(true)
        .connect_timeout(std::time::Duration::from_secs(10))
        .http2_keep_alive_interval(std::time::Duration::from_secs(3))
        .keep_alive_timeout(std::time::Duration::from_secs(5));
    if let Some(tls) = tls {
        endpoint = endpoint.tls_config(tls)?;
    }
    Ok(endpoint.connect_lazy())
}

/// Like [`connect_url`], over TLS when `tls` is given (`https://host:port`).
pub async fn connect_url_tls(
    url: &str,
    tls: Option<tonic::transport::ClientTlsConfig>,
) -> Result<Channel, tonic::transport::Error> {
    // An agent's session: a daemon that stopped answering (paused, or its
    // host gone without a reset) is noticed within 8 s, so the agent moves
    // to the next server while a standby takes over.
    let mut endpoint = Endpoint::from_shared(url.to_string())?
        .tcp_nodelay(true)
        .http2_keep_alive_interval(std::time::Duration::from_secs(3))
        .keep_alive_timeout(std::time::Duration::from_secs(5));
    if let Some(tls) = tls {
        endpoint = endpoint.tls_config(tls)?;
    }
    endpoint.connect().await
}
