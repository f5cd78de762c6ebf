//! qsub: submit a job script.
//!
//! Options come from two places, the script's directives and the command
//! line, and both are read by the one clap parser below so they cannot
//! disagree. Each source is laid over the ones before it by clap itself
//! (`update_from_arg_matches`: what a source gives replaces, what it does
//! not give stays), directives in order, then the command line: so the
//! command line wins, and a later directive over an earlier one. That is
//! why the flags are `Option<bool>`: a source without `-h` must not clear
//! an earlier `-h`. Resource requests and variables accumulate, directives
//! first, so the server (which takes the last value of a resource) lets
//! the command line win there too.
//!
//! The server checks what qsub sends. qsub checks only what it can say more
//! clearly itself, before connecting: a missing script file, a directive it
//! cannot parse (naming the line), a malformed `-l` or `-v` list, and the
//! wall-time syntax.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};
use qmesh_proto::{EnvVar, Resource, SubmitRequest};

use crate::client::{self, CliError};
use crate::directives;

pub(crate) mod start;
mod w_attrs;

/// Submit a batch job.
///
/// The script is read from SCRIPT, or from standard input when none is
/// named. Options may also be written at the top of the script as
/// directives: lines starting `#PBS`, `#QSUB` or `#@$` (a bare `#@$` line
/// ends them). Options on the command line override directives.
#[derive(Parser, Debug, Default, Clone)]
#[command(
    name = "qsub",
    disable_help_flag = true,
    after_help = "NQS forms: -lP N (nodes), -lT TIME (walltime), -lM SIZE (mem), also glued (-lP64).\n\
                  Prints the job id (SEQ.SERVER) on standard output."
)]
pub struct Args {
    /// Queue to submit to (default: the server's default queue).
    #[arg(short = 'q', value_name = "QUEUE")]
    pub queue: Option<String>,
    /// Resources: nodes=N, walltime=[[H:]M:]S, mem=SIZE; comma lists allowed, may repeat.
    #[arg(short = 'l', value_name = "RES=VAL[,RES=VAL...]")]
    pub resources: Vec<String>,
    /// Job name (default: the script's file name, or STDIN).
    #[arg(short = 'N', value_name = "NAME")]
    pub name: Option<String>,
    /// Standard output file (default: NAME.oSEQ in the submit directory).
    #[arg(short = 'o', value_name = "PATH")]
    pub stdout: Option<String>,
    /// Standard error file (default: NAME.eSEQ in the submit directory).
    #[arg(short = 'e', value_name = "PATH")]
    pub stderr: Option<String>,
    /// Join: "oe" merges standard error into standard output, "eo" standard output into standard error; "n" keeps them apart.
    #[arg(short = 'j', value_name = "oe|eo|n", value_parser = ["oe", "eo", "n"])]
    pub join: Option<String>,
    /// Submit the job with a user hold (release it with qrls).
    #[arg(
        short = 'h',
        num_args = 0,
        default_missing_value = "true",
        overrides_with = "hold"
    )]
    pub hold: Option<bool>,
    /// Account to charge.
    #[arg(short = 'A', value_name = "ACCOUNT")]
    pub account: Option<String>,
    /// Variables to pass: VAR=VALUE, or VAR to pass its value from here; comma lists allowed.
    #[arg(short = 'v', value_name = "VAR[=VAL][,...]")]
    pub vars: Vec<String>,
    /// Pass qsub's whole environment to the job.
    #[arg(
        short = 'V',
        num_args = 0,
        default_missing_value = "true",
        overrides_with = "all_env"
    )]
    pub all_env: Option<bool>,
    /// Whether the job may be rerun after a node failure (default: yes).
    #[arg(short = 'r', value_name = "y|n", value_parser = ["y", "n"])]
    pub rerunnable: Option<String>,
    /// Do not print the job id.
    #[arg(
        short = 'z',
        num_args = 0,
        default_missing_value = "true",
        overrides_with = "quiet"
    )]
    pub quiet: Option<bool>,
    /// Not to start before this local time: [[[[CC]YY]MM]DD]hhmm[.SS]; a time
    /// of day already past means tomorrow (PBS).
    #[arg(short = 'a', value_name = "DATE_TIME")]
    pub start_after: Option<String>,
    /// More attributes: depend=afterok:ID[:ID...][,afterany:ID...][,afternotok:ID...],
    /// umask=022, group_list=GROUP, block=true (wait for the job and exit with its status).
    #[arg(short = 'W', value_name = "ATTR=VALUE")]
    pub attributes: Vec<String>,
    /// The shell that runs the script: PATH[@HOST][,PATH@HOST...] (default: its #! line, else /bin/sh).
    #[arg(short = 'S', value_name = "PATH_LIST")]
    pub shell: Option<String>,
    /// Mail on: a (abort), b (begin), e (end), any of them, or n (none); default a.
    #[arg(short = 'm', value_name = "a|b|e|n")]
    pub mail_points: Option<String>,
    /// Who gets the mail: USER[@HOST][,...] (default: the job's owner).
    #[arg(short = 'M', value_name = "USER_LIST")]
    pub mail_users: Option<String>,
    /// The job's priority among its queue's jobs, -1024 to 1023 (default 0).
    #[arg(short = 'p', value_name = "PRIORITY", allow_negative_numbers = true)]
    pub priority: Option<i32>,
    /// The project the job belongs to (PBS Pro).
    #[arg(short = 'P', value_name = "PROJECT")]
    pub project: Option<String>,
    /// Keep output on the execution host: o, e, oe, eo, d or n (qmesh writes output to its final path directly).
    #[arg(short = 'k', value_name = "o|e|oe|n")]
    pub keep: Option<String>,
    /// Checkpoints: n, s, c, c=MINUTES, w (accepted; qmesh does not checkpoint, and says so in the job's comment).
    #[arg(short = 'c', value_name = "INTERVAL")]
    pub checkpoint: Option<String>,
    /// The prefix of directives in the script (default #PBS; "" reads none).
    #[arg(short = 'C', value_name = "PREFIX")]
    pub prefix: Option<String>,
    /// The user the job runs as: must be you (qmesh runs a job as its submitter).
    #[arg(short = 'u', value_name = "USER_LIST")]
    pub user_list: Option<String>,
    /// The directory the job starts in (Torque's -d, and -w the same; default: your home directory, as PBS).
    #[arg(short = 'd', visible_short_alias = 'w', value_name = "PATH")]
    pub start_dir: Option<String>,
    /// Accepted: PBS Pro's foreground qsub, Torque's fault-tolerant job; qmesh's qsub always returns once the job is stored.
    #[arg(
        short = 'f',
        num_args = 0,
        default_missing_value = "true",
        overrides_with = "foreground"
    )]
    pub foreground: Option<bool>,
    /// Torque: the job's nodes to itself (as -l naccesspolicy=singlejob).
    #[arg(
        short = 'n',
        num_args = 0,
        default_missing_value = "true",
        overrides_with = "node_exclusive"
    )]
    pub node_exclusive: Option<bool>,
    /// A job array (PBS Pro): -J X-Y[:STEP][%N], at most N running at once;
    /// each sub-job sees PBS_ARRAY_INDEX and writes NAME.oSEQ.INDEX.
    #[arg(short = 'J', value_name = "RANGE")]
    pub array_j: Option<String>,
    /// A job array (Torque): -t 1-100, -t 1,4,9-12, with %N; each sub-job
    /// sees PBS_ARRAYID and writes NAME.oSEQ-INDEX.
    #[arg(short = 't', value_name = "RANGE")]
    pub array_t: Option<String>,
    /// An interactive job: wait for it to start, then get a shell on its
    /// first node as yourself, on this terminal (Ctrl-D or exit ends the
    /// job). A script given is read for its directives only.
    #[arg(
        short = 'I',
        num_args = 0,
        default_missing_value = "true",
        overrides_with = "interactive"
    )]
    pub interactive: Option<bool>,
    /// X11 forwarding for interactive jobs: not supported.
    #[arg(
        short = 'X',
        num_args = 0,
        default_missing_value = "true",
        overrides_with = "x11"
    )]
    pub x11: Option<bool>,
    /// Print help.
    #[arg(long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// The job script (default: standard input).
    #[arg(value_name = "SCRIPT")]
    pub script: Option<PathBuf>,
}

