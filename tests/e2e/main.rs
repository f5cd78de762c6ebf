//! End-to-end tests: the real qmeshd, its real agent, real job scripts, and
//! the commands as users run them. One test binary (link time), one module
//! per theme.

mod accounts;
mod agents;
mod arrays;
mod bad_input;
mod cluster;
mod commands;
mod contained;
mod depend;
mod disk_full;
mod examples;
mod harness;
mod hooks;
mod interactive;
mod job_env;
mod jobs;
mod login;
mod metrics;
mod node_sets;
mod node_states;
mod pbs_scripts;
mod pbs_submit;
mod pbsdsh;
mod periods;
mod pipe;
mod preempt;
mod qalter;
mod qdel;
mod qmgr;
mod qmgr_pbs;
mod qrun;
mod qsig;
mod qstat;
mod reservations;
mod restart;
mod shutdown;
mod site_resources;
mod slow_reader;
mod sp;
mod suspend;
mod tls;
mod topology;
mod tracejob;
mod trust;
mod workflow_tools;
