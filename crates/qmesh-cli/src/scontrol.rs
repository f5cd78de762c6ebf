//! scontrol: Slurm's administration command, for what users and their
//! job scripts ask of it: `show job|node|partition|hostnames|hostlist`,
//! `hold`, `uhold`, `release`, `requeue`, `requeuehold`, `update JobId=`,
//! `ping`, `version`. The grammar is Slurm 22.05's, checked against the
//! real one (`tests/slurm/scontrol.rs`): options anywhere (`-o`, `-d`,
//! `-Q`, `-V`), commands and entities in any case and abbreviated as far
//! as Slurm allows (`sho job=12`, `show jobs`, `rel 12`), and its words
//! when something is wrong. Host lists are worked out here, without the
//! daemon; the rest are qstat's, qhold's, qrls's, qrerun's, qalter's and
//! qmove's requests.

pub mod act;
pub mod job;
pub mod node;
pub mod partition;
pub mod show;
pub mod update;

use std::process::ExitCode;

use qmesh_proto::ServerStatusRequest;

use crate::client::{self, CliError};
use act::Verb;

/// The Slurm release whose scontrol this one follows (`scontrol -V`).
pub const SLURM_VERSION: &str = "22.05.8";

/// The options given before, between or after the words.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub one_liner: bool,
    pub details: bool,
    pub json: bool,
    pub quiet: bool,
    pub version: bool,
    pub help: bool,
}