/// Whether a flag was given (by any source).
fn on(flag: Option<bool>) -> bool {
    flag == Some(true)
}

/// One source of qsub's options (the command line, or one directive) as
/// clap read it: the options, and which of them it gave, to lay over the
/// sources before it.
#[derive(Debug)]
pub struct Source {
    pub args: Args,
    given: clap::ArgMatches,
}

impl Source {
    /// Reads `words` (after the NQS forms are rewritten).
    pub fn parse(words: impl IntoIterator<Item = String>) -> Result<Source, clap::Error> {
        let given = Args::command()
            .try_get_matches_from(std::iter::once("qsub".to_string()).chain(words))?;
        let args = Args::from_arg_matches(&given)?;
        Ok(Source { args, given })
    }

    /// Lays this source's options over `base`: what it gives wins.
    fn over(&self, base: &mut Args) -> Result<(), clap::Error> {
        base.update_from_arg_matches(&self.given)
    }
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let mut words: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // PBS Pro: `qsub [options] -- executable [arguments]` runs a program
    // instead of a script.
    let command = match words.iter().position(|w| w == "--") {
        Some(at) => {
            let command = words.split_off(at + 1);
            words.pop();
            if command.is_empty() {
                eprintln!(
                    "qsub: -- must be followed by a program to run, e.g. qsub -- /bin/hostname"
                );
                return ExitCode::from(2);
            }
            Some(command)
        }
        None => None,
    };
    let words = match rewrite_nqs(&words) {
        Ok(words) => words,
        Err(message) => {
            eprintln!("qsub: {message}");
            return ExitCode::from(2);
        }
    };
    let cli = match Source::parse(words) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    if command.is_some() && cli.args.script.is_some() {
        eprintln!("qsub: give a script or -- and a program, not both");
        return ExitCode::from(2);
    }
    match run(cli, command) {
        Ok(code) => code,
        Err(err) => client::fail("qsub", &err),
    }
}

