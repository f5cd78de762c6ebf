//! The one table that maps our errors to gRPC status codes, at the
//! services' edge. The message is the error's own sentence: it reaches the
//! user as it is.

use qmesh_core::error::{CoreError, ErrorKind};
use tonic::Status;

use crate::error::TaskError;

impl From<TaskError> for Status {
    fn from(e: TaskError) -> Status {
        match e {
            TaskError::Core(e) => from_core(&e),
            TaskError::Invalid(m) => Status::invalid_argument(m),
            TaskError::Denied(m) => Status::permission_denied(m),
            TaskError::NotFound(m) => Status::not_found(m),
            TaskError::NotNow(m) => Status::failed_precondition(m),
            TaskError::Unavailable(m) => Status::unavailable(m),
            TaskError::Internal(m) => Status::internal(m),
        }
    }
}

fn from_core(e: &CoreError) -> Status {
    let msg = e.to_string();
    match e.kind() {
        ErrorKind::Invalid => Status::invalid_argument(msg),
        ErrorKind::NotFound => Status::not_found(msg),
        ErrorKind::Denied => Status::permission_denied(msg),
        ErrorKind::Conflict => Status::failed_precondition(msg),
        ErrorKind::Exhausted => Status::resource_exhausted(msg),
    }
}

pub fn shutting_down() -> Status {
    Status::unavailable("qmeshd is shutting down; try again when it is back")
}
