//! sbatch: Slurm's batch submission, to the same daemon and queues as
//! qsub. A partition is a queue; the job is an ordinary qmesh job, seen by
//! qstat and squeue alike, that also remembers it speaks Slurm: its output
//! paths keep Slurm's patterns (`slurm-%j.out`) and it sees `SLURM_*`
//! variables (`qmesh_core::job::slurm`).
//!
//! Options come from three places, laid over each other by clap as qsub
//! does (`update_from_arg_matches`): the script's `#SBATCH` lines, then the
//! `SBATCH_*` input variables, then the command line, which wins. As in
//! Slurm, the job runs in the submission directory (or `-D`) with the
//! submitter's whole environment unless `--export` says otherwise.

pub mod args;
pub mod translate;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use qmesh_proto::{SlurmJob, SubmitRequest};

use crate::client::{self, CliError};
use crate::directives;
use args::Args;

/// One source of options as clap read it, to lay over those before it.
struct Source {
    args: Args,
    given: clap::ArgMatches,
}

impl Source {
    fn parse(words: impl IntoIterator<Item = String>) -> Result<Source, clap::Error> {
        let given = Args::command()
            .try_get_matches_from(std::iter::once("sbatch".to_string()).chain(words))?;
        let args = Args::from_arg_matches(&given)?;
        Ok(Source { args, given })
    }

    fn over(&self, base: &mut Args) -> Result<(), clap::Error> {
        base.update_from_arg_matches(&self.given)
    }
}

/// The `SBATCH_*` input variables Slurm reads, and the option each sets.
const INPUT_VARS: &[(&str, &str)] = &[
    ("SBATCH_ACCOUNT", "--account"),
    ("SBATCH_ARRAY_INX", "--array"),
    ("SBATCH_CLUSTERS", "--clusters"),
    ("SBATCH_CONSTRAINT", "--constraint"),
    ("SBATCH_EXCLUSIVE", "--exclusive"),
    ("SBATCH_EXPORT", "--export"),
    ("SBATCH_GPUS", "--gpus"),
    ("SBATCH_GPUS_PER_NODE", "--gpus-per-node"),
    ("SBATCH_GRES", "--gres"),
    ("SBATCH_JOB_NAME", "--job-name"),
    ("SBATCH_MEM_PER_CPU", "--mem-per-cpu"),
    ("SBATCH_MEM_PER_NODE", "--mem"),
    ("SBATCH_NO_REQUEUE", "--no-requeue"),
    ("SBATCH_OPEN_MODE", "--open-mode"),
    ("SBATCH_PARTITION", "--partition"),
    ("SBATCH_QOS", "--qos"),
    ("SBATCH_REQUEUE", "--requeue"),
    ("SBATCH_SIGNAL", "--signal"),
    ("SBATCH_TIMELIMIT", "--time"),
    ("SBATCH_WAIT", "--wait"),
    ("SBATCH_WCKEY", "--wckey"),
];

/// The options of the flags among [`INPUT_VARS`], which take no value.
const FLAG_VARS: &[&str] = &["--no-requeue", "--requeue", "--wait"];

fn input_words(lookup: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut words = Vec::new();
    for (var, option) in INPUT_VARS {
        let Some(value) = lookup(var) else { continue };
        if FLAG_VARS.contains(option) {
            words.push(option.to_string());
        } else if *option == "--exclusive" {
            words.push("--exclusive".into());
        } else {
            words.push(format!("{option}={value}"));
        }
    }
    words
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let words: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cli = match Source::parse(words) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("sbatch: error: {err}");
            ExitCode::from(1)
        }
    }
}

/// The script (`--wrap`'s, the named file or standard input), its name,
/// and its arguments made its positional parameters.
fn script(cli: &Args) -> Result<(Vec<u8>, String), CliError> {
    if let Some(command) = &cli.wrap {
        if !cli.script.is_empty() {
            return Err(CliError::msg("give --wrap or a script, not both"));
        }
        let text = format!("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{command}\n");
        return Ok((text.into_bytes(), "wrap".into()));
    }
    let path = cli.script_path();
    let (mut script, name) = crate::qsub::read_script(path.as_deref())?;
    let name = if path.is_none() {
        "sbatch".into()
    } else {
        name
    };
    if cli.script.len() > 1 {
        script = with_arguments(&script, &cli.script[1..]).map_err(CliError::Msg)?;
    }
    Ok((script, name))
}

