//! qmgr's node sets:
//! `create node_set s1 nodes = "n[0-15]", host = h1, mem = 32gb, ncpus = 8,
//! features = "fat,gpu"` (flat sets; a node may name its own host,
//! `n3@h2`), `set node_set s1 mem = 64gb` (also `nodes += n16`,
//! `nodes -= n0`, `host = h2`, `features += nag`, `jobs_per_node = 8` to
//! share its nodes among jobs, `resources_available.scratch = 400gb` for
//! a host-level resource the site created), `unset node_set s1 features`,
//! `delete node_set s1`, `list node_set [NAMES]`.
//!
//! The sets of the daemon's file describe the machine: qmgr lists them but
//! changes only its own, kept in [`Config::node_sets`]. Sets stay disjoint,
//! and no change takes a node from under a running job. Only managers
//! change node sets.

use super::values::{parse_count, quoted, scalar_only, update_list};
use super::vocab::{Action, Assignment, Op, Outcome};
use crate::node::{NodeAttrs, NodeDef, NodeSet, Topology};
use crate::resources::{check_feature, format_size, parse_size};
use crate::server::Config;
use crate::site_resources::ResourceDef;
use crate::state::State;
use std::collections::BTreeMap;

/// Every node set name a configuration may refer to: the file's, then
/// qmgr's (from the working copy, so a script may use a set it made).
pub fn known_sets<'a>(config: &'a Config, state: &'a State) -> Vec<&'a str> {
    state
        .file_sets()
        .iter()
        .map(|s| s.name.as_str())
        .chain(config.node_sets.keys().map(String::as_str))
        .collect()
}

fn no_set(name: &str) -> String {
    format!("node set \"{name}\" does not exist; see qmgr -c \"list node_set\"")
}

fn from_file(name: &str) -> String {
    format!(
        "node set \"{name}\" comes from the configuration file; change it there and restart qmeshd"
    )
}

/// The qmgr set named, for a change.
fn set_mut<'a>(
    config: &'a mut Config,
    state: &State,
    name: &str,
) -> Result<&'a mut NodeSet, String> {
    if state.is_file_set(name) {
        return Err(from_file(name));
    }
    config.node_sets.get_mut(name).ok_or_else(|| no_set(name))
}

/// Set, node and host names: letters, digits, `_`, `-` and `.`, a letter
/// or digit first.
fn valid_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

const ATTRS: &str =
    "nodes, host, topology, mem, ncpus, features, jobs_per_node and resources_available.NAME";

/// Expands `n[0-15]` (and `n[00-15]`, zero-padded) to its names; any other
/// name is itself.
fn expand(item: &str) -> Result<Vec<String>, String> {
    let Some((prefix, rest)) = item.split_once('[') else {
        return Ok(vec![item.to_string()]);
    };
    let bad =
        || format!("\"{item}\" is not a node range; write e.g. n[0-15] (first and last number)");
    let (range, suffix) = rest.split_once(']').ok_or_else(bad)?;
    let (lo, hi) = range.split_once('-').ok_or_else(bad)?;
    // A u32 has at most 10 digits: more is padding that made each name
    // as long as the script (n[000...01-99999]).
    if lo.len() > 10 || hi.len() > 10 {
        return Err(bad());
    }
    let (first, last): (u32, u32) = (
        lo.parse().map_err(|_| bad())?,
        hi.parse().map_err(|_| bad())?,
    );
    if first > last || last - first >= 100_000 {
        return Err(bad());
    }
    if prefix.len() + suffix.len() + 10 > MAX_NAME_BYTES {
        return Err(format!(
            "\"{item}\": a node name may be at most {MAX_NAME_BYTES} characters"
        ));
    }
    let width = if lo.len() > 1 && lo.starts_with('0') {
        lo.len()
    } else {
        0
    };
    Ok((first..=last)
        .map(|i| format!("{prefix}{i:0width$}{suffix}"))
        .collect())
}

/// The longest node name a range makes.
const MAX_NAME_BYTES: usize = 255;

