//! The qmesh user and admin commands: qsub, qstat, qdel, qhold, qrls and
//! qmgr, one module each (the binaries call `qmesh_cli::qsub::main()` and
//! so on).
//!
//! The commands are thin clients of qmeshd over its Unix socket: the daemon
//! knows the caller from the socket's peer uid and does all checking and
//! policy; a command gathers, sends and prints. Shared pieces: [`client`]
//! (reaching the daemon, errors), [`output`] (tables, PBS's attribute form
//! and JSON), [`directives`] (options inside job scripts) and [`action`]
//! (what qdel, qhold and qrls have in common).

pub mod action;
pub mod client;
pub mod directives;
pub mod output;

pub mod qdel;
pub mod qhold;
pub mod qmgr;
pub mod qrls;
pub mod qstat;
pub mod qsub;
pub mod spusage;
