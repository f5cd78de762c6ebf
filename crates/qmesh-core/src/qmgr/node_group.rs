//! qmgr's node groups:
//! `create node_group short sets = "s1,s2"`,
//! `set node_group short sets.prime = "s3,s1,s2"` (the sets while the
//! calendar's `prime` period is on), `unset node_group short sets.prime`,
//! `delete node_group short`, `list node_group [NAMES]`. Node sets are in
//! `node_set.rs`. Only managers change groups.

use super::values::{quoted, update_list};
use super::vocab::{Action, Assignment, Outcome};
use crate::node_group::NodeGroup;
use crate::server::Config;

fn no_group(name: &str) -> String {
    format!("node group \"{name}\" does not exist; see qmgr -c \"list node_group\"")
}

fn group_mut<'a>(config: &'a mut Config, name: &str) -> Result<&'a mut NodeGroup, String> {
    config
        .node_groups
        .get_mut(name)
        .ok_or_else(|| no_group(name))
}

/// `sets` or `sets.PERIOD`: which list an attribute names.
fn list_of(attr: &str) -> Result<Option<&str>, String> {
    match attr.split_once('.') {
        None if attr == "sets" || attr == "node_sets" => Ok(None),
        Some(("sets" | "node_sets", period)) if valid_name(period) => Ok(Some(period)),
        _ => Err(format!(
            "node groups have the attribute sets (the default sets) and sets.PERIOD \
             (the sets while a calendar period is on), not \"{attr}\""
        )),
    }
}

/// Group and period names: letters, digits, `_` and `-`, a letter first.
fn valid_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn set(group: &mut NodeGroup, a: &Assignment) -> Result<(), String> {
    let period = list_of(&a.name)?;
    let mut sets = group
        .sets_of(period)
        .map(<[String]>::to_vec)
        .unwrap_or_default();
    update_list(&mut sets, &a.name, a.op, &a.value)?;
    group.set_sets(period, sets);
    Ok(())
}