/// Reads `n1,n2@h2,n[3-5]`: each node with its own host, or `host`; at
/// most `chunk::MAX_NODES` nodes, as many as a node set of the file.
fn parse_nodes(value: &str, host: Option<&str>) -> Result<Vec<NodeDef>, String> {
    let mut out = Vec::new();
    // Commas inside a range are not separators: split outside brackets.
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in value.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&value[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&value[start..]);
    for item in items.into_iter().map(str::trim).filter(|s| !s.is_empty()) {
        let (names, own_host) = match item.split_once('@') {
            Some((names, h)) => (names, Some(h)),
            None => (item, None),
        };
        let Some(host) = own_host.or(host) else {
            return Err(format!(
                "node \"{names}\" has no host: add host = HOST (the agent that serves it) \
                 or write {names}@HOST"
            ));
        };
        if !valid_name(host) {
            return Err(format!(
                "bad host name \"{host}\": use letters, digits, _, - and ."
            ));
        }
        for name in expand(names)? {
            if !valid_name(&name) {
                return Err(format!(
                    "bad node name \"{name}\": use letters, digits, _, - and ., \
                     a letter or digit first (ranges: n[0-15])"
                ));
            }
            out.push(NodeDef {
                name,
                host: host.to_string(),
            });
        }
        let most = crate::resources::chunk::MAX_NODES as usize;
        if out.len() > most {
            return Err(format!(
                "the list names more than {most} nodes; a node set may have at most {most}"
            ));
        }
    }
    Ok(out)
}

fn topology(value: &str) -> Result<Topology, String> {
    match value.to_ascii_lowercase().as_str() {
        "flat" => Ok(Topology::Flat),
        t @ ("mesh2d" | "torus" | "torus3d-shapes" | "torus3d_shapes") => Err(format!(
            "topology \"{t}\" needs dims; define it in the configuration file (qmgr makes flat sets)"
        )),
        other => Err(format!(
            "unknown topology \"{other}\"; qmgr makes flat sets (mesh2d, torus and \
             torus3d-shapes are defined in the configuration file)"
        )),
    }
}