/// The script that runs `command` (PBS Pro's `qsub -- program args`), and
/// the job's default name: the program's file name.
fn command_script(command: &[String]) -> (Vec<u8>, String) {
    let quoted: Vec<String> = command
        .iter()
        .map(|word| format!("'{}'", word.replace('\'', "'\\''")))
        .collect();
    let name = command
        .first()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .unwrap_or_default();
    (
        format!("#!/bin/sh\nexec {}\n", quoted.join(" ")).into_bytes(),
        name,
    )
}

fn run(cli: Source, command: Option<Vec<String>>) -> Result<ExitCode, CliError> {
    let (script, script_name) = match &command {
        Some(command) => command_script(command),
        // qsub -I reads no script from its standard input: that is the
        // terminal the shell will have.
        None if on(cli.args.interactive) && cli.args.script.is_none() => {
            (Vec::new(), "STDIN".to_string())
        }
        None => read_script(cli.args.script.as_deref())?,
    };
    let lookup = |name: &str| std::env::var(name).ok();
    let gathered = gather(&cli, &script, &lookup).map_err(CliError::Msg)?;
    let mut env = pbs_o_vars(&lookup);
    if on(gathered.opts.all_env) {
        env.extend(
            std::env::vars_os()
                .filter_map(|(n, v)| Some((n.into_string().ok()?, v.into_string().ok()?))),
        );
    }
    env.extend(gathered.vars);
    let w = gathered.w;
    let depend = w.depend.join(",");
    let opts = gathered.opts;
    let start_after = match &opts.start_after {
        Some(text) => start::parse_start_after(text, chrono::Local::now())
            .map_err(CliError::Msg)?
            .timestamp(),
        None => 0,
    };
    let text = |o: Option<String>| o.unwrap_or_default();
    let request = SubmitRequest {
        script,
        script_name,
        name: text(opts.name),
        queue: text(opts.queue),
        resources: gathered.resources,
        stdout_path: text(opts.stdout.map(|p| without_host(&p))),
        stderr_path: text(opts.stderr.map(|p| without_host(&p))),
        join_output: opts.join.as_deref() == Some("oe"),
        join_to_error: opts.join.as_deref() == Some("eo"),
        hold: on(opts.hold),
        account: text(opts.account),
        env: dedup_env(env),
        workdir: workdir()?,
        submit_host: client::hostname(),
        rerunnable: opts.rerunnable.map(|r| r == "y"),
        depend,
        start_after,
        priority: opts.priority,
        project: text(opts.project),
        shell: text(opts.shell),
        mail_points: text(opts.mail_points),
        mail_users: text(opts.mail_users),
        keep_files: text(opts.keep),
        checkpoint: text(opts.checkpoint),
        umask: text(w.umask),
        group_list: text(w.group_list),
        start_dir: text(opts.start_dir),
        user_list: text(opts.user_list),
        array_option: if opts.array_j.is_some() { "J" } else { "t" }.to_string(),
        array: text(opts.array_j.or(opts.array_t)),
        interactive: on(opts.interactive),
        submission_id: format!("{:032x}", rand::random::<u128>()),
        sandbox_private: w.sandbox_private.unwrap_or(false),
        slurm: None,
    };
    if on(opts.interactive) {
        return interactive(request);
    }
    let job_id = client::block_on(submit_with_retries(request))?;
    if !on(opts.quiet) {
        crate::output::emit(&JobId(job_id.clone()), false)
            .map_err(|e| CliError::msg(format!("cannot write the job id: {e}")))?;
    }
    if w.block != Some(true) {
        return Ok(ExitCode::SUCCESS);
    }
    // -W block=true: wait for the end, exit with the job's status (tools
    // such as workflow engines rely on it).
    let info = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = qmesh_proto::WaitRequest {
            job_id: job_id.clone(),
        };
        Ok(jobs.wait(request).await?.into_inner())
    })?;
    Ok(ExitCode::from(block_exit_code(&job_id, info.exit_status)))
}

