//! qmgr's nodes: an administrator takes a node out of service and puts
//! it back, with a reason. `set node n7 state = offline, comment = "fan"`
//! (NCAR: repair one machine without bringing the cluster down), `set
//! node n7 state = draining` (no new job; the running ones finish), `set
//! node n7 state = free` or `unset node n7 state` (back in service),
//! `list node [NAMES]`. The marks are kept with the configuration, so a
//! restart keeps a node out. Operators may do this, as with PBS's
//! pbsnodes -o.

use std::collections::BTreeSet;

use super::values::quoted;
use super::vocab::{Action, Assignment, Op, Outcome};
use crate::node::{AdminState, NodeMark};
use crate::server::Config;
use crate::state::State;

/// Every node name of the working configuration: the file's sets, then
/// qmgr's.
fn known_nodes<'a>(config: &'a Config, state: &'a State) -> BTreeSet<&'a str> {
    state
        .file_sets()
        .iter()
        .chain(config.node_sets.values())
        .flat_map(|set| set.nodes.iter().map(|n| n.name.as_str()))
        .collect()
}

fn check_node(known: &BTreeSet<&str>, name: &str) -> Result<(), String> {
    if known.contains(name) {
        Ok(())
    } else {
        Err(format!(
            "node \"{name}\" does not exist; see pbsnodes -a or qmgr -c \"list node_set\""
        ))
    }
}

/// `offline`, `draining`, or back in service (`free`, `online`, `up`).
fn parse_state(value: &str) -> Result<Option<AdminState>, String> {
    match value.to_ascii_lowercase().as_str() {
        "offline" => Ok(Some(AdminState::Offline)),
        "draining" | "drain" => Ok(Some(AdminState::Draining)),
        "free" | "online" | "up" | "resume" => Ok(None),
        other => Err(format!(
            "a node's state is offline, draining or free (back in service), not \"{other}\" \
             (up and down are the agent's to say)"
        )),
    }
}

/// Applies one node's assignments to its mark (none: in service).
fn set(
    mark: Option<NodeMark>,
    node: &str,
    assigns: &[Assignment],
) -> Result<Option<NodeMark>, String> {
    let mut state = mark.as_ref().map(|m| m.state);
    let mut comment = mark.map(|m| m.comment).unwrap_or_default();
    for a in assigns {
        if a.op != Op::Assign {
            return Err(format!(
                "node attributes take \"=\", not \"+=\" or \"-=\" (\"{}\")",
                a.name
            ));
        }
        match a.name.as_str() {
            "state" => state = parse_state(&a.value)?,
            "comment" | "note" if a.value.contains(['"', '\n']) => {
                return Err("a node's comment may not hold a double quote or a newline".into());
            }
            "comment" | "note" => comment = a.value.clone(),
            other => {
                return Err(format!(
                    "nodes have the attributes state and comment, not \"{other}\"; \
                     memory, CPUs and features belong to the node set"
                ));
            }
        }
    }
    match state {
        Some(state) => Ok(Some(NodeMark { state, comment })),
        None if assigns
            .iter()
            .any(|a| a.name == "comment" || a.name == "note") =>
        {
            Err(format!(
                "node \"{node}\" is in service; a comment goes with state = offline or draining"
            ))
        }
        None => Ok(None),
    }
}