/// A shell script's arguments, set as its positional parameters after its
/// `#!` line (qmesh runs a script without arguments).
fn with_arguments(script: &[u8], arguments: &[String]) -> Result<Vec<u8>, String> {
    let text = String::from_utf8_lossy(script);
    let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let shells = ["sh", "bash", "zsh", "ksh", "dash"];
    let shell = first
        .strip_prefix("#!")
        .and_then(|l| l.split_whitespace().last())
        .map(|w| w.rsplit('/').next().unwrap_or(w));
    if !shell.is_some_and(|s| shells.contains(&s)) {
        return Err(format!(
            "arguments to a script are passed to sh-family scripts only (#!/bin/sh, bash, zsh, \
             ksh), not to \"{first}\"; read them from variables with --export instead"
        ));
    }
    let quoted: Vec<String> = arguments
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    Ok(format!("{first}\nset -- {}\n{rest}", quoted.join(" ")).into_bytes())
}

/// What the three sources say, the command line last.
fn gather(
    cli: &Source,
    script: &[u8],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Args, String> {
    let mut merged = Args::default();
    for directive in directives::scan_with(script, &["#SBATCH"]).map_err(|e| e.to_string())? {
        let fail = |message: String| directive.error(message).to_string();
        if directive
            .words
            .first()
            .is_some_and(|w| w == "hetjob" || w == "packjob")
        {
            return Err(fail(
                "heterogeneous jobs are not supported; submit each component as a job of its \
                 own, with --dependency=after:ID to start them together"
                    .into(),
            ));
        }
        let source = Source::parse(directive.words.clone()).map_err(|e| fail(e.to_string()))?;
        if !source.args.script.is_empty() {
            return Err(fail("a directive cannot name a script".into()));
        }
        source.over(&mut merged).map_err(|e| fail(e.to_string()))?;
    }
    let env = Source::parse(input_words(lookup)).map_err(|e| format!("SBATCH_* variables: {e}"))?;
    env.over(&mut merged).map_err(|e| e.to_string())?;
    cli.over(&mut merged).map_err(|e| e.to_string())?;
    Ok(merged)
}

/// Warnings for what is accepted and not done; refusals for what cannot
/// be, saying what to write.
fn check(opts: &Args) -> Result<Vec<String>, String> {
    let mut warnings = Vec::new();
    if let Some(input) = opts.input.as_deref().filter(|i| *i != "/dev/null") {
        return Err(format!(
            "--input={input}: a batch job's standard input is /dev/null in qmesh; read the file \
             in the script (< {input})"
        ));
    }
    if let Some(p) = &opts.partition
        && p.contains(',')
    {
        return Err(format!(
            "--partition={p}: qmesh submits to one partition (queue); a route queue sends jobs \
             on to several (qmgr: route_destinations)"
        ));
    }
    if opts.open_mode.as_deref() == Some("append") {
        warnings.push("--open-mode=append: qmesh writes the output files anew".into());
    }
    if let Some(s) = &opts.signal {
        warnings.push(format!(
            "--signal={s}: not sent; a queue's period_end_warning and warning_signal warn jobs \
             before they are ended"
        ));
    }
    if opts.comment.is_some() {
        warnings.push("--comment: not kept (qstat shows the server's comment)".into());
    }
    if let Some(k) = &opts.wckey {
        warnings.push(format!(
            "--wckey={k}: not kept; qmesh accounts by account (-A) and project"
        ));
    }
    if let Some(c) = opts
        .clusters
        .as_deref()
        .filter(|c| !matches!(*c, "all" | ""))
    {
        warnings.push(format!("--clusters={c}: qmesh's server is the one cluster"));
    }
    if let Some(e) = opts.exclusive.as_deref().filter(|e| !e.is_empty()) {
        warnings.push(format!("--exclusive={e}: the nodes are the job's alone"));
    }
    Ok(warnings)
}

/// The environment sent: `--export` ALL (the default) is all of this one;
/// NONE none; a list those named (with ALL, all and those).
fn exported(
    opts: &Args,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    let all_vars = || {
        std::env::vars_os()
            .filter_map(|(n, v)| Some((n.into_string().ok()?, v.into_string().ok()?)))
            .collect::<Vec<_>>()
    };
    let Some(list) = opts.export.as_deref() else {
        return Ok(all_vars());
    };
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item {
            "ALL" => out.extend(all_vars()),
            "NONE" => {}
            _ => match item.split_once('=') {
                Some((name, value)) => out.push((name.to_string(), value.to_string())),
                None => {
                    if let Some(value) = lookup(item) {
                        out.push((item.to_string(), value));
                    }
                }
            },
        }
    }
    Ok(out)
}

