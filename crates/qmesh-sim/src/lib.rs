//! qmesh-sim: Standard Workload Format traces replayed through the very
//! `qmesh-core` the daemon runs, on a virtual clock, with the measures the
//! source papers judge schedulers by.

pub mod accounting;
pub mod arrays;
pub mod machine;
pub mod metrics;
pub mod plot;
pub mod replay;
pub mod reservations;
pub mod sweep;
pub mod swf;
pub mod to_swf;
pub mod whatif;
