//! qmgr: the administrator's front end (PBS's command language).
//!
//! The daemon parses and applies; qmgr only carries text. A script (from
//! `-c`, a file or standard input) goes as ONE request, so it applies all
//! or nothing; interactively, each command is its own request, an error is
//! printed and the prompt comes back. The reply's output (from `list`,
//! `print`, `help`) is printed as it is.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::QmgrRequest;
use qmesh_proto::admin_client::AdminClient;
use tonic::transport::Channel;

use crate::client::{self, CliError};

const PROMPT: &str = "Qmgr: ";
/// After a line ending in `\`, as PBS's qmgr shows it.
const CONTINUE_PROMPT: &str = "Qmgr< ";

/// Manage the server's configuration: queues, node sets, limits, managers.
///
/// Commands are PBS qmgr's: create, delete, set, unset, list, print, help,
/// quit (c d s u l p h q), e.g. `qmgr -c "list queue batch"`. A script
/// from FILE or standard input is applied as a whole or not at all. With
/// no command, file or piped input, qmgr prompts for commands one by one.
#[derive(Parser, Debug)]
#[command(name = "qmgr", version)]
pub struct Args {
    /// Run this one command.
    #[arg(short = 'c', value_name = "COMMAND", conflicts_with = "file")]
    pub command: Option<String>,
    /// Check only: syntax and references, change nothing.
    #[arg(short = 'n')]
    pub check_only: bool,
    /// Echo each command before it is sent.
    #[arg(short = 'e')]
    pub echo: bool,
    /// Abort on the first error (PBS compatibility): a script already stops at
    /// its first error and then changes nothing; interactive use carries on.
    #[arg(short = 'a')]
    pub abort: bool,
    /// Write no errors to standard error (PBS's -z); the exit status still
    /// says whether the commands succeeded.
    #[arg(short = 'z')]
    pub quiet: bool,
    /// A file of commands, applied all or nothing.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let result = match (&args.command, &args.file) {
        (Some(command), _) => run_script(&args, command.clone(), "-c".to_string()),
        (None, Some(path)) => {
            read_file(path).and_then(|script| run_script(&args, script, path.display().to_string()))
        }
        (None, None) if !std::io::stdin().is_terminal() => {
            read_stdin().and_then(|script| run_script(&args, script, "stdin".to_string()))
        }
        (None, None) => interactive(&args),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(_) if args.quiet => ExitCode::FAILURE,
        Err(err) => client::fail("qmgr", &err),
    }
}

fn read_file(path: &std::path::Path) -> Result<String, CliError> {
    let bytes = client::read_named_file(path, "qmgr file")?;
    String::from_utf8(bytes).map_err(|_| {
        CliError::msg(format!(
            "qmgr file \"{}\" is not UTF-8 text",
            path.display()
        ))
    })
}

fn read_stdin() -> Result<String, CliError> {
    let mut script = String::new();
    std::io::stdin()
        .read_to_string(&mut script)
        .map_err(|e| CliError::msg(format!("cannot read commands from standard input: {e}")))?;
    Ok(script)
}

/// Sends a whole script as one request. A script that is one `export
/// hook NAME TYPE ENCODING FILE` writes the hook's content to FILE.
fn run_script(args: &Args, script: String, source: String) -> Result<bool, CliError> {
    let (script, export_to) = export_file(&script);
    let script = expand_imports(&script)?;
    if args.echo {
        write_stdout(&echo_lines(&script))?;
    }
    let request = QmgrRequest {
        script,
        source,
        check_only: args.check_only,
    };
    let output = client::block_on(async {
        let mut admin = client::admin().await?;
        Ok(admin.qmgr(request).await?.into_inner().output)
    })?;
    if let Some(path) = export_to {
        return std::fs::write(&path, output.as_bytes())
            .map(|()| true)
            .map_err(|e| CliError::msg(format!("cannot write the hook to {path}: {e}")));
    }
    write_stdout(&with_newline(output))?;
    Ok(true)
}

/// `export hook NAME TYPE ENCODING FILE` alone: the command without its
/// file, and the file. Anything else is left as it is.
fn export_file(script: &str) -> (String, Option<String>) {
    let commands: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if let [line] = commands[..] {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let [verb, object, name, content_type, encoding, file] = words[..]
            && verb.eq_ignore_ascii_case("export")
            && object.eq_ignore_ascii_case("hook")
            && file != "-"
        {
            return (
                format!("export hook {name} {content_type} {encoding}"),
                Some(file.trim_matches('"').to_string()),
            );
        }
    }
    (script.to_string(), None)
}

