//! The metadata of a command relayed by a host's agent: the agent reads
//! its caller's uid and gid from its own socket (SO_PEERCRED), strips
//! every `x-qmesh-*` entry the caller sent, and sets these. The daemon
//! believes them only from an agent: over a connection whose certificate
//! from the cluster CA names the host, or with a proof of the cluster key
//! (`trust::NONCE_HEADER`, `trust::PROOF_HEADER`), or, where the site's
//! PKI is used without a key, with a client certificate it signed.

/// Where agents before the proofs sent the cluster key itself. The
/// daemon refuses a request that carries it, saying why.
pub const LEGACY_KEY: &str = "x-qmesh-relay-key";
/// The host the agent serves, as the daemon's node sets or
/// `submit_hosts` name it.
pub const HOST: &str = "x-qmesh-host";
/// The caller's uid and gid, as the kernel told the agent.
pub const UID: &str = "x-qmesh-uid";
pub const GID: &str = "x-qmesh-gid";
/// Their names on that host (the daemon looks the numbers up without).
pub const USER: &str = "x-qmesh-user";
pub const GROUP: &str = "x-qmesh-group";

/// The prefix of every entry only agents may set.
pub const PREFIX: &str = "x-qmesh-";
