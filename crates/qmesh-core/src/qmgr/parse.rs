//! The qmgr grammar (PBS's, with NQS's `set per_request`):
//!
//! ```text
//! command   := verb object [name {, name}] [attribute-list]
//! verb      := create | delete | set | unset | list | print | help | quit  (c d s u l p h q)
//! object    := server | queue                                              (s q)
//! attr-list := attr op value {, attr op value}       (set, create)
//!            | attr {, attr}                          (unset)
//! op        := = | += | -=
//! NQS:         set per_request ncpus = N QUEUE
//! EPCC:        reorder queue NAME {, NAME}      (group cascade; changes jobs)
//! shutdowns:   create|set|unset|delete|list shutdown NAME ...
//! resources:   create|set|unset|delete|list|print resource NAME ... (PBS Pro)
//! active:      active queue|node|... [NAME {, NAME}]
//! hooks:       create|set|unset|delete|list|print hook NAME ...,
//!              import|export hook NAME TYPE ENCODING ... (parse/hook.rs)
//! ```
//!
//! As in PBS, `;` ends a command like a new line does, and `active queue
//! a,b` makes later commands that name no queue act on a and b.

mod hook;

use super::lex::{Token, tokens};
use super::vocab::{
    Action, Assignment, Command, HookAction, MAX_COMMANDS, MAX_SCRIPT_BYTES, Op, QmgrError,
    ShutdownAction,
};

/// Parses a whole script. Blank lines and `#` comments are skipped; a line
/// ending in `\` continues on the next; `;` separates commands on a line.
/// A script past [`MAX_SCRIPT_BYTES`] or [`MAX_COMMANDS`] is refused.
pub fn parse_script(script: &str) -> Result<Vec<Command>, QmgrError> {
    if script.len() > MAX_SCRIPT_BYTES {
        return Err(QmgrError {
            line: 1,
            message: format!(
                "the script is {} bytes; a qmgr script may be at most {MAX_SCRIPT_BYTES} \
                 (split it and run the parts one after another)",
                script.len()
            ),
        });
    }
    let mut commands = Vec::new();
    let mut pending = String::new();
    let mut start_line = 0;
    let mut active = Active::default();
    let lines: Vec<&str> = script.lines().collect();
    let mut idx = 0;
    while idx < lines.len() {
        let raw = lines[idx];
        idx += 1;
        if pending.is_empty() {
            start_line = idx;
        }
        if pending.is_empty()
            && let Some((name, content_type, encoding)) = hook::stdin_import(raw)
        {
            // The content is on the lines that follow, to a blank line.
            let from = idx;
            while idx < lines.len() && !lines[idx].trim().is_empty() {
                idx += 1;
            }
            let content =
                hook::stdin_content(&lines[from..idx], &encoding).map_err(|message| QmgrError {
                    line: start_line,
                    message,
                })?;
            commands.push(Command {
                line: start_line,
                text: raw.trim().to_string(),
                action: Action::Hook(HookAction::Import {
                    name,
                    content_type,
                    content,
                }),
            });
            continue;
        }
        if let Some(body) = raw.strip_suffix('\\') {
            pending.push_str(body);
            pending.push(' ');
            continue;
        }
        pending.push_str(raw);
        let text = std::mem::take(&mut pending);
        for part in split_commands(&text) {
            let fail = |message| QmgrError {
                line: start_line,
                message,
            };
            if let Some(action) = parse_line(part, &mut active).map_err(fail)? {
                if commands.len() == MAX_COMMANDS {
                    return Err(fail(format!(
                        "more than {MAX_COMMANDS} commands in one script; split it and run \
                         the parts one after another"
                    )));
                }
                commands.push(Command {
                    line: start_line,
                    text: part.trim().to_string(),
                    action,
                });
            }
        }
    }
    if !pending.trim().is_empty() {
        return Err(QmgrError {
            line: start_line,
            message: "the script ends inside a continued line (trailing \\)".into(),
        });
    }
    Ok(commands)
}

