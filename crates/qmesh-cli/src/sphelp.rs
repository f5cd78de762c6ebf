//! sphelp: the ANL scheduler's user commands and what each does, as its
//! users knew them (D. Lifka, "The ANL/IBM SP Scheduling System", 1995).
//! `spsubmit` is not a command of its own: qsub submits.

use std::process::ExitCode;

use clap::Parser;

use crate::client::{self, CliError};
use crate::output::{self, Output, Tree};

/// List the sp commands and what each does.
#[derive(Parser, Debug)]
#[command(name = "sphelp", version)]
pub struct Args {
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Each command and what it does, in the paper's order.
pub const COMMANDS: [(&str, &str); 12] = [
    ("sphelp", "list these commands and what each does"),
    (
        "spfree",
        "free nodes now, per node set, and until when they stay free",
    ),
    (
        "sppause",
        "pause a job waiting in the queue so that it will not be started",
    ),
    ("spunpause", "unpause a job paused with sppause"),
    (
        "spq",
        "running jobs, then the queue in the scheduler's order, with status and expected start",
    ),
    (
        "sprelease",
        "end your running job and release its nodes back to the free pool now",
    ),
    ("spsubmit", "submit a job: use qsub (see qsub -h)"),
    (
        "spusage",
        "allocation, used and remaining node-hours of your accounts",
    ),
    (
        "spwait",
        "block until a job has ended; exits with its exit status",
    ),
    (
        "spwhat",
        "the largest jobs that would start if submitted now (nodes x minutes)",
    ),
    (
        "spwhen",
        "when a job will start given the current queue, and why not now",
    ),
    (
        "getjid",
        "the job holding a node (default: this host's nodes)",
    ),
];

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    match output::emit(&Help, args.json) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => client::fail(
            "sphelp",
            &CliError::msg(format!("cannot write the list: {e}")),
        ),
    }
}

struct Help;

impl Output for Help {
    fn text(&self) -> String {
        let width = COMMANDS.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
        let mut out = String::from("The sp commands (each has -h; listings also --json):\n");
        for (cmd, what) in COMMANDS {
            out.push_str(&format!("  {cmd:<width$}  {what}\n"));
        }
        out.push_str(
            "\nWall times are what the scheduler plans with: ask for the time your job\n\
             needs (qsub -l walltime=MM:00) and the estimates of spq and spwhen hold.\n",
        );
        out
    }

    fn json(&self) -> Tree {
        Tree::List(
            COMMANDS
                .iter()
                .map(|(cmd, what)| {
                    Tree::Map(vec![
                        ("command".into(), Tree::text(*cmd)),
                        ("description".into(), Tree::text(*what)),
                    ])
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_of_the_paper_is_listed_once() {
        let names: Vec<&str> = COMMANDS.iter().map(|(c, _)| *c).collect();
        for cmd in [
            "sphelp",
            "spfree",
            "sppause",
            "spunpause",
            "spq",
            "sprelease",
            "spsubmit",
            "spusage",
            "spwait",
            "spwhat",
            "spwhen",
            "getjid",
        ] {
            assert_eq!(names.iter().filter(|n| **n == cmd).count(), 1, "{cmd}");
        }
        let text = Help.text();
        assert!(
            text.contains("  spsubmit   submit a job: use qsub"),
            "{text}"
        );
    }
}
