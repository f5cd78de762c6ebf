//! Tests against a real Slurm 22.05, the oracle for the formats of
//! qmesh's Slurm commands (sbatch, squeue, sinfo, scontrol, sacct): one
//! private Slurm per test binary (`rig.rs`, docs/SLURM.md), shared by the
//! tests. `oracle.rs` proves the rig and records what Slurm prints; the
//! fixtures beside this file keep it for the comparisons.

mod bench;
mod depend;
#[path = "../e2e/harness.rs"]
#[allow(dead_code)]
mod harness;
mod oracle;
mod rig;
mod sacct;
mod sbatch;
mod scontrol;
mod sinfo;
mod squeue;
mod srun;