/// How long qsub keeps trying a submission the server cannot take now
/// (`QMESH_SUBMIT_RETRY_SECS`, default 60).
fn retry_window() -> std::time::Duration {
    let secs = std::env::var("QMESH_SUBMIT_RETRY_SECS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(60);
    std::time::Duration::from_secs(secs)
}

/// Whether a refusal may pass on its own soon: the server is starting or
/// stands by, a failover is under way, or a login node's agent cannot
/// reach the leader. A read-only server (its store cannot write) is said
/// at once; so is a daemon whose socket is not there.
fn worth_retrying(err: &CliError) -> bool {
    match err {
        CliError::Rpc(status) => {
            status.code() == tonic::Code::Unavailable
                && !status.message().contains("cannot write its store")
        }
        CliError::Unreachable { .. } | CliError::Msg(_) => false,
    }
}

/// Submits, and on a refusal that a failover explains, submits again with
/// the same submission id: the daemon makes one job whatever the number
/// of tries that reached it.
pub(crate) async fn submit_with_retries(request: SubmitRequest) -> Result<String, CliError> {
    let deadline = std::time::Instant::now() + retry_window();
    let mut pause = std::time::Duration::from_millis(100);
    let mut said = false;
    loop {
        let attempt = async {
            let mut jobs = client::jobs().await?;
            Ok::<_, CliError>(jobs.submit(request.clone()).await?.into_inner().job_id)
        }
        .await;
        match attempt {
            Ok(id) => return Ok(id),
            Err(e) if worth_retrying(&e) && std::time::Instant::now() + pause < deadline => {
                if !said {
                    eprintln!("qsub: {e}; trying again (the same submission: at most one job)");
                    said = true;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(std::time::Duration::from_secs(2));
            }
            Err(e) => return Err(e),
        }
    }
}

/// qsub -I: submit, wait for the start, then the terminal until the
/// shell ends; qsub's exit status is the shell's.
fn interactive(mut request: SubmitRequest) -> Result<ExitCode, CliError> {
    use std::io::IsTerminal;
    // The shell's terminal is this one: its type goes along (PBS does).
    if let Ok(term) = std::env::var("TERM")
        && !request.env.iter().any(|e| e.name == "TERM")
    {
        request.env.push(qmesh_proto::EnvVar {
            name: "TERM".into(),
            value: term,
        });
    }
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "qsub: standard input is not a terminal: the shell gets no line editing or job control"
        );
    }
    let runtime = client::runtime()?;
    let outcome = runtime.block_on(async {
        let mut jobs = client::jobs().await?;
        let job_id = jobs.submit(request).await?.into_inner().job_id;
        eprintln!("qsub: waiting for job {job_id} to start");
        crate::interactive::attach(jobs, &job_id, Vec::new()).await
    });
    // The key reader blocks in a thread on the terminal: do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(50));
    let code = outcome?;
    Ok(ExitCode::from(
        u8::try_from(code.clamp(0, 255)).unwrap_or(1),
    ))
}

/// The exit code of `qsub -W block=true` for a job that ended with PBS
/// exit status `status`: the status itself; 128 + N for signal N (as a
/// shell says it); 1, with a message, for a job that never ran.
fn block_exit_code(job_id: &str, status: Option<i32>) -> u8 {
    match status {
        Some(s @ 0..=255) => s as u8,
        Some(s) if s > 256 => (128 + (s - 256).min(127)) as u8,
        Some(s) => {
            eprintln!("qsub: job {job_id} did not run (exit status {s}); see qstat -x -f {job_id}");
            1
        }
        None => {
            eprintln!("qsub: job {job_id} ended without an exit status; see qstat -x -f {job_id}");
            1
        }
    }
}

/// PBS's `[hostname:]path`: qmesh's jobs write to the shared file system,
/// so the host part is dropped.
pub(crate) fn without_host(path: &str) -> String {
    match path.split_once(':') {
        Some((host, rest)) if !host.is_empty() && !host.contains('/') => rest.to_string(),
        _ => path.to_string(),
    }
}

/// The job id alone on a line (the text form; qsub has no JSON form).
struct JobId(String);

impl crate::output::Output for JobId {
    fn text(&self) -> String {
        format!("{}\n", self.0)
    }
    fn json(&self) -> crate::output::Tree {
        crate::output::Tree::text(&self.0)
    }
}

/// The script's bytes and the name the server uses for the default job name.
pub(crate) fn read_script(path: Option<&Path>) -> Result<(Vec<u8>, String), CliError> {
    let mut script = Vec::new();
    let Some(path) = path else {
        std::io::stdin().read_to_end(&mut script).map_err(|e| {
            CliError::msg(format!("cannot read the script from standard input: {e}"))
        })?;
        return Ok((script, "STDIN".to_string()));
    };
    script = client::read_named_file(path, "script file")?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    Ok((script, name))
}

/// The directory the job runs in: `$PWD` when it names the current
/// directory (keeping the user's symlinked path), else the real path.
pub(crate) fn workdir() -> Result<String, CliError> {
    use std::os::unix::fs::MetadataExt;
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::msg(format!("cannot find the current directory: {e}")))?;
    let same = |a: &Path, b: &Path| match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    };
    let dir = match std::env::var_os("PWD").map(PathBuf::from) {
        Some(pwd) if pwd.is_absolute() && same(&pwd, &cwd) => pwd,
        _ => cwd,
    };
    dir.into_os_string()
        .into_string()
        .map_err(|d| CliError::msg(format!("the current directory {d:?} is not valid UTF-8")))
}

/// What the directives and the command line ask for together.
#[derive(Debug, Default)]
struct Gathered {
    opts: Args,
    resources: Vec<Resource>,
    vars: Vec<(String, String)>,
    /// `-W` attributes, directives first.
    w: w_attrs::WAttrs,
}

