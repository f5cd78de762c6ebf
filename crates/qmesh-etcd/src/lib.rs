//! qmesh's client of etcd's v3 API, for the store (`qmesh-store`'s etcd
//! engine) and the leader's election (`qmeshd`).
//!
//! Only what qmesh needs: key ranges read in pages, transactions (every
//! write of a leader is one, fenced on its term), leases, watches, and an
//! election over one key ([`election`]). The API's code is generated from
//! the part of etcd's protos qmesh uses (`proto/etcd.proto`).

mod client;
pub mod election;
mod error;
/// A private etcd cluster for tests and benchmarks.
pub mod testing;
mod watch;

/// etcd's messages and client stubs, generated.
#[allow(clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("etcdserverpb");
}

pub use client::{Client, Options, prefix_end};
pub use election::{Election, Standing, Term};
pub use error::EtcdError;
pub use watch::{Events, Watch};