/// Replaces each `import holidays FILE` line (PBS's holidays file, read
/// here, where the file is) by a comment, and appends the calendar
/// commands it stands for at the end of the script: the other lines keep
/// their numbers for the daemon's messages, and the whole still applies
/// all or nothing. Each `import hook NAME TYPE ENCODING FILE` carries the
/// file's content instead of its name, as base64 on the same line.
fn expand_imports(script: &str) -> Result<String, CliError> {
    let mut lines = Vec::new();
    let mut imported = String::new();
    for line in script.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[..] {
            [import, hook, name, content_type, encoding, ref path @ ..]
                if import.eq_ignore_ascii_case("import")
                    && hook.eq_ignore_ascii_case("hook")
                    && !path.is_empty()
                    && path != ["-"] =>
            {
                let path = path.join(" ");
                let path = path.trim_matches('"');
                let bytes = std::fs::read(path).map_err(|e| {
                    CliError::msg(format!(
                        "cannot read hook file {path}: {e}; nothing was changed"
                    ))
                })?;
                let data = if encoding.eq_ignore_ascii_case("base64") {
                    String::from_utf8_lossy(&bytes)
                        .chars()
                        .filter(|c| !c.is_whitespace())
                        .collect()
                } else {
                    use base64::Engine;
                    base64::engine::general_purpose::STANDARD.encode(&bytes)
                };
                lines.push(format!(
                    "import hook {name} {content_type} base64 \"{data}\""
                ));
            }
            [import, what, ref path @ ..]
                if import.eq_ignore_ascii_case("import") && !path.is_empty() =>
            {
                if !what.eq_ignore_ascii_case("holidays") {
                    return Err(CliError::msg(format!(
                        "import {what}: only \"import holidays FILE\" (a PBS holidays file) \
                         is known; nothing was changed"
                    )));
                }
                let path = path.join(" ");
                let path = path.trim_matches('"');
                let text = std::fs::read_to_string(path).map_err(|e| {
                    CliError::msg(format!(
                        "cannot read holidays file {path}: {e}; nothing was changed"
                    ))
                })?;
                let commands = qmesh_core::qmgr::import_holidays_commands(&text).map_err(|e| {
                    CliError::msg(format!("holidays file {path}: {e}; nothing was changed"))
                })?;
                imported.push_str(&commands);
                lines.push(format!("# {}", line.trim()));
            }
            _ => lines.push(line.to_string()),
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out.push_str(&imported);
    Ok(out)
}

/// The commands of a script as `-e` echoes them: blank lines and comments left out.
fn echo_lines(script: &str) -> String {
    script
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn with_newline(mut text: String) -> String {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn write_stdout(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| CliError::msg(format!("cannot write output: {e}")))
}

/// The `Qmgr:` prompt: each command its own request; errors are printed and
/// the prompt returns. Ends at quit, exit, q or end of input; exits 1 if any
/// command failed.
fn interactive(args: &Args) -> Result<bool, CliError> {
    let runtime = client::runtime()?;
    let mut admin = runtime.block_on(client::admin())?;
    let mut input = std::io::stdin().lock();
    let mut all_ok = true;
    let mut active = ActiveObjects::default();
    while let Some(command) = read_command(&mut input, &mut std::io::stdout())? {
        if command.trim().is_empty() {
            continue;
        }
        if is_quit(&command) {
            break;
        }
        if args.echo {
            write_stdout(&format!("{command}\n"))?;
        }
        let sent = active.before(&expand_imports(&command)?);
        match runtime.block_on(send(&mut admin, &sent, args.check_only)) {
            Ok(output) => {
                active.remember(&command);
                write_stdout(&with_newline(output))?
            }
            Err(err) => {
                all_ok = false;
                if !args.quiet {
                    eprintln!("qmgr: {err}");
                }
            }
        }
    }
    Ok(all_ok)
}

/// The `active` commands of an interactive session (PBS: objects stay
/// active until qmgr exits). Each command goes as its own request, so the
/// active ones are sent before it, on the same line.
#[derive(Default)]
struct ActiveObjects(std::collections::BTreeMap<String, String>);

impl ActiveObjects {
    /// `active queue a,b` (with names) replaces the active queues.
    fn remember(&mut self, command: &str) {
        let words: Vec<&str> = command.split_whitespace().collect();
        if let [verb, object, _, ..] = words[..]
            && matches!(verb.to_ascii_lowercase().as_str(), "a" | "active")
        {
            self.0
                .insert(object.to_ascii_lowercase(), command.trim().to_string());
        }
    }

    /// The command as sent: the active commands first.
    fn before(&self, command: &str) -> String {
        let mut line: Vec<&str> = self.0.values().map(String::as_str).collect();
        line.push(command);
        line.join("; ")
    }
}

async fn send(
    admin: &mut AdminClient<Channel>,
    command: &str,
    check_only: bool,
) -> Result<String, CliError> {
    let request = QmgrRequest {
        script: command.to_string(),
        source: "stdin".to_string(),
        check_only,
    };
    Ok(admin.qmgr(request).await?.into_inner().output)
}

/// Prompts for and reads one command, following `\` continuations (kept
/// in the text: the daemon joins them as it does in scripts). `None` at
/// the end of input.
fn read_command(
    input: &mut impl BufRead,
    prompts: &mut impl Write,
) -> Result<Option<String>, CliError> {
    let mut command = String::new();
    let mut prompt = PROMPT;
    let mut show = |text: &str| {
        prompts
            .write_all(text.as_bytes())
            .and_then(|()| prompts.flush())
            .map_err(|e| CliError::msg(format!("cannot write output: {e}")))
    };
    loop {
        show(prompt)?;
        let mut line = String::new();
        let read = input
            .read_line(&mut line)
            .map_err(|e| CliError::msg(format!("cannot read a command: {e}")))?;
        if read == 0 {
            show("\n")?;
            return Ok(if command.is_empty() {
                None
            } else {
                Some(command)
            });
        }
        let line = line.trim_end_matches(['\n', '\r']);
        command.push_str(line);
        if !line.ends_with('\\') {
            return Ok(Some(command));
        }
        command.push('\n');
        prompt = CONTINUE_PROMPT;
    }
}

fn is_quit(command: &str) -> bool {
    matches!(
        command.trim().to_ascii_lowercase().as_str(),
        "q" | "quit" | "exit"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continued_lines_stay_one_command() {
        let mut input = std::io::Cursor::new("set queue batch \\\n  priority = 5\nlist queue\n");
        let mut prompts = Vec::new();
        let mut next = || read_command(&mut input, &mut prompts).unwrap();
        assert_eq!(
            next().as_deref(),
            Some("set queue batch \\\n  priority = 5")
        );
        assert_eq!(next().as_deref(), Some("list queue"));
        assert_eq!(next(), None);
        assert_eq!(
            String::from_utf8_lossy(&prompts),
            "Qmgr: Qmgr< Qmgr: Qmgr: \n"
        );
    }

    #[test]
    fn quit_words() {
        for word in ["q", "quit", " exit ", "QUIT"] {
            assert!(is_quit(word), "{word}");
        }
        assert!(!is_quit("quit queue"));
    }

    #[test]
    fn echo_skips_blanks_and_comments() {
        assert_eq!(
            echo_lines("# banner\n\ncreate queue q\n  set queue q enabled = true\n"),
            "create queue q\n  set queue q enabled = true\n"
        );
    }

    #[test]
    fn active_objects_go_before_each_command() {
        let mut active = ActiveObjects::default();
        assert_eq!(active.before("list queue"), "list queue");
        active.remember("active queue a,b");
        active.remember("list queue");
        assert_eq!(
            active.before("set queue enabled = true"),
            "active queue a,b; set queue enabled = true"
        );
        active.remember("a queue c");
        assert_eq!(active.before("list queue"), "a queue c; list queue");
    }

    #[test]
    fn command_and_file_conflict() {
        let err = Args::try_parse_from(["qmgr", "-c", "list server", "f.qmgr"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let args = Args::try_parse_from(["qmgr", "-a", "-e", "-n", "-z", "-c", "p s"]).unwrap();
        assert!(args.abort && args.echo && args.check_only && args.quiet);
    }
}