/// Splits the options from the words, as Slurm's getopt does (options
/// anywhere; `--` ends them).
pub fn split_args(args: &[String]) -> Result<(Options, Vec<String>), String> {
    let mut opts = Options::default();
    let mut words = Vec::new();
    let mut rest = false;
    for arg in args {
        if rest || !arg.starts_with('-') || arg == "-" {
            words.push(arg.clone());
            continue;
        }
        match arg.as_str() {
            "--" => rest = true,
            "--oneliner" => opts.one_liner = true,
            "--details" => opts.details = true,
            "--json" => opts.json = true,
            "--quiet" => opts.quiet = true,
            "--version" => opts.version = true,
            "--help" | "--usage" => opts.help = true,
            "--all" | "--local" | "--federation" | "--sibling" | "--hide" | "--future"
            | "--verbose" => {}
            long if long.starts_with("--") => {
                return Err(format!(
                    "unrecognized option '{long}'\nTry \"scontrol --help\" for more information"
                ));
            }
            short => {
                for c in short[1..].chars() {
                    match c {
                        'o' => opts.one_liner = true,
                        'd' => opts.details = true,
                        'Q' => opts.quiet = true,
                        'V' => opts.version = true,
                        'h' => opts.help = true,
                        'a' | 'v' | 'F' => {}
                        other => {
                            return Err(format!(
                                "invalid option -- '{other}'\nTry \"scontrol --help\" for more \
                                 information"
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok((opts, words))
}

/// Whether `word` names `full`, abbreviated to at least `min` letters, in
/// any case (Slurm's `xstrncasecmp(word, full, MAX(len, min))`).
pub fn names(word: &str, full: &str, min: usize) -> bool {
    let w = word.to_ascii_lowercase();
    w.len() >= min && full.starts_with(&w)
}

const USAGE: &str = "scontrol [-o] [-d] [-Q] [--json] COMMAND
  show job [ID]               a job as Slurm shows it (-o: on one line)
  show node [NAME]            nodes
  show partition [NAME]       partitions (qmesh's queues)
  show hostnames [LIST]       a host list, one name a line (default $SLURM_NODELIST)
  show hostlist LIST          names as a compressed host list
  show hostlistsorted LIST    the same, sorted
  hold ID... | uhold ID...    keep jobs from starting (a user hold)
  release ID...               let held jobs start
  requeue ID...               a running job back to the queue (qrerun)
  requeuehold ID...           requeue it, held
  update JobId=ID KEY=VALUE   TimeLimit, Partition, JobName, Nice, Priority, NumNodes,
                              NumCPUs, NumTasks, StartTime, Account, QOS
  ping                        whether qmeshd answers
  version                     the Slurm release this scontrol follows
";

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let (opts, words) = match split_args(&args) {
        Ok(split) => split,
        Err(e) => {
            eprintln!("scontrol: {e}");
            return ExitCode::from(1);
        }
    };
    if opts.help {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if opts.version {
        println!("slurm {SLURM_VERSION}");
        return ExitCode::SUCCESS;
    }
    match dispatch(&opts, &words) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            let text = err.to_string();
            // Slurm's own multi-line refusals stand alone; the rest are
            // errors of scontrol's.
            if text.starts_with("Update of this parameter") || text.starts_with("No valid entity") {
                eprintln!("{text}");
            } else if text.ends_with(" not found")
                && (text.starts_with("Node ") || text.starts_with("Partition "))
            {
                // Slurm prints these on standard output (and exits 1).
                println!("{text}");
            } else {
                eprintln!("scontrol: error: {text}");
            }
            ExitCode::from(1)
        }
    }
}

/// What the words ask; whether all went well (failures already said).
fn dispatch(opts: &Options, words: &[String]) -> Result<bool, CliError> {
    let Some(command) = words.first() else {
        eprintln!(
            "scontrol: error: no command: qmesh's scontrol has no interactive mode; write \
             scontrol COMMAND (scontrol --help lists them)"
        );
        return Ok(false);
    };
    let args = &words[1..];
    let c = command.as_str();
    let needs_args = |keyword: &str| {
        if args.is_empty() {
            eprintln!("too few arguments for keyword:{keyword}");
            false
        } else {
            true
        }
    };
    let verb = |verb: Verb, keyword: &str| -> Result<bool, CliError> {
        if !needs_args(keyword) {
            return Ok(false);
        }
        act::run(verb, &act::job_list(args))
    };
    if names(c, "show", 3) {
        if args.is_empty() {
            eprintln!("too few arguments for keyword:{command}");
            return Ok(false);
        }
        show::show(opts, args)
    } else if names(c, "hold", 4) {
        verb(Verb::Hold, command)
    } else if names(c, "holdu", 5) || names(c, "uhold", 5) {
        verb(Verb::UserHold, command)
    } else if names(c, "release", 3) {
        verb(Verb::Release, command)
    } else if names(c, "requeuehold", 11) {
        verb(Verb::RequeueHold, command)
    } else if names(c, "requeue", 3) {
        verb(Verb::Requeue, command)
    } else if names(c, "update", 1) {
        if args.is_empty() {
            eprintln!("too few arguments for update keyword");
            return Ok(false);
        }
        act::update(args)
    } else if names(c, "ping", 3) {
        Ok(ping())
    } else if names(c, "version", 4) {
        println!("slurm {SLURM_VERSION}");
        Ok(true)
    } else if names(c, "help", 1) {
        print!("{USAGE}");
        Ok(true)
    } else if let Some(instead) = elsewhere(c) {
        Err(CliError::msg(format!(
            "{command} is not provided by qmesh's scontrol; {instead}"
        )))
    } else {
        eprintln!("invalid keyword: {command}");
        Ok(false)
    }
}

/// Slurm commands qmesh does another way.
fn elsewhere(command: &str) -> Option<&'static str> {
    let c = command.to_ascii_lowercase();
    Some(match c.as_str() {
        "suspend" => "suspend a job with qsig -s suspend ID",
        "resume" => "resume a job with qsig -s resume ID",
        "top" => "reorder your jobs with qorder ID1 ID2",
        "notify" => "write to a job's output with qmsg",
        "create" | "delete" | "reconfigure" | "shutdown" | "setdebug" | "takeover" => {
            "administer the server with qmgr"
        }
        "listpids" | "pidinfo" | "wait_job" | "write" | "token" | "reboot" => {
            "qmesh has no such command"
        }
        _ => return None,
    })
}

/// `ping`: `Slurmctld(primary) at HOST is UP`, or DOWN with Slurm's
/// banner (and why) when the daemon does not answer.
fn ping() -> bool {
    let reply = client::block_on(async {
        let mut admin = client::jobs().await?;
        Ok(admin
            .server_status(ServerStatusRequest {})
            .await?
            .into_inner())
    });
    match reply {
        Ok(status) => {
            let host = if status.server_host.is_empty() {
                client::hostname()
            } else {
                status.server_host
            };
            println!("Slurmctld(primary) at {host} is UP");
            true
        }
        Err(err) => {
            println!("Slurmctld(primary) at {} is DOWN", client::hostname());
            println!("*****************************************");
            println!("** RESTORE SLURMCTLD DAEMON TO SERVICE **");
            println!("*****************************************");
            eprintln!("scontrol: error: {err}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options_anywhere_and_abbreviations_as_slurm_takes_them() {
        let (o, w) = split_args(&words("-o show job 12 -d")).unwrap();
        assert!(o.one_liner && o.details);
        assert_eq!(w, ["show", "job", "12"]);
        let (o, _) = split_args(&words("--oneliner --json show job")).unwrap();
        assert!(o.one_liner && o.json);
        assert!(split_args(&words("--bogus show")).is_err());
        assert!(split_args(&words("-z")).is_err());
        // What the real scontrol 22.05 took and refused.
        assert!(names("sho", "show", 3) && !names("sh", "show", 3));
        assert!(names("SHOW", "show", 3));
        assert!(names("j", "jobs", 1) && names("jobs", "jobs", 1));
        assert!(names("hostn", "hostnames", 5) && !names("host", "hostnames", 5));
        assert!(names("rel", "release", 3) && !names("re", "release", 3));
        assert!(!names("requeueh", "requeuehold", 11) && !names("requeueh", "requeue", 3));
        assert!(names("u", "update", 1) && names("pin", "ping", 3));
        assert!(!names("hol", "hold", 4));
    }
}
