//! An allocation for srun outside a job and for salloc: a job that holds
//! nodes while a client runs things in it, as Slurm's allocations are.
//!
//! qmesh's interactive jobs are exactly that (`qsub -I`): the job is a
//! shell on a terminal, the daemon keeps it for as long as the client is
//! attached to that terminal and deletes it when the client goes away
//! (a ^C, a lost connection). So the allocation is an interactive job
//! asked with sbatch's translation of the options, whose terminal is
//! held open without being shown; once it runs, the step's tasks start
//! on its nodes as in any running job, and the client ends it by typing
//! `exit STATUS` into its shell, so the job ends with the step's (or
//! salloc's command's) status.

use qmesh_proto::{SlurmJob, SubmitRequest, v1};

use super::args::AllocArgs;
use crate::client::{self, CliError};
use crate::interactive::{self, Terminal};
use crate::job_tasks::{self, JobsClient};
use crate::sbatch::translate;

/// A job holding its nodes for this client.
pub struct Allocation {
    pub job_id: String,
    pub info: v1::JobInfo,
    terminal: Terminal,
}

/// The submission for `opts`; `name`: the job's name when `-J` is not
/// given (Slurm's: the command's).
fn request(
    opts: &AllocArgs,
    name: &str,
    env: Vec<(String, String)>,
    shell: &str,
) -> Result<SubmitRequest, String> {
    let sbatch = opts.sbatch();
    let (resources, _) = translate::resources(&sbatch)?;
    let workdir = crate::qsub::workdir().map_err(|e| e.to_string())?;
    let megabytes = |option: &str, value: &Option<String>| {
        value
            .as_deref()
            .map(|m| translate::megabytes(option, m))
            .transpose()
    };
    let text = |o: &Option<String>| o.clone().unwrap_or_default();
    Ok(SubmitRequest {
        script: Vec::new(),
        script_name: name.to_string(),
        name: opts.job_name.clone().unwrap_or_else(|| name.to_string()),
        queue: text(&opts.partition),
        resources: resources
            .into_iter()
            .map(|(name, value)| qmesh_proto::Resource { name, value })
            .collect(),
        shell: shell.to_string(),
        stdout_path: "/dev/null".into(),
        join_output: true,
        account: text(&opts.account),
        env: crate::qsub::dedup_env(env),
        workdir: workdir.clone(),
        start_dir: workdir,
        submit_host: client::hostname(),
        depend: match &opts.dependency {
            Some(d) => translate::dependency(d)?,
            None => String::new(),
        },
        start_after: match &opts.begin {
            Some(t) => translate::begin(t, chrono::Local::now())?.timestamp(),
            None => 0,
        },
        mail_points: match &opts.mail_type {
            Some(m) => translate::mail_points(m)?,
            None => String::new(),
        },
        mail_users: text(&opts.mail_user),
        interactive: true,
        rerunnable: Some(false),
        submission_id: format!("{:032x}", rand::random::<u128>()),
        slurm: Some(SlurmJob {
            ntasks: opts.ntasks,
            cpus_per_task: opts.cpus_per_task,
            ntasks_per_node: opts.ntasks_per_node,
            mem_per_node_mb: megabytes("--mem", &opts.mem)?,
            mem_per_cpu_mb: megabytes("--mem-per-cpu", &opts.mem_per_cpu)?,
        }),
        ..SubmitRequest::default()
    })
}

/// Submits the allocation, an interactive job whose terminal runs
/// `shell`; its id.
pub async fn submit(
    jobs: &mut JobsClient,
    opts: &AllocArgs,
    name: &str,
    env: Vec<(String, String)>,
    shell: &str,
) -> Result<String, CliError> {
    let request = request(opts, name, env, shell).map_err(CliError::Msg)?;
    Ok(jobs.submit(request).await?.into_inner().job_id)
}

/// Submits the allocation and waits until it runs. `cmd` ("srun",
/// "salloc") speaks; `quiet`: only errors.
pub async fn allocate(
    jobs: &mut JobsClient,
    cmd: &str,
    opts: &AllocArgs,
    name: &str,
    env: Vec<(String, String)>,
    quiet: bool,
) -> Result<Allocation, CliError> {
    // The terminal's shell: what it prints is never read.
    let job_id = submit(jobs, opts, name, env, "/bin/sh").await?;
    let number = super::env::number(&job_id).to_string();
    let queued = jobs
        .status(v1::StatusRequest {
            job_ids: vec![job_id.clone()],
            ..Default::default()
        })
        .await?
        .into_inner()
        .jobs
        .first()
        .is_some_and(|j| j.exec_nodes.is_empty());
    if queued && !quiet {
        if cmd == "salloc" {
            eprintln!("salloc: Pending job allocation {number}");
        }
        eprintln!("{cmd}: job {number} queued and waiting for resources");
    }
    let terminal = interactive::open(jobs.clone(), &job_id, Vec::new()).await?;
    if queued && !quiet {
        eprintln!("{cmd}: job {number} has been allocated resources");
    }
    let info = job_tasks::running_job(jobs, &job_id).await?;
    Ok(Allocation {
        job_id,
        info,
        terminal,
    })
}

impl Allocation {
    /// Gives the nodes back: the job ends with `status`.
    pub async fn release(self, status: i32) -> Result<(), CliError> {
        self.terminal.end(status).await.map(|_| ())
    }
}
