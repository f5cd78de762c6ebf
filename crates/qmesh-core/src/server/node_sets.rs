//! Node sets and node groups as the whole configuration sees them: the
//! file's sets merged with those made with qmgr, and every group naming
//! sets that exist.

use super::Config;
use crate::node::{NodeSet, conflict};

/// The node sets of the scheduler: the daemon file's (`file_sets`), then
/// the ones made with qmgr (`config.node_sets`) in name order. A qmgr set
/// that clashes with those before it (the file changed under it) is taken
/// out of `config`, and a warning says which and why.
pub fn merge_sets(file_sets: &[NodeSet], config: &mut Config) -> (Vec<NodeSet>, Vec<String>) {
    let mut sets = file_sets.to_vec();
    let mut warnings = Vec::new();
    let mut dropped = Vec::new();
    for (name, set) in &config.node_sets {
        match conflict(set, &sets) {
            None => sets.push(set.clone()),
            Some(why) => {
                warnings.push(format!(
                    "node set \"{name}\" (made with qmgr) is left out: {why}; \
                     queues and node groups naming it find no nodes there until it is \
                     created again (qmgr -c \"create node_set {name} ...\")"
                ));
                dropped.push(name.clone());
            }
        }
    }
    for name in dropped {
        config.node_sets.remove(&name);
    }
    (sets, warnings)
}

/// Checks that every group names known sets, lists a set once per list,
/// and that every queue's group exists; the error names the key and why.
pub fn check_node_groups(config: &Config, set_names: &[&str]) -> Result<(), (String, String)> {
    for group in config.node_groups.values() {
        let lists = std::iter::once((None, &group.sets))
            .chain(group.periods.iter().map(|p| (Some(&p.period), &p.sets)));
        for (period, sets) in lists {
            let key = match period {
                None => format!("node_group \"{}\".sets", group.name),
                Some(p) => format!("node_group \"{}\".sets.{p}", group.name),
            };
            for (i, set) in sets.iter().enumerate() {
                if !set_names.contains(&set.as_str()) {
                    return Err((
                        key,
                        format!(
                            "node set \"{set}\" does not exist; node sets: {} (qmgr -c \"list node_set\")",
                            set_names.join(", ")
                        ),
                    ));
                }
                if sets[..i].contains(set) {
                    return Err((key, format!("node set \"{set}\" is listed twice")));
                }
            }
        }
    }
    for q in config.queues.values() {
        if let Some(g) = &q.node_group
            && !config.node_groups.contains_key(g)
        {
            return Err((
                format!("queue \"{}\".node_group", q.name),
                format!("node group \"{g}\" does not exist; see qmgr list node_group"),
            ));
        }
    }
    Ok(())
}