/// Reads the script's directives and merges the command line over them.
/// The directive prefix is `-C`'s (from the command line: PBS ignores a
/// `-C` in the script), else `PBS_DPREFIX`, else `#PBS` with NQS's too.
fn gather(
    cli: &Source,
    script: &[u8],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Gathered, String> {
    let mut merged = Args::default();
    let mut resources = Vec::new();
    let mut vars = Vec::new();
    let mut w = w_attrs::WAttrs::default();
    let prefix = cli.args.prefix.clone().or_else(|| lookup("PBS_DPREFIX"));
    let found = match prefix.as_deref() {
        Some("") => Vec::new(),
        Some(p) => directives::scan_with(script, &[p]).map_err(|e| e.to_string())?,
        None => directives::scan(script).map_err(|e| e.to_string())?,
    };
    for directive in found {
        let fail = |message: String| directive.error(message).to_string();
        let words = rewrite_nqs(&directive.words).map_err(fail)?;
        let source = Source::parse(words).map_err(|e| fail(describe_clap_error(&e)))?;
        let opts = &source.args;
        if let Some(script) = &opts.script {
            return Err(fail(format!(
                "a directive cannot name a script (\"{}\")",
                script.display()
            )));
        }
        refuse_unsupported(opts).map_err(fail)?;
        resources.extend(parse_resources(&opts.resources).map_err(fail)?);
        vars.extend(parse_vars(&opts.vars, lookup).map_err(fail)?);
        w = w.then(w_attrs::parse(&opts.attributes).map_err(fail)?);
        source
            .over(&mut merged)
            .map_err(|e| fail(describe_clap_error(&e)))?;
    }
    resources.extend(parse_resources(&cli.args.resources)?);
    vars.extend(parse_vars(&cli.args.vars, lookup)?);
    w = w.then(w_attrs::parse(&cli.args.attributes)?);
    cli.over(&mut merged).map_err(|e| describe_clap_error(&e))?;
    // The lists were taken above, source by source; PBS ignores -C in a
    // script (the prefix was the command line's, or the environment's).
    let opts = Args {
        resources: Vec::new(),
        vars: Vec::new(),
        attributes: Vec::new(),
        prefix: cli.args.prefix.clone(),
        ..merged
    };
    if on(opts.node_exclusive) {
        resources.push(Resource {
            name: "naccesspolicy".into(),
            value: "singlejob".into(),
        });
    }
    refuse_unsupported(&opts)?;
    Ok(Gathered {
        opts,
        resources,
        vars,
        w,
    })
}

/// What a script's directives ask, read and checked as qsub reads them
/// with nothing on the command line and an empty environment: how many
/// resources they name, or qsub's refusal. Public for the fuzz targets
/// (`fuzz/`), which reach the directives' parsers from outside the crate.
#[doc(hidden)]
pub fn check_directives(script: &[u8]) -> Result<usize, String> {
    let nothing = Source::parse(Vec::new()).map_err(|e| describe_clap_error(&e))?;
    gather(&nothing, script, &|_| None).map(|g| g.resources.len())
}

/// Options qmesh cannot honour without running the job wrongly.
fn refuse_unsupported(opts: &Args) -> Result<(), String> {
    if let (Some(j), Some(t)) = (&opts.array_j, &opts.array_t) {
        return Err(format!(
            "-J {j} and -t {t}: give one of them (-J is PBS Pro's form, -t Torque's)"
        ));
    }
    if on(opts.x11) {
        return Err(
            "-X: qmesh does not forward X11; run the graphical program through ssh -X to the \
             job's node (qstat -f shows exec_host) or in a VNC session"
                .into(),
        );
    }
    if on(opts.interactive) && (opts.array_j.is_some() || opts.array_t.is_some()) {
        return Err(
            "-I and a job array (-J, -t) cannot go together: an array has no one terminal".into(),
        );
    }
    Ok(())
}

/// One line saying what clap found wrong in a directive.
fn describe_clap_error(err: &clap::Error) -> String {
    use clap::error::{ContextKind, ErrorKind};
    if err.kind() == ErrorKind::UnknownArgument {
        if let Some(arg) = err.get(ContextKind::InvalidArg) {
            return format!("unknown option \"{arg}\"");
        }
    }
    let rendered = err.render().to_string();
    let first = rendered.lines().next().unwrap_or("bad option");
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

/// Rewrites the NQS resource forms, which clap would read as `-l P`:
/// `-lP N`/`-lPN` to `-l nodes=N`, `-lT` to walltime, `-lM` to mem.
pub fn rewrite_nqs(words: &[String]) -> Result<Vec<String>, String> {
    const NQS: [(&str, &str); 3] = [("-lP", "nodes"), ("-lT", "walltime"), ("-lM", "mem")];
    const TAKES_VALUE: [&str; 24] = [
        "-q", "-l", "-N", "-o", "-e", "-j", "-A", "-v", "-r", "-a", "-W", "-S", "-m", "-M", "-p",
        "-P", "-k", "-c", "-C", "-u", "-d", "-w", "-J", "-t",
    ];
    let mut out = Vec::with_capacity(words.len());
    let mut iter = words.iter();
    while let Some(word) = iter.next() {
        if word == "--" {
            out.push(word.clone());
            out.extend(iter.cloned());
            break;
        }
        if TAKES_VALUE.contains(&word.as_str()) {
            out.push(word.clone());
            if let Some(value) = iter.next() {
                out.push(value.clone());
            }
            continue;
        }
        let Some((flag, resource)) = NQS.iter().find(|(flag, _)| word.starts_with(flag)) else {
            out.push(word.clone());
            continue;
        };
        let glued = &word[flag.len()..];
        let value = if glued.is_empty() {
            iter.next()
                .ok_or_else(|| format!("{flag} needs a value, e.g. {flag} {}", example(resource)))?
                .clone()
        } else {
            glued.to_string()
        };
        out.push("-l".to_string());
        out.push(format!("{resource}={value}"));
    }
    Ok(out)
}

fn example(resource: &str) -> &'static str {
    match resource {
        "nodes" => "4",
        "walltime" => "1:00:00",
        _ => "2gb",
    }
}

/// `-l` values as `Resource`s, in order; wall times are checked here so a
/// typo fails before anything is sent.
fn parse_resources(lists: &[String]) -> Result<Vec<Resource>, String> {
    let mut out = Vec::new();
    for list in lists {
        for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let Some((name, value)) = item.split_once('=') else {
                return Err(format!(
                    "bad resource \"{item}\" in -l {list}: write NAME=VALUE, e.g. -l walltime=1:00:00"
                ));
            };
            let (name, value) = (name.trim(), value.trim());
            if name.is_empty() {
                return Err(format!(
                    "bad resource \"{item}\" in -l {list}: the name is missing"
                ));
            }
            if name == "walltime" {
                qmesh_core::time::parse_duration(value).map_err(|e| e.to_string())?;
            }
            out.push(Resource {
                name: name.to_string(),
                value: value.to_string(),
            });
        }
    }
    Ok(out)
}

