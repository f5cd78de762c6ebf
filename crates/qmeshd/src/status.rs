//! The one table that maps our errors to gRPC status codes. The message is
//! the error's own sentence: it reaches the user as it is.

use qmesh_core::error::{CoreError, ErrorKind};
use qmesh_store::StoreError;
use tonic::Status;

pub fn from_core(e: &CoreError) -> Status {
    let msg = e.to_string();
    match e.kind() {
        ErrorKind::Invalid => Status::invalid_argument(msg),
        ErrorKind::NotFound => Status::not_found(msg),
        ErrorKind::Denied => Status::permission_denied(msg),
        ErrorKind::Conflict => Status::failed_precondition(msg),
        ErrorKind::Exhausted => Status::resource_exhausted(msg),
    }
}

pub fn from_store(e: &StoreError, what: &str) -> Status {
    Status::unavailable(format!(
        "{what} could not be stored: {e}; nothing was changed"
    ))
}

pub fn shutting_down() -> Status {
    Status::unavailable("qmeshd is shutting down; try again when it is back")
}
