//! What can go wrong talking to etcd, in the terms an operator acts on:
//! the store cannot be reached, it has no quorum, a write was fenced off
//! (another qmeshd leads), a request was too large, or the credentials
//! were refused.

/// An etcd request that failed. Cloneable: one failed commit is reported
/// to every change waiting on it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EtcdError {
    /// No member answered: every endpoint refused the connection or was
    /// silent.
    #[error(
        "the store (etcd at {endpoints}) cannot be reached: {detail}; check that etcd runs and the [store] endpoints"
    )]
    Unreachable { endpoints: String, detail: String },
    /// Members answered, but none could commit: a majority is down or cut off.
    #[error(
        "the store has no quorum (etcd at {endpoints}): {detail}; nothing was changed; it resumes once a majority of etcd's members is back"
    )]
    NoQuorum { endpoints: String, detail: String },
    /// A conditional write found that this daemon no longer holds the
    /// election key: another qmeshd leads.
    #[error(
        "this qmeshd no longer leads (the election key {key} is not its own); it wrote nothing"
    )]
    Fenced { key: String },
    /// etcd refused the request for its size (`--max-request-bytes`,
    /// `--max-txn-ops`).
    #[error("etcd refused a request of {bytes} bytes and {ops} operations as too large: {detail}")]
    TooLarge {
        bytes: usize,
        ops: usize,
        detail: String,
    },
    /// The user and password were refused, or the user may not do this.
    #[error(
        "etcd refused qmesh's credentials for {what}: {detail}; check [store] user and password_file"
    )]
    Auth { what: String, detail: String },
    /// The revision asked for was compacted away.
    #[error("etcd compacted the history this watch needed (up to revision {revision})")]
    Compacted { revision: i64 },
    /// Anything else etcd said.
    #[error("etcd failed to {what}: {detail}")]
    Other { what: String, detail: String },
}

impl EtcdError {
    /// Whether trying again later may succeed (the store is down or has no
    /// quorum), as opposed to a refusal that will not change.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            EtcdError::Unreachable { .. } | EtcdError::NoQuorum { .. }
        )
    }
}