/// `-v` lists as (name, value) pairs. A bare name takes its value from
/// qsub's environment; commas inside quotes do not split (PBS:
/// `-v "LIST='a,b'"`), and the quotes around a value are removed.
fn parse_vars(
    lists: &[String],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for list in lists {
        for item in split_outside_quotes(list) {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let (name, value) = match item.split_once('=') {
                Some((name, value)) => (name.trim(), unquote(value).to_string()),
                None => {
                    let value = lookup(item).ok_or_else(|| {
                        format!(
                            "-v {item}: {item} is not set in the environment; write {item}=VALUE"
                        )
                    })?;
                    (item, value)
                }
            };
            if !valid_var_name(name) {
                return Err(format!(
                    "-v {item}: \"{name}\" is not a variable name (letters, digits and _, not starting with a digit)"
                ));
            }
            out.push((name.to_string(), value));
        }
    }
    Ok(out)
}

fn split_outside_quotes(list: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (i, c) in list.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ',') => {
                parts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&list[start..]);
    parts
}

fn unquote(value: &str) -> &str {
    for q in ['\'', '"'] {
        if value.len() >= 2 && value.starts_with(q) && value.ends_with(q) {
            return &value[1..value.len() - 1];
        }
    }
    value
}

fn valid_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// PBS's `PBS_O_*` variables: qsub's own environment, which only qsub can
/// see, recorded for the job (PBS_O_WORKDIR and PBS_O_HOST follow from the
/// workdir and submit_host fields).
pub(crate) fn pbs_o_vars(lookup: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
    ["HOME", "LANG", "LOGNAME", "PATH", "MAIL", "SHELL", "TZ"]
        .iter()
        .filter_map(|name| Some((format!("PBS_O_{name}"), lookup(name)?)))
        .collect()
}