/// Applies a node group command; `Ok(false)` if `action` is
/// not one.
pub fn apply(action: &Action, config: &mut Config, outcome: &mut Outcome) -> Result<bool, String> {
    match action {
        Action::CreateNodeGroup(names, assigns) => {
            for name in names {
                if !valid_name(name) {
                    return Err(format!(
                        "bad node group name \"{name}\": use letters, digits, _ and -, a letter first"
                    ));
                }
                if config.node_groups.contains_key(name) {
                    return Err(format!("node group \"{name}\" already exists"));
                }
                let mut group = NodeGroup::new(name);
                for a in assigns {
                    set(&mut group, a)?;
                }
                config.node_groups.insert(name.clone(), group);
            }
        }
        Action::DeleteNodeGroup(names) => {
            for name in names {
                group_mut(config, name)?;
                if let Some(q) = config
                    .queues
                    .values()
                    .find(|q| q.node_group.as_deref() == Some(name.as_str()))
                {
                    return Err(format!(
                        "node group \"{name}\" is the node_group of queue \"{}\"; \
                         unset queue {} node_group first",
                        q.name, q.name
                    ));
                }
                config.node_groups.remove(name);
            }
        }
        Action::SetNodeGroup(names, assigns) => {
            for name in names {
                let group = group_mut(config, name)?;
                for a in assigns {
                    set(group, a)?;
                }
            }
        }
        Action::UnsetNodeGroup(names, attrs) => {
            for name in names {
                let group = group_mut(config, name)?;
                for attr in attrs {
                    group.set_sets(list_of(attr)?, Vec::new());
                }
            }
        }
        Action::ListNodeGroup(names) => {
            let names: Vec<String> = if names.is_empty() {
                config.node_groups.keys().cloned().collect()
            } else {
                names.clone()
            };
            for name in names {
                let group = config
                    .node_groups
                    .get(&name)
                    .ok_or_else(|| no_group(&name))?;
                outcome.output.push_str(&list(group, config));
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn list(group: &NodeGroup, config: &Config) -> String {
    let mut out = format!("Node group {}\n", group.name);
    out.push_str(&format!("    sets = {}\n", group.sets.join(",")));
    for p in &group.periods {
        out.push_str(&format!("    sets.{} = {}\n", p.period, p.sets.join(",")));
    }
    let queues: Vec<&str> = config
        .queues
        .values()
        .filter(|q| q.node_group.as_deref() == Some(group.name.as_str()))
        .map(|q| q.name.as_str())
        .collect();
    if !queues.is_empty() {
        out.push_str(&format!("    queues = {}\n", queues.join(",")));
    }
    out.push('\n');
    out
}

/// qmgr commands that recreate the node groups (printed before the
/// queues, which name them), on a daemon whose configuration file makes
/// the groups of `file`: those are not created again; the lists they have
/// and the group no longer has are unset.
pub fn print_over(config: &Config, file: &Config) -> String {
    if config.node_groups.is_empty() {
        return String::new();
    }
    let mut out = String::from("#\n# Create node groups: their sets, and per period.\n#\n");
    for group in config.node_groups.values() {
        match file.node_groups.get(&group.name) {
            None => out.push_str(&format!("create node_group {}\n", group.name)),
            Some(seeded) => {
                out.push_str(&format!(
                    "# node group {} is made by the configuration file\n",
                    group.name
                ));
                let mut gone: Vec<String> = seeded
                    .periods
                    .iter()
                    .filter(|p| !group.periods.iter().any(|g| g.period == p.period))
                    .map(|p| format!("sets.{}", p.period))
                    .collect();
                if group.sets.is_empty() && !seeded.sets.is_empty() {
                    gone.insert(0, "sets".to_string());
                }
                if !gone.is_empty() {
                    out.push_str(&format!(
                        "unset node_group {} {}\n",
                        group.name,
                        gone.join(", ")
                    ));
                }
            }
        }
        if !group.sets.is_empty() {
            out.push_str(&format!(
                "set node_group {} sets = {}\n",
                group.name,
                quoted(&group.sets.join(","))
            ));
        }
        for p in &group.periods {
            out.push_str(&format!(
                "set node_group {} sets.{} = {}\n",
                group.name,
                p.period,
                quoted(&p.sets.join(","))
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::parse_script;
    use super::super::tests::run_as;
    use crate::access::Role;
    use crate::state::tests::state;

    #[test]
    fn groups_are_made_listed_and_checked() {
        let st = state(4);
        let mut config = st.config().clone();
        let script = "create node_group short sets = local\n\
                      set node_group short sets.prime = local\n\
                      set queue batch node_group = short\n\
                      list node_group short\n";
        let out = run_as(Role::Manager, script, &mut config, &st).unwrap();
        assert!(out.output.contains("sets.prime = local"), "{}", out.output);
        assert!(out.output.contains("queues = batch"), "{}", out.output);
        assert_eq!(config.queues["batch"].node_group.as_deref(), Some("short"));

        // A missing set, a missing group, deleting a group in use: each
        // named, nothing applied.
        let before = config.clone();
        for (script, says) in [
            (
                "set node_group short sets += mars",
                "node set \"mars\" does not exist",
            ),
            (
                "set queue batch node_group = long",
                "node group \"long\" does not exist",
            ),
            (
                "delete node_group short",
                "unset queue batch node_group first",
            ),
            ("set node_group short sizes = local", "not \"sizes\""),
            ("create node_group 9x", "bad node group name"),
        ] {
            let err = run_as(Role::Manager, script, &mut config.clone(), &st).unwrap_err();
            assert!(err.message.contains(says), "{script}: {err}");
        }
        assert_eq!(config, before);
        assert!(
            run_as(
                Role::Operator,
                "create node_group g2",
                &mut config.clone(),
                &st
            )
            .is_err()
        );
        assert!(parse_script("list node_set").is_ok());
    }
}