fn run(cli: Source) -> Result<ExitCode, CliError> {
    let (script, script_name) = script(&cli.args)?;
    let lookup = |name: &str| std::env::var(name).ok();
    let opts = gather(&cli, &script, &lookup).map_err(CliError::Msg)?;
    for warning in check(&opts).map_err(CliError::Msg)? {
        eprintln!("sbatch: warning: {warning}");
    }
    let (resources, _nodes) = translate::resources(&opts).map_err(CliError::Msg)?;
    let here = crate::qsub::workdir()?;
    let workdir = match &opts.chdir {
        Some(dir) if dir.starts_with('/') => dir.clone(),
        Some(dir) => format!("{here}/{dir}"),
        None => here.clone(),
    };
    let in_workdir = |p: &str| {
        if p.starts_with('/') {
            p.to_string()
        } else {
            format!("{workdir}/{p}")
        }
    };
    let default_out = if opts.array.is_some() {
        "slurm-%A_%a.out"
    } else {
        "slurm-%j.out"
    };
    let stdout = in_workdir(opts.output.as_deref().unwrap_or(default_out));
    let stderr = opts.error.as_deref().map(in_workdir);
    let mut env = crate::qsub::pbs_o_vars(&lookup);
    env.extend(exported(&opts, &lookup).map_err(CliError::Msg)?);
    let start_after = match &opts.begin {
        Some(text) => translate::begin(text, chrono::Local::now())
            .map_err(CliError::Msg)?
            .timestamp(),
        None => 0,
    };
    let (array_option, array) = opts
        .array
        .as_deref()
        .map(translate::array)
        .unwrap_or(("t", String::new()));
    let depend = match &opts.dependency {
        Some(d) => translate::dependency(d).map_err(CliError::Msg)?,
        None => String::new(),
    };
    let mail_points = match &opts.mail_type {
        Some(m) => translate::mail_points(m).map_err(CliError::Msg)?,
        None => String::new(),
    };
    let mem_per_node_mb = opts
        .mem
        .as_deref()
        .map(|m| translate::megabytes("--mem", m))
        .transpose()
        .map_err(CliError::Msg)?;
    let mem_per_cpu_mb = opts
        .mem_per_cpu
        .as_deref()
        .map(|m| translate::megabytes("--mem-per-cpu", m))
        .transpose()
        .map_err(CliError::Msg)?;
    let text = |o: &Option<String>| o.clone().unwrap_or_default();
    let request = SubmitRequest {
        script,
        script_name: script_name.clone(),
        name: opts.job_name.clone().unwrap_or(script_name),
        queue: text(&opts.partition),
        resources: resources
            .into_iter()
            .map(|(name, value)| qmesh_proto::Resource { name, value })
            .collect(),
        stdout_path: stdout,
        stderr_path: stderr.clone().unwrap_or_default(),
        join_output: stderr.is_none(),
        hold: opts.hold == Some(true),
        account: text(&opts.account),
        env: crate::qsub::dedup_env(env),
        workdir: workdir.clone(),
        submit_host: client::hostname(),
        rerunnable: if opts.no_requeue == Some(true) {
            Some(false)
        } else if opts.requeue == Some(true) {
            Some(true)
        } else {
            None
        },
        depend,
        start_after,
        priority: opts.nice.map(|n| (-n).clamp(-1024, 1023)),
        mail_points,
        mail_users: text(&opts.mail_user),
        start_dir: workdir,
        array_option: array_option.to_string(),
        array,
        submission_id: format!("{:032x}", rand::random::<u128>()),
        slurm: Some(SlurmJob {
            ntasks: opts.ntasks,
            cpus_per_task: opts.cpus_per_task,
            ntasks_per_node: opts.ntasks_per_node,
            mem_per_node_mb,
            mem_per_cpu_mb,
        }),
        ..SubmitRequest::default()
    };
    let job_id = client::block_on(crate::qsub::submit_with_retries(request))?;
    let number = slurm_number(&job_id);
    if opts.parsable == Some(true) {
        println!("{number}");
    } else if opts.quiet != Some(true) {
        println!("Submitted batch job {number}");
    }
    if opts.wait != Some(true) {
        return Ok(ExitCode::SUCCESS);
    }
    // -W: wait for the end, exit with the job's status.
    let info = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = qmesh_proto::WaitRequest {
            job_id: job_id.clone(),
        };
        Ok(jobs.wait(request).await?.into_inner())
    })?;
    let code = match info.exit_status {
        Some(s @ 0..=255) => s as u8,
        Some(s) if s > 256 => 128u8.saturating_add((s - 256).min(127) as u8),
        _ => 1,
    };
    Ok(ExitCode::from(code))
}