/// One entry per name, the last value winning, at the first one's place.
pub(crate) fn dedup_env(vars: Vec<(String, String)>) -> Vec<EnvVar> {
    let mut out: Vec<EnvVar> = Vec::with_capacity(vars.len());
    let mut seen = std::collections::HashMap::new();
    for (name, value) in vars {
        match seen.get(&name) {
            Some(&i) => out[i] = EnvVar { name, value },
            None => {
                seen.insert(name.clone(), out.len());
                out.push(EnvVar { name, value });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    fn cli(line: &str) -> Source {
        Source::parse(rewrite_nqs(&words(line)).unwrap()).unwrap()
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn res(list: &[Resource]) -> Vec<(&str, &str)> {
        list.iter()
            .map(|r| (r.name.as_str(), r.value.as_str()))
            .collect()
    }

    #[test]
    fn nqs_forms_become_pbs_resources() {
        assert_eq!(
            rewrite_nqs(&words("-lP 4 -lP64 -lT 1:00:00 -lM2gb -N x s.sh")).unwrap(),
            words("-l nodes=4 -l nodes=64 -l walltime=1:00:00 -l mem=2gb -N x s.sh")
        );
    }

    #[test]
    fn nqs_rewriting_leaves_option_values_and_after_dashdash_alone() {
        assert_eq!(rewrite_nqs(&words("-N -lP")).unwrap(), words("-N -lP"));
        assert_eq!(rewrite_nqs(&words("-- -lP 4")).unwrap(), words("-- -lP 4"));
        let err = rewrite_nqs(&words("-lT")).unwrap_err();
        assert_eq!(err, "-lT needs a value, e.g. -lT 1:00:00");
    }

    #[test]
    fn resources_keep_order_and_split_commas() {
        let args = cli("-l nodes=4,walltime=1:00:00 -lP 8 -l mem=1gb").args;
        let list = parse_resources(&args.resources).unwrap();
        assert_eq!(
            res(&list),
            vec![
                ("nodes", "4"),
                ("walltime", "1:00:00"),
                ("nodes", "8"),
                ("mem", "1gb")
            ]
        );
    }

    #[test]
    fn bad_resources_fail_before_sending() {
        let err = parse_resources(&["nodes".to_string()]).unwrap_err();
        assert!(err.contains("write NAME=VALUE"), "{err}");
        let err = parse_resources(&["walltime=1:99".to_string()]).unwrap_err();
        assert!(err.starts_with("bad wall time \"1:99\""), "{err}");
    }

    #[test]
    fn directives_then_command_line() {
        let script = b"#!/bin/bash\n#PBS -N fromscript -q slow\n#QSUB -l nodes=2,walltime=10:00\n#@$-lT 20:00\n#@$\n#PBS -N ignored\necho hi\n";
        let got = gather(&cli("-q fast -l nodes=4 -h"), script, &no_env).unwrap();
        assert_eq!(got.opts.name.as_deref(), Some("fromscript"));
        assert_eq!(got.opts.queue.as_deref(), Some("fast"));
        assert_eq!(got.opts.hold, Some(true));
        assert_eq!(
            res(&got.resources),
            vec![
                ("nodes", "2"),
                ("walltime", "10:00"),
                ("walltime", "20:00"),
                ("nodes", "4")
            ]
        );
    }

    #[test]
    fn later_directives_win_over_earlier_ones() {
        let script = b"#PBS -N a\n#PBS -N b -r n\n";
        let got = gather(&cli(""), script, &no_env).unwrap();
        assert_eq!(got.opts.name.as_deref(), Some("b"));
        assert_eq!(got.opts.rerunnable.as_deref(), Some("n"));
    }

    #[test]
    fn a_later_source_without_a_flag_keeps_it_and_one_with_a_value_replaces_it() {
        let script = b"#PBS -h -V -d /from/script\n#PBS -N b\n#PBS -C XX\n";
        let got = gather(&cli("-w /from/cli -z"), script, &no_env).unwrap();
        assert_eq!(
            got.opts.hold,
            Some(true),
            "not cleared by the later -N line"
        );
        assert_eq!(got.opts.all_env, Some(true));
        assert_eq!(got.opts.quiet, Some(true), "the command line's flag");
        assert_eq!(got.opts.interactive, None);
        assert_eq!(got.opts.name.as_deref(), Some("b"));
        assert_eq!(
            got.opts.start_dir.as_deref(),
            Some("/from/cli"),
            "-w is -d, and the command line wins"
        );
        assert_eq!(got.opts.prefix, None, "PBS ignores -C in a script");
    }

    #[test]
    fn directives_stop_at_the_first_command() {
        let script = b"#PBS -N a\n\n# note\ncd /tmp\n#PBS -N b\n";
        let got = gather(&cli(""), script, &no_env).unwrap();
        assert_eq!(got.opts.name.as_deref(), Some("a"));
    }

    #[test]
    fn quoted_directive_values() {
        let script = b"#PBS -v \"GREETING=hello world\" -o '/tmp/my out'\n";
        let got = gather(&cli(""), script, &no_env).unwrap();
        assert_eq!(got.vars, vec![("GREETING".into(), "hello world".into())]);
        assert_eq!(got.opts.stdout.as_deref(), Some("/tmp/my out"));
    }

    #[test]
    fn a_bad_directive_names_its_line() {
        let script = b"#!/bin/sh\n# job\n#PBS -Z\n";
        let err = gather(&cli(""), script, &no_env).unwrap_err();
        assert_eq!(
            err,
            "script line 3: unknown option \"-Z\" in directive \"#PBS -Z\""
        );
        let err = gather(&cli(""), b"#PBS -r maybe\n", &no_env).unwrap_err();
        assert!(
            err.starts_with("script line 1: invalid value 'maybe'"),
            "{err}"
        );
        let err = gather(&cli(""), b"#PBS -l walltime=1:99\n", &no_env).unwrap_err();
        assert!(err.starts_with("script line 1: bad wall time"), "{err}");
        let err = gather(&cli(""), b"#PBS other.sh\n", &no_env).unwrap_err();
        assert!(err.contains("cannot name a script"), "{err}");
    }

    #[test]
    fn vars_expand_from_the_environment() {
        let env = |name: &str| (name == "HOME").then(|| "/home/u".to_string());
        let got = parse_vars(
            &["A=1,HOME".to_string(), "B='x,y',C=\"q\"".to_string()],
            &env,
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                ("A".into(), "1".into()),
                ("HOME".into(), "/home/u".into()),
                ("B".into(), "x,y".into()),
                ("C".into(), "q".into()),
            ]
        );
        let err = parse_vars(&["NOPE".to_string()], &env).unwrap_err();
        assert!(err.contains("NOPE is not set"), "{err}");
        let err = parse_vars(&["1X=2".to_string()], &env).unwrap_err();
        assert!(err.contains("not a variable name"), "{err}");
    }

    #[test]
    fn later_variables_replace_earlier_ones_in_place() {
        let env = dedup_env(vec![
            ("A".into(), "1".into()),
            ("B".into(), "2".into()),
            ("A".into(), "3".into()),
        ]);
        let pairs: Vec<(&str, &str)> = env
            .iter()
            .map(|e| (e.name.as_str(), e.value.as_str()))
            .collect();
        assert_eq!(pairs, vec![("A", "3"), ("B", "2")]);
    }

    #[test]
    fn pbs_o_vars_come_from_qsubs_environment() {
        let env = |name: &str| (name == "PATH").then(|| "/bin".to_string());
        assert_eq!(pbs_o_vars(&env), vec![("PBS_O_PATH".into(), "/bin".into())]);
    }

    #[test]
    fn missing_script_file_is_named() {
        let err = read_script(Some(Path::new("x.sh.does-not-exist"))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "script file \"x.sh.does-not-exist\" does not exist"
        );
    }

    #[test]
    fn script_name_is_the_basename() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.sh");
        std::fs::write(&path, "echo hi\n").unwrap();
        let (script, name) = read_script(Some(&path)).unwrap();
        assert_eq!(script, b"echo hi\n");
        assert_eq!(name, "job.sh");
    }

    #[test]
    fn glued_pbs_resources_parse_too() {
        let args = cli("-lnodes=4 -lwalltime=1:00:00").args;
        let list = parse_resources(&args.resources).unwrap();
        assert_eq!(res(&list), vec![("nodes", "4"), ("walltime", "1:00:00")]);
    }

    #[test]
    fn unknown_long_options_are_named_too() {
        let err = gather(&cli(""), b"#PBS --frobnicate\n", &no_env).unwrap_err();
        assert_eq!(
            err,
            "script line 1: unknown option \"--frobnicate\" in directive \"#PBS --frobnicate\""
        );
    }

    #[test]
    fn start_conditions_come_from_directives_and_the_command_line() {
        let script = b"#PBS -W depend=afterok:3:5.srv,afterany:4 -a 2230\n";
        let got = gather(&cli("-W depend=afternotok:6"), script, &no_env).unwrap();
        assert_eq!(
            got.w.depend,
            vec!["afterok:3:5.srv,afterany:4", "afternotok:6"]
        );
        assert_eq!(got.opts.start_after.as_deref(), Some("2230"));
        let got = gather(&cli("-a 0100"), script, &no_env).unwrap();
        assert_eq!(got.opts.start_after.as_deref(), Some("0100"));
        let got = gather(&cli(""), b"#PBS -W umask=022\n", &no_env).unwrap();
        assert_eq!(got.w.umask.as_deref(), Some("022"));
        let err = gather(&cli(""), b"#PBS -W stagein=a@h:b\n", &no_env).unwrap_err();
        assert!(err.starts_with("script line 1: -W stagein"), "{err}");
    }

    #[test]
    fn a_program_after_dashdash_becomes_a_script() {
        let (script, name) = command_script(&words("/bin/echo it's here"));
        assert_eq!(
            String::from_utf8(script).unwrap(),
            "#!/bin/sh\nexec '/bin/echo' 'it'\\''s' 'here'\n"
        );
        assert_eq!(name, "echo");
    }

    #[test]
    fn torques_dash_n_asks_for_the_nodes_alone() {
        let got = gather(&cli(""), b"#PBS -n\n#PBS -l nodes=1\n", &no_env).unwrap();
        assert!(
            res(&got.resources).contains(&("naccesspolicy", "singlejob")),
            "{:?}",
            got.resources
        );
        let got = gather(&cli(""), b"#!/bin/sh\n#PBS -t 1-5%2\n", &no_env).unwrap();
        assert_eq!(got.opts.array_t.as_deref(), Some("1-5%2"));
        let got = gather(&cli("-J 0-9"), b"#!/bin/sh\n#PBS -J 1-5\n", &no_env).unwrap();
        assert_eq!(got.opts.array_j.as_deref(), Some("0-9"));
        let err = gather(&cli("-J 0-9"), b"#PBS -t 1-5\n", &no_env).unwrap_err();
        assert!(err.contains("give one of them"), "{err}");
    }

    #[test]
    fn hold_is_dash_h_and_help_is_long_only() {
        assert_eq!(cli("-h").args.hold, Some(true));
        let err = Args::try_parse_from(["qsub", "--help"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp);
    }
}
