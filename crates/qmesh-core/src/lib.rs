//! The qmesh domain and its scheduling core.
//!
//! Jobs, queues, node sets and the server's configuration live here, with the
//! rules that change them (submit, start, finish, hold, delete), the qmgr
//! language, and [`Scheduler::pass`], which turns a [`State`] into a [`Plan`].
//!
//! **Architecture Invariant:** this crate does no I/O, spawns nothing, and
//! never reads the clock: `now` is always a parameter. The daemon and the
//! simulator drive the very same code, and every test here is deterministic.

pub mod access;
pub mod account;
pub mod acl;
pub mod array;
pub mod calendar;
pub mod command_error;
pub mod consumable;
pub mod depend;
pub mod error;
pub mod hook;
pub mod ids;
pub mod job;
pub mod joblog;
pub mod limits;
pub mod node;
pub mod node_group;
pub mod node_resources;
pub mod periods;
pub mod predict;
pub mod preempt;
pub mod qalter;
pub mod qdel;
pub mod qmgr;
pub mod qmove;
pub mod qorder;
pub mod qrerun;
pub mod qrun;
pub mod queue;
pub mod reason;
pub mod reorder;
pub mod report;
pub mod reservation;
pub mod resource_limits;
pub mod resources;
pub mod route;
pub mod rsub;
pub mod scheduler;
pub mod select;
pub mod server;
pub mod shutdown;
pub mod signal;
pub mod site_resources;
pub mod state;
pub mod submit;
pub mod suspend;
pub mod time;

/// The allocators, a crate of their own; reached as `qmesh_core::alloc` too.
pub use qmesh_alloc as alloc;

pub use access::{Caller, Role};
pub use error::CoreError;
pub use job::{ExitCause, Holds, Job, JobExit, JobId, JobState, Owner};
pub use node::{Node, NodeDef, NodeSet, Topology};
pub use queue::{Queue, QueueType};
pub use scheduler::{Entry, Plan, Reason, Scheduler, Start, Status};
pub use server::{Backfill, Config, JobOrder, ServerAttrs};
pub use state::State;
pub use submit::Submission;
pub use time::Time;