/// A qmesh id as Slurm prints it: `123.server` and `123[].server` are 123.
pub fn slurm_number(job_id: &str) -> &str {
    let seq = job_id.split('.').next().unwrap_or(job_id);
    seq.split('[').next().unwrap_or(seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn cli(line: &str) -> Source {
        Source::parse(line.split_whitespace().map(String::from)).unwrap()
    }

    #[test]
    fn the_command_line_wins_over_variables_over_directives() {
        let script = b"#!/bin/bash\n#SBATCH -J fromscript\n#SBATCH --time=10 -p debug\n#SBATCH --account=a1\necho hi\n#SBATCH -J ignored\n";
        let opts = gather(&cli("-J fromcli job.sh"), script, &env(&[])).unwrap();
        assert_eq!(opts.job_name.as_deref(), Some("fromcli"));
        assert_eq!(opts.time.as_deref(), Some("10"));
        assert_eq!(opts.partition.as_deref(), Some("debug"));
        let vars = env(&[("SBATCH_PARTITION", "long"), ("SBATCH_ACCOUNT", "a2")]);
        let opts = gather(&cli("-A a3 job.sh"), script, &vars).unwrap();
        assert_eq!(
            opts.partition.as_deref(),
            Some("long"),
            "the variable over the line"
        );
        assert_eq!(
            opts.account.as_deref(),
            Some("a3"),
            "the command line over both"
        );
    }

    #[test]
    fn a_bad_directive_names_its_line_and_hetjobs_are_refused() {
        let err = gather(&cli("job.sh"), b"#!/bin/sh\n#SBATCH --bogus\n", &env(&[])).unwrap_err();
        assert!(err.starts_with("script line 2:"), "{err}");
        let err = gather(
            &cli("job.sh"),
            b"#!/bin/sh\n#SBATCH -n 1\n#SBATCH hetjob\n",
            &env(&[]),
        )
        .unwrap_err();
        assert!(
            err.contains("heterogeneous jobs are not supported"),
            "{err}"
        );
    }

    #[test]
    fn arguments_become_a_shell_scripts_positional_parameters() {
        let out =
            with_arguments(b"#!/bin/bash\necho $1\n", &["a b".into(), "it's".into()]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "#!/bin/bash\nset -- 'a b' 'it'\\''s'\necho $1\n"
        );
        assert!(with_arguments(b"#!/usr/bin/python3\n", &["x".into()]).is_err());
        assert!(with_arguments(b"#!/usr/bin/env bash\n", &["x".into()]).is_ok());
    }

    #[test]
    fn ids_print_as_slurm_numbers() {
        assert_eq!(slurm_number("123.srv"), "123");
        assert_eq!(slurm_number("124[].srv"), "124");
    }

    #[test]
    fn export_none_sends_only_what_it_names() {
        let opts = cli("--export=NONE,A=1,HOME job.sh").args;
        let got = exported(&opts, &env(&[("HOME", "/h")])).unwrap();
        assert_eq!(
            got,
            [
                ("A".to_string(), "1".to_string()),
                ("HOME".into(), "/h".into())
            ]
        );
    }
}
