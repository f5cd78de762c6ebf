//! Why the scheduler task refused or could not answer a request, in its
//! own terms. The services turn it into a gRPC status at their edge
//! (`crate::status`, the one table of codes), so nothing in the task knows
//! the wire's error type. Every message is a sentence for the user: it
//! names the thing and says what to do.

use qmesh_core::CoreError;
use qmesh_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// A rule of the core refused; its kind says how (not found, denied,
    /// invalid, a conflict, exhausted).
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The request itself is wrong: a size past the limits, a qmgr script
    /// that does not parse, a node index the job does not have.
    #[error("{0}")]
    Invalid(String),
    /// The caller may not do or see this.
    #[error("{0}")]
    Denied(String),
    /// The thing named is not there (any more).
    #[error("{0}")]
    NotFound(String),
    /// Not now: the job or the host is in a state that does not allow it
    /// (finished, not running, a batch job where an interactive one is
    /// needed, a host with no nodes).
    #[error("{0}")]
    NotNow(String),
    /// The daemon cannot do it at the moment (the store cannot confirm or
    /// write, an agent is away, no job logs): try again.
    #[error("{0}")]
    Unavailable(String),
    /// What the daemon holds disagrees with itself (a job names a node
    /// the machine does not know).
    #[error("{0}")]
    Internal(String),
}

impl From<qmesh_core::reservation::ResvError> for TaskError {
    fn from(e: qmesh_core::reservation::ResvError) -> TaskError {
        use qmesh_core::reservation::ResvError;
        let text = e.to_string();
        match e {
            ResvError::Unknown(_) => TaskError::NotFound(text),
            ResvError::Invalid(_) => TaskError::Invalid(text),
            ResvError::Denied(_) => TaskError::NotNow(text),
            ResvError::NotAllowed(_) => TaskError::Denied(text),
        }
    }
}

impl TaskError {
    /// The store did not take a change of `what`: nothing was changed.
    pub fn not_stored(e: &StoreError, what: &str) -> TaskError {
        TaskError::Unavailable(format!(
            "{what} could not be stored: {e}; nothing was changed"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qmesh_core::error::ErrorKind;

    #[test]
    fn a_core_refusal_keeps_its_kind_and_its_sentence() {
        let e = TaskError::from(CoreError::NoSuchJob { id: "7.srv".into() });
        assert!(matches!(&e, TaskError::Core(c) if c.kind() == ErrorKind::NotFound));
        assert_eq!(
            e.to_string(),
            CoreError::NoSuchJob { id: "7.srv".into() }.to_string()
        );
    }

    #[test]
    fn a_store_failure_says_nothing_was_changed() {
        let e = TaskError::not_stored(&StoreError::Closed, "job 7.srv");
        assert!(matches!(e, TaskError::Unavailable(_)));
        assert_eq!(
            e.to_string(),
            "job 7.srv could not be stored: the store is closed; nothing was changed"
        );
    }
}
