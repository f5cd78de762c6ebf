//! High availability against the real things: a 3-member etcd, two
//! qmeshd, an agent and a login node's relay, all processes. Each test
//! breaks something (the leader killed or stopped, etcd's quorum lost)
//! and checks what a site relies on: no acknowledged job lost or made
//! twice, no job run twice, a deposed leader writing and starting
//! nothing, service back without a restart.

mod failover;
mod rig;
