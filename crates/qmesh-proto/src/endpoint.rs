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

/// Connects to `unix:///path` or `http://host:port`. (Agents make their
/// own channels, with their own TLS: `qmesh-agent`'s `trust.rs`.)
pub async fn connect_url(url: &str) -> Result<Channel, tonic::transport::Error> {
    Endpoint::from_shared(url.to_string())?
        .tcp_nodelay(true)
        .connect()
        .await
}
