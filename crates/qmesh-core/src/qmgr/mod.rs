//! qmgr, the administrator's language (PBS grammar, NQS's `per_request`).
//!
//! A script is parsed whole, then applied command by command to a copy of
//! the configuration; the first error stops it and names the line, and the
//! caller keeps the old configuration. So a script applies all or nothing.
//!
//! The modules stand on floors, each using only its own floor and those
//! below (the repository's `tests/floors.rs` checks it):
//!
//! 1. `vocab` (the commands a script becomes, `Outcome`, `QmgrError`) and
//!    `values` (quoting, list updates, booleans, counts, canonical names);
//! 2. `lex` and `parse`: a script's text becomes commands;
//! 3. one module per object, each applying its commands to the
//!    configuration and writing its part of `print server`: `attrs` (the
//!    queue's and the server's attributes) over `pbs_attrs`, `inert` and
//!    `resource`; `account`, `calendar`, `hook`, `node`, `node_group`,
//!    `node_set`, `pbs_node` (PBS's `create node`, the `sched` object),
//!    `shutdown`;
//! 4. `print`: `list`, `print` and `help` of queues and the server, and
//!    `print server` whole;
//! 5. `apply`: a script run, command by command, with its rights and
//!    cross-checks.
//!
//! This file only declares them and names what the rest of the core and
//! the other crates use.

mod account;
mod apply;
mod attrs;
mod calendar;
mod hook;
mod inert;
mod lex;
mod node;
mod node_group;
mod node_set;
mod parse;
mod pbs_attrs;
mod pbs_node;
mod print;
mod resource;
mod shutdown;
mod values;
mod vocab;

#[cfg(test)]
mod tests;

pub use apply::{run, run_over};
pub use attrs::{set_queue_attr, set_server_attr};
pub use calendar::import_holidays_commands;
pub use parse::parse_script;
pub use print::{print_server, print_server_over};
pub use values::parse_bool;
pub use vocab::{
    Action, Assignment, Command, HookAction, MAX_COMMANDS, MAX_SCRIPT_BYTES, Op, Outcome,
    QmgrError, ShutdownAction,
};
