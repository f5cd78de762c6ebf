//! The qmesh user and admin commands: qsub, qstat, qdel, qhold, qrls, qmove, qsig,
//! qselect, qrerun, qorder, qrun, tracejob, qalter, qenable, qdisable, qstart,
//! qstop, qmgr and pbsdsh, PBS Pro's reservation commands (pbs_rsub,
//! pbs_rstat, pbs_ralter, pbs_rdel), and the ANL scheduler's sp commands
//! (spq, spwhen, spfree, spwhat, sppause, spunpause, spwait, sprelease,
//! sphelp, getjid), one module each
//! (the binaries call `qmesh_cli::qsub::main()` and so on).
//!
//! The commands are thin clients of qmeshd over its Unix socket: the daemon
//! knows the caller from the socket's peer uid and does all checking and
//! policy; a command gathers, sends and prints. Shared pieces: [`client`]
//! (reaching the daemon, errors), [`output`] (tables, PBS's attribute form
//! and JSON), [`directives`] (options inside job scripts), [`action`]
//! (what qdel, qhold and qrls have in common) and [`resv`] (what the
//! reservation commands have in common).

pub mod action;
pub mod client;
pub mod directives;
pub mod job_tasks;
pub mod output;
pub mod queue_switch;
pub mod resv;
pub mod slurm_format;
pub mod spview;
pub mod spwatch;

pub mod getjid;
pub mod interactive;
pub mod pbs_ralter;
pub mod pbs_rdel;
pub mod pbs_rstat;
pub mod pbs_rsub;
pub mod pbsdsh;
pub mod pbsnodes;
pub mod printjob;
pub mod qalter;
pub mod qdel;
pub mod qdisable;
pub mod qenable;
pub mod qhold;
pub mod qmgr;
pub mod qmove;
pub mod qmsg;
pub mod qorder;
pub mod qreport;
pub mod qrerun;
pub mod qrls;
pub mod qrun;
pub mod qselect;
pub mod qsig;
pub mod qstart;
pub mod qstat;
pub mod qstop;
pub mod qsub;
pub mod sacct;
pub mod salloc;
pub mod sbatch;
pub mod scancel;
pub mod scontrol;
pub mod sinfo;
pub mod spfree;
pub mod sphelp;
pub mod spmap;
pub mod sppause;
pub mod spq;
pub mod sprelease;
pub mod spunpause;
pub mod spusage;
pub mod spwait;
pub mod spwhat;
pub mod spwhen;
pub mod squeue;
pub mod srun;
pub mod tracejob;