/// Applies a node command; `Ok(false)` if `action` is not one.
pub fn apply(
    action: &Action,
    config: &mut Config,
    state: &State,
    outcome: &mut Outcome,
) -> Result<bool, String> {
    match action {
        Action::SetNode(names, assigns) => {
            let known = known_nodes(config, state);
            for name in names {
                check_node(&known, name)?;
            }
            for name in names {
                let mark = set(config.node_marks.get(name).cloned(), name, assigns)?;
                match mark {
                    Some(mark) => config.node_marks.insert(name.clone(), mark),
                    None => config.node_marks.remove(name),
                };
            }
        }
        Action::UnsetNode(names, attrs) => {
            let known = known_nodes(config, state);
            for name in names {
                check_node(&known, name)?;
            }
            for attr in attrs {
                if !matches!(attr.as_str(), "state" | "comment" | "note") {
                    return Err(format!(
                        "nodes have the attributes state and comment, not \"{attr}\""
                    ));
                }
            }
            for name in names {
                if attrs.iter().any(|a| a == "state") {
                    config.node_marks.remove(name);
                } else if let Some(mark) = config.node_marks.get_mut(name) {
                    mark.comment.clear();
                }
            }
        }
        Action::ListNode(names) => {
            let known = known_nodes(config, state);
            for name in names {
                check_node(&known, name)?;
            }
            outcome.output.push_str(&list(config, state, names));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Drops the marks of nodes no set has any more (a qmgr set deleted).
pub fn forget_missing(config: &mut Config, state: &State) {
    let known: BTreeSet<String> = known_nodes(config, state)
        .into_iter()
        .map(str::to_string)
        .collect();
    config.node_marks.retain(|name, _| known.contains(name));
}

/// `list node`: every node (or those named) with its state as the
/// scheduler sees it and the administrator's comment.
fn list(config: &Config, state: &State, names: &[String]) -> String {
    let mut out = String::new();
    for node in state.nodes() {
        if !names.is_empty() && !names.iter().any(|n| **n == *node.name) {
            continue;
        }
        let mark = config.node_marks.get(&*node.name);
        // As the node will be under the working copy's mark, which this
        // script may just have set.
        let mut seen = node.clone();
        seen.admin = mark.map(|m| m.state);
        let shown = seen.state_name();
        out.push_str(&format!("Node {}\n", node.name));
        out.push_str(&format!("    host = {}\n", node.host));
        out.push_str(&format!("    state = {shown}\n"));
        if let Some(m) = mark {
            if node.up {
                out.push_str(&format!("    admin_state = {}\n", m.state.as_str()));
            }
            if !m.comment.is_empty() {
                out.push_str(&format!("    comment = {}\n", m.comment));
            }
        }
        if !node.jobs.is_empty() {
            let jobs: Vec<String> = node.jobs.iter().map(|j| j.to_string()).collect();
            out.push_str(&format!("    jobs = {}\n", jobs.join(", ")));
        }
        out.push('\n');
    }
    out
}

/// The marks as qmgr commands, for `print server`.
pub fn print(config: &Config) -> String {
    if config.node_marks.is_empty() {
        return String::new();
    }
    let mut out = String::from("#\n# Nodes out of service.\n#\n");
    for (name, mark) in &config.node_marks {
        out.push_str(&format!("set node {name} state = {}", mark.state.as_str()));
        if !mark.comment.is_empty() {
            out.push_str(&format!(", comment = {}", quoted(&mark.comment)));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Role;
    use crate::qmgr::{parse_script, run};
    use crate::state::tests::caller;

    fn state() -> State {
        crate::state::tests::state(4)
    }

    fn qmgr(config: &mut Config, st: &State, role: Role, script: &str) -> Result<String, String> {
        let cmds = parse_script(script).map_err(|e| e.to_string())?;
        run(&cmds, config, st, &caller(1000, role))
            .map(|o| o.output)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn an_operator_takes_a_node_offline_with_a_reason_and_back() {
        let st = state();
        let mut config = st.config().clone();
        qmgr(
            &mut config,
            &st,
            Role::Operator,
            "set node n2 state = offline, comment = \"fan\"",
        )
        .unwrap();
        assert_eq!(
            config.node_marks["n2"],
            NodeMark {
                state: AdminState::Offline,
                comment: "fan".into()
            }
        );
        let listed = qmgr(&mut config, &st, Role::Operator, "list node n2").unwrap();
        assert!(
            listed.contains("state = offline") && listed.contains("comment = fan"),
            "{listed}"
        );
        qmgr(&mut config, &st, Role::Operator, "set node n2 state = free").unwrap();
        assert!(config.node_marks.is_empty());
    }

    #[test]
    fn draining_then_unset_state() {
        let st = state();
        let mut config = st.config().clone();
        qmgr(
            &mut config,
            &st,
            Role::Operator,
            "set node n1,n3 state = draining",
        )
        .unwrap();
        assert_eq!(config.node_marks.len(), 2);
        qmgr(&mut config, &st, Role::Operator, "unset node n1 state").unwrap();
        assert_eq!(config.node_marks.keys().collect::<Vec<_>>(), ["n3"]);
    }

    #[test]
    fn bad_nodes_states_and_attributes_are_refused_by_name() {
        let st = state();
        let mut config = st.config().clone();
        let e = qmgr(
            &mut config,
            &st,
            Role::Operator,
            "set node n99 state = offline",
        )
        .unwrap_err();
        assert!(e.contains("node \"n99\" does not exist"), "{e}");
        let e = qmgr(&mut config, &st, Role::Operator, "set node n1 state = down").unwrap_err();
        assert!(e.contains("offline, draining or free"), "{e}");
        let e = qmgr(&mut config, &st, Role::Operator, "set node n1 mem = 4gb").unwrap_err();
        assert!(e.contains("belong to the node set"), "{e}");
        let e = qmgr(&mut config, &st, Role::User, "set node n1 state = offline").unwrap_err();
        assert!(e.contains("operator"), "{e}");
        assert!(config.node_marks.is_empty());
    }

    #[test]
    fn print_server_recreates_the_marks() {
        let st = state();
        let mut config = st.config().clone();
        qmgr(
            &mut config,
            &st,
            Role::Manager,
            "set node n0 state = offline, comment = \"new disk, slot 3\"\nset node n3 state = draining",
        )
        .unwrap();
        let script = print(&config);
        let mut rebuilt = st.config().clone();
        qmgr(&mut rebuilt, &st, Role::Manager, &script).unwrap();
        assert_eq!(rebuilt.node_marks, config.node_marks);
    }
}
