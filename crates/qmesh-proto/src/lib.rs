//! The qmesh wire format: the protobuf messages and gRPC services generated
//! from `proto/qmesh.proto`, where the sockets are, how a host proves it
//! holds the cluster key (`trust`), and the JSON form of the launch and
//! end messages an agent keeps in its spool.
//!
//! **API Boundary:** only this crate defines the wire format, and it knows
//! nothing of the core: the daemon converts between the wire and the core's
//! types at its edges (`qmeshd`'s `convert.rs`); clients and agents use the
//! generated types directly.

#[allow(clippy::all, missing_docs)]
pub mod v1 {
    tonic::include_proto!("qmesh.v1");
}

pub mod endpoint;
pub mod relay;
pub mod served;
mod spool_json;
pub mod trust;

pub use v1::*;

/// The encoded `FileDescriptorSet` of `qmesh.proto`, for tools like grpcurl.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("qmesh_descriptor");
