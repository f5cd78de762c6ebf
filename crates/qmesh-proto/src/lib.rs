//! The qmesh wire format: the protobuf messages and gRPC services generated
//! from `proto/qmesh.proto`, and the conversions between them and the core
//! domain types.
//!
//! **API Boundary:** only this crate knows the wire format. The daemon speaks
//! core types inside and converts at its edges with the functions in
//! [`convert`]; clients and agents use the generated types directly.

#[allow(clippy::all, missing_docs)]
pub mod v1 {
    tonic::include_proto!("qmesh.v1");
}

pub mod convert;
pub mod endpoint;
pub mod relay;
mod spool_json;

pub use v1::*;

/// The encoded `FileDescriptorSet` of `qmesh.proto`, for tools like grpcurl.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("qmesh_descriptor");