/// Sets mem, ncpus, features, jobs_per_node or `resources_available.NAME`
/// (for a resource the site made host-level, `resources`' flag `h`);
/// `Ok(false)` if `a` names none of them.
fn set_attr(
    attrs: &mut NodeAttrs,
    a: &Assignment,
    resources: &BTreeMap<String, ResourceDef>,
) -> Result<bool, String> {
    let scalar = || scalar_only(&a.name, a.op);
    if let Some(name) = super::resource::available_attr(&a.name) {
        scalar()?;
        let def = resources.get(name).ok_or_else(|| {
            format!(
                "resources_available.{name}: resource \"{name}\" is not defined; create it \
                 first (qmgr -c \"create resource {name} type = size, flag = h\")"
            )
        })?;
        if !def.host_level() {
            return Err(format!(
                "resources_available.{name}: resource \"{name}\" is not a host resource \
                 (flag = {}); give it flag h (set resource {name} flag = h, or nh to consume \
                 it per node), or bound it on the server (set server resources_available.{name})",
                if def.flags.is_empty() {
                    "none"
                } else {
                    &def.flags
                }
            ));
        }
        def.kind.check(&a.value).map_err(|why| {
            format!(
                "resources_available.{name}: {why}; a {} value is needed",
                def.kind
            )
        })?;
        attrs
            .resources
            .insert(name.to_string(), a.value.trim().to_string());
        return Ok(true);
    }
    match a.name.as_str() {
        "mem" => {
            scalar()?;
            let mem = parse_size(&a.value).map_err(|e| format!("mem: {e}"))?;
            attrs.mem = Some(mem);
        }
        "ncpus" | "cpus" => {
            scalar()?;
            attrs.cpus = Some(parse_count(&a.name, &a.value)?);
        }
        "jobs_per_node" => {
            scalar()?;
            attrs.jobs_per_node = Some(parse_count(&a.name, &a.value)?);
        }
        "features" | "feature" => {
            let mut features = attrs.features.clone();
            update_list(&mut features, "features", a.op, &a.value)?;
            attrs.features = features
                .iter()
                .map(|f| check_feature(f))
                .collect::<Result<_, _>>()?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn unknown_attr(name: &str) -> String {
    format!("node sets have the attributes {ATTRS}, not \"{name}\"")
}

/// The value of `host = H` among the assignments, if any.
fn host_of(assigns: &[Assignment]) -> Result<Option<&str>, String> {
    let mut host = None;
    for a in assigns.iter().filter(|a| a.name == "host") {
        scalar_only("host", a.op)?;
        host = Some(a.value.as_str());
    }
    Ok(host)
}

fn create(
    name: &str,
    assigns: &[Assignment],
    resources: &BTreeMap<String, ResourceDef>,
) -> Result<NodeSet, String> {
    let host = host_of(assigns)?;
    let mut set = NodeSet {
        name: name.to_string(),
        topology: Topology::Flat,
        nodes: Vec::new(),
        attrs: NodeAttrs::default(),
    };
    for a in assigns {
        match a.name.as_str() {
            "host" => {}
            "nodes" => {
                scalar_only("nodes", a.op)?;
                set.nodes = parse_nodes(&a.value, host)?;
            }
            "topology" => set.topology = topology(&a.value)?,
            _ if set_attr(&mut set.attrs, a, resources)? => {}
            other => return Err(unknown_attr(other)),
        }
    }
    if set.nodes.is_empty() {
        return Err(format!(
            "node set \"{name}\" needs nodes: create node_set {name} nodes = \"n1,n2\", host = HOST"
        ));
    }
    Ok(set)
}

/// The host a set's nodes share, if they do.
fn common_host(set: &NodeSet) -> Option<&str> {
    let first = set.nodes.first()?.host.as_str();
    set.nodes.iter().all(|n| n.host == first).then_some(first)
}

fn change(
    set: &mut NodeSet,
    assigns: &[Assignment],
    resources: &BTreeMap<String, ResourceDef>,
) -> Result<(), String> {
    let host = host_of(assigns)?;
    let mut nodes_given = false;
    for a in assigns {
        match a.name.as_str() {
            "host" => {}
            "nodes" => {
                nodes_given = true;
                let default_host = host.or(common_host(set)).map(str::to_string);
                let given = parse_nodes(&a.value, default_host.as_deref())?;
                match a.op {
                    Op::Assign => set.nodes = given,
                    Op::Add => set.nodes.extend(given),
                    Op::Remove => {
                        for def in given {
                            let before = set.nodes.len();
                            set.nodes.retain(|n| n.name != def.name);
                            if set.nodes.len() == before {
                                return Err(format!(
                                    "node \"{}\" is not in node set \"{}\"",
                                    def.name, set.name
                                ));
                            }
                        }
                    }
                }
            }
            "topology" => {
                return Err(format!(
                    "the topology of node set \"{}\" is fixed; delete the set and create it again",
                    set.name
                ));
            }
            _ if set_attr(&mut set.attrs, a, resources)? => {}
            other => return Err(unknown_attr(other)),
        }
    }
    if let (Some(host), false) = (host, nodes_given) {
        for node in &mut set.nodes {
            node.host = host.to_string();
        }
    }
    if set.nodes.is_empty() {
        return Err(format!(
            "node set \"{}\" would have no nodes; delete it instead (delete node_set {})",
            set.name, set.name
        ));
    }
    Ok(())
}

/// Refuses a set that shares a node (or its name) with another set.
fn check_disjoint(set: &NodeSet, config: &Config, state: &State) -> Result<(), String> {
    let others: Vec<NodeSet> = state
        .file_sets()
        .iter()
        .chain(config.node_sets.values())
        .filter(|s| s.name != set.name || state.is_file_set(&s.name))
        .cloned()
        .collect();
    match crate::node::conflict(set, &others) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// Refuses to take `nodes` (or move them to another host) from under a
/// running job.
fn check_idle<'a>(
    set: &str,
    mut nodes: impl Iterator<Item = &'a NodeDef>,
    state: &State,
    doing: &str,
) -> Result<(), String> {
    let Some((node, job)) = nodes.find_map(|def| {
        let job = state.node_by_name(&def.name)?.job()?;
        Some((def.name.as_str(), job))
    }) else {
        return Ok(());
    };
    Err(format!(
        "job {} runs on node {node} of node set \"{set}\"; {doing} once it has ended \
         (or qdel it)",
        state.full_id(job)
    ))
}

/// What names the set: a queue, a node group or a shutdown window, with
/// the command that takes it out.
fn user_of(config: &Config, name: &str) -> Option<String> {
    if let Some(q) = config
        .queues
        .values()
        .find(|q| q.node_sets.iter().any(|s| s == name))
    {
        return Some(format!(
            "queue \"{}\"; take it out first (qmgr -c \"set queue {} node_sets -= {name}\")",
            q.name, q.name
        ));
    }
    for g in config.node_groups.values() {
        let lists = std::iter::once((String::from("sets"), &g.sets)).chain(
            g.periods
                .iter()
                .map(|p| (format!("sets.{}", p.period), &p.sets)),
        );
        for (attr, sets) in lists {
            if sets.iter().any(|s| s == name) {
                return Some(format!(
                    "node group \"{}\"; take it out first (qmgr -c \"set node_group {} {attr} -= {name}\")",
                    g.name, g.name
                ));
            }
        }
    }
    config
        .shutdowns
        .values()
        .find(|w| w.node_sets.iter().any(|s| s == name))
        .map(|w| {
            format!(
                "shutdown window \"{}\"; take it out first (qmgr -c \"set shutdown {} node_sets -= {name}\")",
                w.name, w.name
            )
        })
}

/// Applies a node set command; `Ok(false)` if `action` is not one.
pub fn apply(
    action: &Action,
    config: &mut Config,
    state: &State,
    outcome: &mut Outcome,
) -> Result<bool, String> {
    match action {
        Action::CreateNodeSet(names, assigns) => {
            for name in names {
                if !valid_name(name) {
                    return Err(format!(
                        "bad node set name \"{name}\": use letters, digits, _, - and ., \
                         a letter or digit first"
                    ));
                }
                if state.is_file_set(name) {
                    return Err(format!(
                        "node set \"{name}\" already exists (in the configuration file)"
                    ));
                }
                if config.node_sets.contains_key(name) {
                    return Err(format!(
                        "node set \"{name}\" already exists; change it with set node_set {name} ..."
                    ));
                }
                let set = create(name, assigns, &config.resources)?;
                check_disjoint(&set, config, state)?;
                config.node_sets.insert(name.clone(), set);
            }
        }
        Action::SetNodeSet(names, assigns) => {
            for name in names {
                let mut set = set_mut(config, state, name)?.clone();
                let before = set.clone();
                change(&mut set, assigns, &config.resources)?;
                // Nodes that leave the set or change host must be idle.
                let moved = before.nodes.iter().filter(|old| {
                    !set.nodes
                        .iter()
                        .any(|n| n.name == old.name && n.host == old.host)
                });
                check_idle(name, moved, state, "change it")?;
                check_disjoint(&set, config, state)?;
                config.node_sets.insert(name.clone(), set);
            }
        }
        Action::UnsetNodeSet(names, attrs) => {
            for name in names {
                let set = set_mut(config, state, name)?;
                for attr in attrs {
                    match attr.as_str() {
                        "mem" => set.attrs.mem = None,
                        "ncpus" | "cpus" => set.attrs.cpus = None,
                        "features" | "feature" => set.attrs.features.clear(),
                        "jobs_per_node" => set.attrs.jobs_per_node = None,
                        _ if super::resource::available_attr(attr)
                            .is_some_and(|r| set.attrs.resources.remove(r).is_some()) => {}
                        "nodes" | "host" | "topology" => {
                            return Err(format!(
                                "a node set always has {attr}; set it instead (set node_set {name} {attr} = ...)"
                            ));
                        }
                        other => return Err(unknown_attr(other)),
                    }
                }
            }
        }
        Action::DeleteNodeSet(names) => {
            for name in names {
                let set = set_mut(config, state, name)?;
                let nodes = set.nodes.clone();
                if let Some(user) = user_of(config, name) {
                    return Err(format!("node set \"{name}\" is used by {user}"));
                }
                check_idle(name, nodes.iter(), state, "delete the set")?;
                config.node_sets.remove(name);
            }
        }
        Action::ListNodeSet(names) => {
            let sets: Vec<(&NodeSet, &str)> = state
                .file_sets()
                .iter()
                .map(|s| (s, "configuration file"))
                .chain(config.node_sets.values().map(|s| (s, "qmgr")))
                .collect();
            for name in names {
                if !sets.iter().any(|(s, _)| &s.name == name) {
                    return Err(no_set(name));
                }
            }
            for (set, source) in sets {
                if names.is_empty() || names.contains(&set.name) {
                    outcome.output.push_str(&list(set, source));
                }
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn list(set: &NodeSet, source: &str) -> String {
    let mut hosts: Vec<&str> = set.nodes.iter().map(|n| n.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let names: Vec<&str> = set.nodes.iter().map(|n| n.name.as_str()).collect();
    format!(
        "Node set {}\n    source = {source}\n    topology = {}\n    nodes = {}\n    \
         node_names = {}\n    hosts = {}\n    attributes = {}\n\n",
        set.name,
        set.topology.describe(),
        set.nodes.len(),
        compress(&names),
        hosts.join(","),
        set.attrs.describe()
    )
}

/// `n0,n1,n2,n3,x` as `n[0-3],x`: runs of three or more names that differ
/// only in a trailing number counting up by one, written as [`expand`]
/// reads them back (`n08,n09,n10` as `n[08-10]`).
fn compress(names: &[&str]) -> String {
    fn split(name: &str) -> Option<(&str, &str)> {
        let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        (digits > 0 && digits <= 9).then(|| name.split_at(name.len() - digits))
    }
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < names.len() {
        if let Some((prefix, num)) = split(names[i])
            && let Ok(first) = num.parse::<u64>()
        {
            let width = if num.len() > 1 && num.starts_with('0') {
                num.len()
            } else {
                0
            };
            let mut j = i + 1;
            while j < names.len()
                && names[j] == format!("{prefix}{:0width$}", first + (j - i) as u64)
            {
                j += 1;
            }
            if j - i >= 3 {
                let last = &names[j - 1][prefix.len()..];
                out.push(format!("{prefix}[{num}-{last}]"));
                i = j;
                continue;
            }
        }
        out.push(names[i].to_string());
        i += 1;
    }
    out.join(",")
}

/// qmgr commands that recreate the sets made with qmgr (printed before
/// the node groups, queues and shutdown windows, which name them).
pub fn print(config: &Config) -> String {
    if config.node_sets.is_empty() {
        return String::new();
    }
    let mut out = String::from("#\n# Create node sets (those not in the configuration file).\n#\n");
    for set in config.node_sets.values() {
        let mut parts = Vec::new();
        match common_host(set) {
            Some(host) => {
                let names: Vec<&str> = set.nodes.iter().map(|n| n.name.as_str()).collect();
                parts.push(format!("nodes = {}", quoted(&compress(&names))));
                parts.push(format!("host = {host}"));
            }
            None => {
                // Runs of nodes on one host, each with its host.
                let mut items = Vec::new();
                let mut run: Vec<&str> = Vec::new();
                for (k, node) in set.nodes.iter().enumerate() {
                    run.push(&node.name);
                    if set
                        .nodes
                        .get(k + 1)
                        .is_none_or(|next| next.host != node.host)
                    {
                        for item in compress(&run).split(',') {
                            items.push(format!("{item}@{}", node.host));
                        }
                        run.clear();
                    }
                }
                parts.push(format!("nodes = {}", quoted(&items.join(","))));
            }
        }
        if set.topology != Topology::Flat {
            parts.push(format!("topology = {}", set.topology.describe()));
        }
        if let Some(mem) = set.attrs.mem {
            parts.push(format!("mem = {}", format_size(mem)));
        }
        if let Some(cpus) = set.attrs.cpus {
            parts.push(format!("ncpus = {cpus}"));
        }
        if !set.attrs.features.is_empty() {
            parts.push(format!(
                "features = {}",
                quoted(&set.attrs.features.join(","))
            ));
        }
        if set.attrs.slots() > 1 {
            parts.push(format!("jobs_per_node = {}", set.attrs.slots()));
        }
        for (name, value) in &set.attrs.resources {
            parts.push(format!("resources_available.{name} = {}", quoted(value)));
        }
        out.push_str(&format!(
            "create node_set {} {}\n",
            set.name,
            parts.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests;