/// A line's commands: split at `;` outside quotes and before a `#`.
fn split_commands(line: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut quote = None;
    let mut start = 0;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') => break,
            (None, ';') => {
                parts.push(&line[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&line[start..]);
    parts
}

/// The names `active` made current, per object (`queue`, `node`, ...).
#[derive(Default)]
struct Active(std::collections::BTreeMap<String, Vec<String>>);

/// The object an `active` or a command names, in one spelling.
fn object_kind(object: &str) -> &str {
    match object {
        "q" | "queue" | "queues" => "queue",
        "n" | "node" | "nodes" => "node",
        "a" | "account" | "accounts" => "account",
        "node_group" | "node_groups" | "ng" => "node_group",
        "node_set" | "node_sets" | "ns" => "node_set",
        "shutdown" | "shutdowns" => "shutdown",
        "r" | "resource" | "resources" => "resource",
        "hook" | "hooks" => "hook",
        "s" | "server" => "server",
        other => other,
    }
}

const VERBS: &str =
    "create, delete, set, unset, list, print, import, export, active, reorder, help, quit";

fn parse_line(line: &str, active: &mut Active) -> Result<Option<Action>, String> {
    let toks = tokens(line)?;
    let mut p = Parser {
        toks,
        pos: 0,
        active: active.0.clone(),
    };
    let Some(first) = p.next() else {
        return Ok(None);
    };
    let Token::Word(verb) = first else {
        return Err(format!(
            "a command starts with a verb ({VERBS}), not {}",
            first.show()
        ));
    };
    let verb = verb.to_ascii_lowercase();
    let action = match verb.as_str() {
        "c" | "create" | "d" | "delete" | "s" | "set" | "u" | "unset" | "l" | "list" | "p"
        | "print" => p.object_command(&verb)?,
        "h" | "help" | "?" => Action::Help(p.rest_word()),
        "a" | "active" => {
            let object = p.word("an object (queue, node, ...)")?.to_ascii_lowercase();
            let kind = object_kind(&object).to_string();
            let names = p.names()?;
            if !names.is_empty() {
                active.0.insert(kind.clone(), names.clone());
            }
            let shown = active.0.get(&kind).cloned().unwrap_or_default();
            Action::Active(kind, if names.is_empty() { shown } else { Vec::new() })
        }
        "reorder" => p.reorder_command()?,
        "import" | "export" => p.import_export(&verb)?,
        "q" | "quit" | "exit" => Action::Quit,
        other => return Err(format!("unknown command \"{other}\"; commands: {VERBS}")),
    };
    if let Some(extra) = p.next() {
        return Err(format!("unexpected {} after the command", extra.show()));
    }
    Ok(Some(action))
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// The active names per object, for commands that name none.
    active: std::collections::BTreeMap<String, Vec<String>>,
}

impl Parser {
    /// Names as written, or the active ones of `object` when none are.
    fn names_or_active(&mut self, object: &str) -> Result<Vec<String>, String> {
        let names = self.names()?;
        if names.is_empty()
            && let Some(active) = self.active.get(object)
        {
            return Ok(active.clone());
        }
        Ok(names)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn peek(&self, ahead: usize) -> Option<&Token> {
        self.toks.get(self.pos + ahead)
    }

    fn rest_word(&mut self) -> Option<String> {
        match self.peek(0) {
            Some(Token::Word(w)) => {
                let w = w.clone();
                self.pos += 1;
                Some(w)
            }
            _ => None,
        }
    }

    fn word(&mut self, what: &str) -> Result<String, String> {
        match self.next() {
            Some(Token::Word(w)) => Ok(w),
            Some(other) => Err(format!("expected {what}, found {}", other.show())),
            None => Err(format!("expected {what} at the end of the line")),
        }
    }

    fn object_command(&mut self, verb: &str) -> Result<Action, String> {
        let object = self
            .word("an object (server or queue)")?
            .to_ascii_lowercase();
        match object.as_str() {
            "q" | "queue" | "queues" => self.queue_command(verb),
            "s" | "server" => self.server_command(verb),
            "a" | "account" | "accounts" => self.account_command(verb),
            "shutdown" | "shutdowns" => self.shutdown_command(verb),
            "per_request" if matches!(verb, "s" | "set") => self.per_request(),
            "node_group" | "node_groups" | "ng" => self.node_group_command(verb),
            "calendar" | "cal" => {
                match verb {
                    "s" | "set" => {
                        let attrs = self.assignments()?;
                        if attrs.is_empty() {
                            return Err("name the attributes to set: set calendar time_zone = Europe/London".into());
                        }
                        Ok(Action::SetCalendar(attrs))
                    }
                    "u" | "unset" => Ok(Action::UnsetCalendar(self.attribute_names()?)),
                    "l" | "list" | "p" | "print" => Ok(Action::ListCalendar),
                    _ => Err("the calendar always exists: set, unset or list it".into()),
                }
            }
            "node_set" | "node_sets" | "ns" => self.node_set_command(verb),
            "n" | "node" | "nodes" => self.node_command(verb),
            "r" | "resource" | "resources" => self.resource_command(verb),
            "hook" | "hooks" => self.hook_command(verb),
            "sched" | "scheduler" => self.sched_command(verb),
            other => Err(format!(
                "unknown object \"{other}\"; objects: server, queue, resource, hook, account, \
                 node, node_group, node_set, calendar, shutdown (and set per_request)"
            )),
        }
    }

    /// Names before the attribute list: `q1[,q2...]`. A word directly
    /// followed by an operator starts the attribute list instead.
    fn names(&mut self) -> Result<Vec<String>, String> {
        let mut names = Vec::new();
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(Token::Word(_)), Some(Token::Assign | Token::Add | Token::Remove)) => break,
                (Some(Token::Word(w)), _) => {
                    names.push(w.clone());
                    self.pos += 1;
                    if self.peek(0) == Some(&Token::Comma) {
                        self.pos += 1;
                        continue;
                    }
                    break;
                }
                _ => break,
            }
        }
        Ok(names)
    }

    fn assignments(&mut self) -> Result<Vec<Assignment>, String> {
        let mut out = Vec::new();
        while self.peek(0).is_some() {
            if !out.is_empty() {
                match self.next() {
                    Some(Token::Comma) => {}
                    Some(other) => {
                        return Err(format!(
                            "expected \",\" between attributes, found {}",
                            other.show()
                        ));
                    }
                    None => break,
                }
            }
            let name = self.word("an attribute name")?;
            let op = match self.next() {
                Some(Token::Assign) => Op::Assign,
                Some(Token::Add) => Op::Add,
                Some(Token::Remove) => Op::Remove,
                Some(other) => {
                    return Err(format!(
                        "expected \"=\", \"+=\" or \"-=\" after \"{name}\", found {}",
                        other.show()
                    ));
                }
                None => return Err(format!("expected \"=\" and a value after \"{name}\"")),
            };
            let mut value = match self.next() {
                Some(Token::Word(v) | Token::Quoted(v)) => v,
                Some(other) => {
                    return Err(format!(
                        "expected a value for \"{name}\", found {}",
                        other.show()
                    ));
                }
                None => return Err(format!("expected a value for \"{name}\"")),
            };
            loop {
                match (self.peek(0), self.peek(1)) {
                    // More bracketed entries: max_run = [u:a=1],[u:b=2].
                    (Some(Token::Comma), Some(Token::Word(w))) if w.starts_with('[') => {
                        value.push(',');
                        value.push_str(w);
                        self.pos += 2;
                    }
                    // Words after the value, up to the next attribute: PBS's
                    // print server writes some values with spaces unquoted.
                    (Some(Token::Word(w)), next)
                        if !matches!(next, Some(Token::Assign | Token::Add | Token::Remove)) =>
                    {
                        value.push(' ');
                        value.push_str(w);
                        self.pos += 1;
                    }
                    _ => break,
                }
            }
            out.push(Assignment { name, op, value });
        }
        Ok(out)
    }

    fn attribute_names(&mut self) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        while self.peek(0).is_some() {
            if !out.is_empty() && self.next() != Some(Token::Comma) {
                return Err("separate the attributes to unset with \",\"".into());
            }
            out.push(self.word("an attribute name")?);
        }
        if out.is_empty() {
            return Err("name the attributes to unset".into());
        }
        Ok(out)
    }

    fn queue_command(&mut self, verb: &str) -> Result<Action, String> {
        let names = self.names_or_active("queue")?;
        let need_names = |names: &Vec<String>| {
            if names.is_empty() {
                Err("name the queue".to_string())
            } else {
                Ok(())
            }
        };
        Ok(match verb {
            "c" | "create" => {
                need_names(&names)?;
                Action::CreateQueue(names, self.assignments()?)
            }
            "d" | "delete" => {
                need_names(&names)?;
                Action::DeleteQueue(names)
            }
            "s" | "set" => {
                need_names(&names)?;
                let attrs = self.assignments()?;
                if attrs.is_empty() {
                    return Err("name the attributes to set: set queue NAME attr = value".into());
                }
                Action::SetQueue(names, attrs)
            }
            "u" | "unset" => {
                need_names(&names)?;
                Action::UnsetQueue(names, self.attribute_names()?)
            }
            "l" | "list" => Action::ListQueue(names),
            _ => Action::PrintQueue(names),
        })
    }

    fn account_command(&mut self, verb: &str) -> Result<Action, String> {
        let names = self.names()?;
        if names.is_empty() && !matches!(verb, "l" | "list") {
            return Err("name the account".into());
        }
        Ok(match verb {
            "c" | "create" => Action::CreateAccount(names, self.assignments()?),
            "d" | "delete" => Action::DeleteAccount(names),
            "s" | "set" => {
                let attrs = self.assignments()?;
                if attrs.is_empty() {
                    return Err("name the attributes to set: set account NAME attr = value".into());
                }
                Action::SetAccount(names, attrs)
            }
            "u" | "unset" => Action::UnsetAccount(names, self.attribute_names()?),
            "l" | "list" => Action::ListAccount(names),
            _ => {
                return Err(
                    "accounts are printed by print server; use list account to see one".into(),
                );
            }
        })
    }

    fn node_command(&mut self, verb: &str) -> Result<Action, String> {
        let names = self.names_or_active("node")?;
        if names.is_empty() && !matches!(verb, "l" | "list" | "p" | "print") {
            return Err("name the node: set node n7 state = offline".into());
        }
        Ok(match verb {
            "c" | "create" => Action::CreateNode(names, self.assignments()?),
            "d" | "delete" => Action::DeleteNode(names),
            "s" | "set" => {
                let attrs = self.assignments()?;
                if attrs.is_empty() {
                    return Err("name the attributes to set: set node NAME state = offline".into());
                }
                Action::SetNode(names, attrs)
            }
            "u" | "unset" => Action::UnsetNode(names, self.attribute_names()?),
            "l" | "list" | "p" | "print" => Action::ListNode(names),
            _ => {
                return Err(
                    "nodes belong to node sets: create node_set NAME nodes = \"n1,n2\", host = HOST \
                     (or the daemon's configuration file); set node NAME state = offline takes one out"
                        .into(),
                );
            }
        })
    }

    /// PBS Pro's `set sched [default] attr = value`, `list sched`.
    fn sched_command(&mut self, verb: &str) -> Result<Action, String> {
        let _ = self.names()?;
        match verb {
            "s" | "set" => {
                let attrs = self.assignments()?;
                if attrs.is_empty() {
                    return Err("name the attributes to set: set sched scheduling = True".into());
                }
                Ok(Action::SetSched(attrs))
            }
            "l" | "list" | "p" | "print" => Ok(Action::ListSched),
            _ => Err("qmesh has one scheduler, in qmeshd: set or list sched".into()),
        }
    }

    fn node_group_command(&mut self, verb: &str) -> Result<Action, String> {
        let names = self.names()?;
        if names.is_empty() && !matches!(verb, "l" | "list" | "p" | "print") {
            return Err("name the node group".into());
        }
        Ok(match verb {
            "c" | "create" => Action::CreateNodeGroup(names, self.assignments()?),
            "d" | "delete" => Action::DeleteNodeGroup(names),
            "s" | "set" => {
                let attrs = self.assignments()?;
                if attrs.is_empty() {
                    return Err(
                        "name the attributes to set: set node_group NAME sets = s1,s2".into(),
                    );
                }
                Action::SetNodeGroup(names, attrs)
            }
            "u" | "unset" => Action::UnsetNodeGroup(names, self.attribute_names()?),
            _ => Action::ListNodeGroup(names),
        })
    }

    fn node_set_command(&mut self, verb: &str) -> Result<Action, String> {
        let names = self.names()?;
        if names.is_empty() && !matches!(verb, "l" | "list" | "p" | "print") {
            return Err(
                "name the node set: create node_set NAME nodes = \"n1,n2\", host = HOST".into(),
            );
        }
        Ok(match verb {
            "c" | "create" => Action::CreateNodeSet(names, self.assignments()?),
            "d" | "delete" => Action::DeleteNodeSet(names),
            "s" | "set" => {
                let attrs = self.assignments()?;
                if attrs.is_empty() {
                    return Err("name the attributes to set: set node_set NAME mem = 32gb".into());
                }
                Action::SetNodeSet(names, attrs)
            }
            "u" | "unset" => Action::UnsetNodeSet(names, self.attribute_names()?),
            _ => Action::ListNodeSet(names),
        })
    }

    fn resource_command(&mut self, verb: &str) -> Result<Action, String> {
        let names = self.names()?;
        if names.is_empty() && !matches!(verb, "l" | "list" | "p" | "print") {
            return Err("name the resource: create resource NAME type = long, flag = nh".into());
        }
        Ok(match verb {
            "c" | "create" => Action::CreateResource(names, self.assignments()?),
            "d" | "delete" => Action::DeleteResource(names),
            "s" | "set" => {
                let attrs = self.assignments()?;
                if attrs.is_empty() {
                    return Err("name the attributes to set: set resource NAME type = long".into());
                }
                Action::SetResource(names, attrs)
            }
            "u" | "unset" => Action::UnsetResource(names, self.attribute_names()?),
            "l" | "list" => Action::ListResource(names),
            _ => Action::PrintResource(names),
        })
    }

    fn shutdown_command(&mut self, verb: &str) -> Result<Action, String> {
        let names = self.names()?;
        if names.is_empty() && !matches!(verb, "l" | "list") {
            return Err(
                "name the shutdown window: create shutdown NAME start = ..., end = ...".into(),
            );
        }
        Ok(Action::Shutdown(match verb {
            "c" | "create" => ShutdownAction::Create(names, self.assignments()?),
            "d" | "delete" => ShutdownAction::Delete(names),
            "s" | "set" => {
                let attrs = self.assignments()?;
                if attrs.is_empty() {
                    return Err("name the attributes to set: set shutdown NAME attr = value".into());
                }
                ShutdownAction::Set(names, attrs)
            }
            "u" | "unset" => ShutdownAction::Unset(names, self.attribute_names()?),
            "l" | "list" => ShutdownAction::List(names),
            _ => {
                return Err(
                    "shutdown windows are printed by print server; use list shutdown to see one"
                        .into(),
                );
            }
        }))
    }

    fn server_command(&mut self, verb: &str) -> Result<Action, String> {
        // An optional server name, as PBS allows: `set server srv attr = v`,
        // `unset server srv attr`, `list server srv`.
        match verb {
            "u" | "unset" => {
                if matches!(
                    (self.peek(0), self.peek(1)),
                    (Some(Token::Word(_)), Some(Token::Word(_)))
                ) {
                    self.pos += 1;
                }
            }
            _ => {
                let _ = self.names()?;
            }
        }
        Ok(match verb {
            "s" | "set" => {
                let attrs = self.assignments()?;
                if attrs.is_empty() {
                    return Err("name the attributes to set: set server attr = value".into());
                }
                Action::SetServer(attrs)
            }
            "u" | "unset" => Action::UnsetServer(self.attribute_names()?),
            "l" | "list" => Action::ListServer,
            "p" | "print" => Action::PrintServer,
            _ => return Err("servers are not created or deleted; use set server".into()),
        })
    }

    /// `reorder queue NAME[,NAME...]`.
    fn reorder_command(&mut self) -> Result<Action, String> {
        let object = self.word("queue")?.to_ascii_lowercase();
        if !matches!(object.as_str(), "q" | "queue") {
            return Err(format!(
                "only queues are reordered, not \"{object}\": reorder queue NAME"
            ));
        }
        let names = self.names()?;
        if names.is_empty() {
            return Err("name the queue: reorder queue NAME".into());
        }
        Ok(Action::ReorderQueue(names))
    }

    /// NQS: `set per_request ncpus = N QUEUE` sets the queue's default nodes.
    fn per_request(&mut self) -> Result<Action, String> {
        let resource = self.word("a resource (ncpus)")?;
        if resource != "ncpus" && resource != "nodes" {
            return Err(format!(
                "per_request sets ncpus (the default node count), not \"{resource}\""
            ));
        }
        if self.next() != Some(Token::Assign) {
            return Err(format!("expected \"=\" after \"{resource}\""));
        }
        let value = self.word("a node count")?;
        let queue = self.word("the queue name (set per_request ncpus = N QUEUE)")?;
        Ok(Action::SetQueue(
            vec![queue],
            vec![Assignment {
                name: "resources_default.nodes".into(),
                op: Op::Assign,
                value,
            }],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Action {
        let cmds = parse_script(line).unwrap();
        assert_eq!(cmds.len(), 1);
        cmds.into_iter().next().unwrap().action
    }

    fn a(name: &str, op: Op, value: &str) -> Assignment {
        Assignment {
            name: name.into(),
            op,
            value: value.into(),
        }
    }

    #[test]
    fn a_script_past_its_limits_is_refused() {
        let many = "l s\n".repeat(MAX_COMMANDS);
        assert_eq!(parse_script(&many).unwrap().len(), MAX_COMMANDS);
        let e = parse_script(&format!("{many}l s\n")).unwrap_err();
        assert_eq!(e.line, MAX_COMMANDS + 1);
        assert!(e.message.contains("more than 100000 commands"), "{e}");
        let long = "#".repeat(MAX_SCRIPT_BYTES + 1);
        let e = parse_script(&long).unwrap_err();
        assert!(e.message.contains("at most 1048576"), "{e}");
    }

    #[test]
    fn pbs_forms_and_abbreviations() {
        assert_eq!(
            one("create queue fast priority=10,queue_type=e"),
            Action::CreateQueue(
                vec!["fast".into()],
                vec![
                    a("priority", Op::Assign, "10"),
                    a("queue_type", Op::Assign, "e")
                ]
            )
        );
        assert_eq!(
            one("s q batch resources_max.walltime = 02:00:00"),
            Action::SetQueue(
                vec!["batch".into()],
                vec![a("resources_max.walltime", Op::Assign, "02:00:00")]
            )
        );
        assert_eq!(
            one("set server managers += bob@*"),
            Action::SetServer(vec![a("managers", Op::Add, "bob@*")])
        );
        assert_eq!(
            one("unset queue batch max_nodes, priority"),
            Action::UnsetQueue(
                vec!["batch".into()],
                vec!["max_nodes".into(), "priority".into()]
            )
        );
        assert_eq!(one("l q"), Action::ListQueue(vec![]));
        assert_eq!(
            one("unset server default_queue"),
            Action::UnsetServer(vec!["default_queue".into()])
        );
        assert_eq!(
            one("unset server srv default_queue, managers"),
            Action::UnsetServer(vec!["default_queue".into(), "managers".into()])
        );
        assert_eq!(one("list server srv"), Action::ListServer);
        assert_eq!(one("p s"), Action::PrintServer);
        assert_eq!(
            one("d q a,b"),
            Action::DeleteQueue(vec!["a".into(), "b".into()])
        );
    }

    #[test]
    fn nqs_per_request() {
        assert_eq!(
            one("set per_request ncpus = 64 q64l"),
            Action::SetQueue(
                vec!["q64l".into()],
                vec![a("resources_default.nodes", Op::Assign, "64")]
            )
        );
    }

    #[test]
    fn reorder_names_queues() {
        assert_eq!(
            one("reorder queue q64,q256"),
            Action::ReorderQueue(vec!["q64".into(), "q256".into()])
        );
        assert_eq!(
            one("reorder q batch"),
            Action::ReorderQueue(vec!["batch".into()])
        );
        let err = parse_script("reorder server").unwrap_err();
        assert!(err.message.contains("only queues are reordered"), "{err}");
        let err = parse_script("reorder queue").unwrap_err();
        assert!(err.message.contains("name the queue"), "{err}");
    }

    #[test]
    fn comments_blank_lines_and_continuations() {
        let cmds = parse_script(
            "# header\n\ncreate queue a\nset queue a \\\n  priority = 3\nlist queue a # show\n",
        )
        .unwrap();
        let lines: Vec<usize> = cmds.iter().map(|c| c.line).collect();
        assert_eq!(lines, vec![3, 4, 6]);
    }

    #[test]
    fn semicolons_active_objects_and_unquoted_values() {
        let cmds = parse_script(
            "active queue a,b; set queue enabled = true # both\n\
             set queue c max_run = [u:PBS_GENERIC=2],[u:x=3]; list queue\n\
             set server license_count = Avail_Global:10 Used:0, comment = \"a;b\"",
        )
        .unwrap();
        let actions: Vec<&Action> = cmds.iter().map(|c| &c.action).collect();
        assert_eq!(
            actions,
            vec![
                &Action::Active("queue".into(), vec![]),
                &Action::SetQueue(
                    vec!["a".into(), "b".into()],
                    vec![a("enabled", Op::Assign, "true")]
                ),
                &Action::SetQueue(
                    vec!["c".into()],
                    vec![a("max_run", Op::Assign, "[u:PBS_GENERIC=2],[u:x=3]")]
                ),
                &Action::ListQueue(vec!["a".into(), "b".into()]),
                &Action::SetServer(vec![
                    a("license_count", Op::Assign, "Avail_Global:10 Used:0"),
                    a("comment", Op::Assign, "a;b")
                ]),
            ]
        );
        assert_eq!(cmds[3].line, 2, "commands after ; keep their line");
        assert_eq!(
            one("active queue"),
            Action::Active("queue".into(), vec![]),
            "nothing active yet"
        );
        let cmds = parse_script("a q x\nactive queue").unwrap();
        assert_eq!(
            cmds[1].action,
            Action::Active("queue".into(), vec!["x".into()])
        );
        assert_eq!(
            one("create resource nmics type = long, flag = nh"),
            Action::CreateResource(
                vec!["nmics".into()],
                vec![a("type", Op::Assign, "long"), a("flag", Op::Assign, "nh")]
            )
        );
        assert_eq!(one("l r"), Action::ListResource(vec![]));
        let err = parse_script("set queue a enabled = true started = true").unwrap_err();
        assert!(err.message.contains("expected \",\""), "{err}");
    }

    #[test]
    fn errors_name_the_line_and_the_word() {
        let err = parse_script("create queue a\ncrate queue b").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("\"crate\""), "{err}");
        let err = parse_script("set queue a priority 5").unwrap_err();
        assert!(err.to_string().starts_with("line 1: "), "{err}");
        let err = parse_script("set queue a priority = ").unwrap_err();
        assert!(err.message.contains("value for \"priority\""), "{err}");
        let err = parse_script("set frob x = 1").unwrap_err();
        assert!(err.message.contains("\"frob\""), "{err}");
    }
}
