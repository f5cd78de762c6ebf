//! qmgr's resources, PBS Pro's commands:
//! `create resource nmics type = long, flag = nh` (also several names:
//! `create resource r1,r2 type = size`), `set resource nmics flag = nhi`,
//! `unset resource nmics flag`, `delete resource nmics`,
//! `list resource [NAMES]`, `print resource [NAMES]`. Only managers
//! change them; a resource a queue or the server names in its
//! `resources_*` cannot be deleted or change type. Torque has no such
//! command: its resources are built in.
//!
//! Also here: the per-resource attributes of queues and the server,
//! `resources_max.NAME`, `resources_min.NAME` and `resources_default.NAME`
//! for every resource that has no field of its own (nodes and walltime
//! have), each value checked against the resource's type.

use std::collections::BTreeMap;

use super::values::scalar_only;
use super::vocab::{Action, Assignment, Op, Outcome};
use crate::resources::PreemptTargets as Targets;
use crate::server::Config;
use crate::site_resources::{ResourceDef, ResourceType, built_in, check_name, parse_flags};

fn no_resource(name: &str) -> String {
    format!("resource \"{name}\" is not defined; see qmgr -c \"list resource\"")
}

fn set(def: &mut ResourceDef, a: &Assignment, in_use: Option<String>) -> Result<(), String> {
    scalar_only(&a.name, a.op)?;
    match a.name.to_ascii_lowercase().as_str() {
        "type" => {
            let kind = ResourceType::parse(&a.value)?;
            if kind != def.kind
                && let Some(user) = in_use
            {
                return Err(format!(
                    "resource \"{}\" is named by {user}; unset it there before changing its type",
                    def.name
                ));
            }
            def.kind = kind;
            // The flags must still suit the type.
            def.flags = parse_flags(&def.flags, kind)?;
        }
        "flag" | "flags" => def.flags = parse_flags(&a.value, def.kind)?,
        other => {
            return Err(format!(
                "resources have the attributes type and flag, not \"{other}\": \
                 create resource NAME type = long, flag = nh"
            ));
        }
    }
    Ok(())
}

/// Where a resource is named by a queue's or the server's `resources_*`.
fn user_of(config: &Config, name: &str) -> Option<String> {
    let names = |max: &BTreeMap<String, String>,
                 min: &BTreeMap<String, String>,
                 default: &BTreeMap<String, String>| {
        [
            ("resources_max", max),
            ("resources_min", min),
            ("resources_default", default),
        ]
        .into_iter()
        .find(|(_, map)| map.contains_key(name))
        .map(|(attr, _)| attr)
    };
    let s = &config.server;
    if let Some(attr) = names(&s.resources_max, &s.resources_min, &s.resources_default) {
        return Some(format!("the server's {attr}.{name}"));
    }
    if s.resources_available.contains_key(name) {
        return Some(format!("the server's resources_available.{name}"));
    }
    let queue = config.queues.values().find_map(|q| {
        names(&q.resources_max, &q.resources_min, &q.resources_default)
            .or_else(|| {
                q.resources_available
                    .contains_key(name)
                    .then_some("resources_available")
            })
            .map(|attr| format!("queue {}'s {attr}.{name}", q.name))
    });
    queue.or_else(|| {
        config
            .node_sets
            .values()
            .find(|set| set.attrs.resources.contains_key(name))
            .map(|set| format!("node set {}'s resources_available.{name}", set.name))
    })
}

/// Applies a resource command; `Ok(false)` if `action` is not one.
pub fn apply(action: &Action, config: &mut Config, outcome: &mut Outcome) -> Result<bool, String> {
    match action {
        Action::CreateResource(names, assigns) => {
            for name in names {
                check_name(name)?;
                if name == "ngpus" {
                    // PBS Pro sites create it; qmesh has it built in.
                    outcome.output.push_str(
                        "WARNING: resource \"ngpus\" is built in to qmesh (GPUs per node, \
                         which agents report and jobs receive in CUDA_VISIBLE_DEVICES); \
                         nothing to create\n",
                    );
                    continue;
                }
                if built_in(name).is_some() {
                    return Err(format!(
                        "resource \"{name}\" is built in; define resources of other names"
                    ));
                }
                if config.resources.contains_key(name) {
                    return Err(format!("resource \"{name}\" already exists"));
                }
                let mut def = ResourceDef::new(name);
                // The type first: the flags are checked against it.
                let (types, rest): (Vec<&Assignment>, Vec<&Assignment>) = assigns
                    .iter()
                    .partition(|a| a.name.eq_ignore_ascii_case("type"));
                for a in types.into_iter().chain(rest) {
                    set(&mut def, a, None)?;
                }
                config.resources.insert(name.clone(), def);
            }
        }
        Action::DeleteResource(names) => {
            for name in names {
                if !config.resources.contains_key(name) {
                    return Err(no_resource(name));
                }
                if let Some(user) = user_of(config, name) {
                    return Err(format!(
                        "resource \"{name}\" is named by {user}; unset it there first"
                    ));
                }
                config.resources.remove(name);
            }
        }
        Action::SetResource(names, assigns) => {
            for name in names {
                let in_use = user_of(config, name);
                let def = config
                    .resources
                    .get_mut(name)
                    .ok_or_else(|| no_resource(name))?;
                for a in assigns {
                    set(def, a, in_use.clone())?;
                }
            }
        }
        Action::UnsetResource(names, attrs) => {
            for name in names {
                let def = config
                    .resources
                    .get_mut(name)
                    .ok_or_else(|| no_resource(name))?;
                for attr in attrs {
                    match attr.to_ascii_lowercase().as_str() {
                        "flag" | "flags" => def.flags.clear(),
                        "type" => {
                            return Err(format!(
                                "a resource's type cannot be unset; set it (set resource {name} type = long)"
                            ));
                        }
                        other => {
                            return Err(format!(
                                "resources have the attributes type and flag, not \"{other}\""
                            ));
                        }
                    }
                }
            }
        }
        Action::ListResource(names) => {
            for def in named(config, names)? {
                outcome
                    .output
                    .push_str(&format!("Resource {}\n    type = {}\n", def.name, def.kind));
                if !def.flags.is_empty() {
                    outcome
                        .output
                        .push_str(&format!("    flag = {}\n", def.flags));
                }
                outcome.output.push('\n');
            }
        }
        Action::PrintResource(names) => {
            for def in named(config, names)? {
                outcome.output.push_str(&print_one(def));
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn named<'a>(config: &'a Config, names: &[String]) -> Result<Vec<&'a ResourceDef>, String> {
    if names.is_empty() {
        return Ok(config.resources.values().collect());
    }
    names
        .iter()
        .map(|n| config.resources.get(n).ok_or_else(|| no_resource(n)))
        .collect()
}

fn print_one(def: &ResourceDef) -> String {
    let mut out = format!(
        "#\n# Create and define resource {}\n#\ncreate resource {}\nset resource {} type = {}\n",
        def.name, def.name, def.name, def.kind
    );
    if !def.flags.is_empty() {
        out.push_str(&format!("set resource {} flag = {}\n", def.name, def.flags));
    }
    out
}

/// qmgr commands that recreate the site's resources (printed first: the
/// queues' `resources_*` name them).
pub fn print(config: &Config) -> String {
    if config.resources.is_empty() {
        return String::new();
    }
    let mut out = String::from("#\n# Create resources and set their properties.\n");
    for def in config.resources.values() {
        out.push_str(&print_one(def));
    }
    out
}

/// Which resource map a dotted attribute names: `resources_max.mem` gives
/// ("resources_max", "mem"). `None` for other attributes.
fn map_attr(name: &str) -> Option<(&'static str, &str)> {
    let (head, resource) = name.split_once('.')?;
    let head = match head.to_ascii_lowercase().as_str() {
        "resources_max" => "resources_max",
        "resources_min" => "resources_min",
        "resources_default" => "resources_default",
        _ => return None,
    };
    Some((head, resource))
}

/// A queue's or the server's resource maps, as qmgr sets and unsets
/// `resources_available.NAME` and `resources_max|min|default.NAME` in them.
pub struct ResourceMaps<'a> {
    pub available: &'a mut BTreeMap<String, String>,
    pub max: &'a mut BTreeMap<String, String>,
    pub min: &'a mut BTreeMap<String, String>,
    pub default: &'a mut BTreeMap<String, String>,
}

impl crate::queue::Queue {
    pub(super) fn resource_maps(&mut self) -> ResourceMaps<'_> {
        ResourceMaps {
            available: &mut self.resources_available,
            max: &mut self.resources_max,
            min: &mut self.resources_min,
            default: &mut self.resources_default,
        }
    }
}

impl crate::server::ServerAttrs {
    pub(super) fn resource_maps(&mut self) -> ResourceMaps<'_> {
        ResourceMaps {
            available: &mut self.resources_available,
            max: &mut self.resources_max,
            min: &mut self.resources_min,
            default: &mut self.resources_default,
        }
    }
}

impl ResourceMaps<'_> {
    fn bound(&mut self, head: &str) -> &mut BTreeMap<String, String> {
        match head {
            "resources_max" => self.max,
            "resources_min" => self.min,
            _ => self.default,
        }
    }

    /// Sets `attr = value` when `attr` is one of these maps' attributes;
    /// `None` otherwise. `resources` are the site's definitions.
    pub fn set(
        &mut self,
        attr: &str,
        op: Op,
        value: &str,
        resources: &BTreeMap<String, ResourceDef>,
    ) -> Option<Result<(), String>> {
        if let Some(result) = set_available(self.available, attr, op, value, resources) {
            return Some(result);
        }
        let (head, resource) = map_attr(attr)?;
        if resource.eq_ignore_ascii_case("neednodes") {
            // Torque's scheduler hint: kept with a warning (`inert.rs`).
            return None;
        }
        if head == "resources_default" && resource.eq_ignore_ascii_case(Targets::RESOURCE) {
            // Whom a queue's jobs may preempt (`preempt.rs`).
            return Some(Targets::parse(value).map(|_| {
                self.default
                    .insert(Targets::RESOURCE.to_string(), value.trim().to_string());
            }));
        }
        Some(set_bound(
            self.bound(head),
            head,
            resource,
            op,
            value,
            resources,
        ))
    }

    /// Unsets `attr` when it is one of these maps' attributes (and set).
    pub fn unset(&mut self, attr: &str) -> bool {
        if let Some(resource) = available_attr(attr)
            && self.available.remove(resource).is_some()
        {
            return true;
        }
        match map_attr(attr) {
            Some((head, resource)) => {
                self.bound(head).remove(resource);
                true
            }
            None => false,
        }
    }
}

/// Sets `resources_X.NAME = value` in `map`, checking the resource exists
/// and the value suits its type. `resources` are the site's definitions.
fn set_bound(
    map: &mut BTreeMap<String, String>,
    head: &str,
    resource: &str,
    op: Op,
    value: &str,
    resources: &BTreeMap<String, ResourceDef>,
) -> Result<(), String> {
    let attr = format!("{head}.{resource}");
    scalar_only(&attr, op)?;
    let kind = known_kind(&attr, resource, resources)?;
    if resource == "nodes" {
        crate::resource_limits::node_count(value)
            .ok_or_else(|| format!("{attr}: \"{value}\" is not a node count; write e.g. 4"))?;
    }
    kind.check(value)
        .map_err(|why| format!("{attr}: {why}; a {kind} value is needed"))?;
    map.insert(resource.to_string(), value.trim().to_string());
    Ok(())
}

/// The type of `resource`, built in or the site's; else the refusal that
/// every `X.NAME` attribute gives (`resources_default`, `default_chunk`).
pub(super) fn known_kind(
    attr: &str,
    resource: &str,
    resources: &BTreeMap<String, ResourceDef>,
) -> Result<ResourceType, String> {
    built_in(resource)
        .or_else(|| resources.get(resource).map(|d| d.kind))
        .ok_or_else(|| {
            let probe = Config {
                resources: resources.clone(),
                ..Config::default()
            };
            format!(
                "{attr}: unknown resource \"{resource}\"; {}",
                probe.resource_names()
            )
        })
}

/// The resource a `resources_available.NAME` attribute names, if `attr`
/// is one.
pub fn available_attr(attr: &str) -> Option<&str> {
    let (head, resource) = attr.split_once('.')?;
    (head.eq_ignore_ascii_case("resources_available") && !resource.is_empty()).then_some(resource)
}

/// Sets `resources_available.NAME = value` of a queue or the server, in
/// `map`, for a resource the site consumes per queue and server (flag
/// `q`), checking the value against its type. `None` if `attr` is not
/// such an attribute: PBS's others are kept without effect (`inert.rs`).
fn set_available(
    map: &mut BTreeMap<String, String>,
    attr: &str,
    op: Op,
    value: &str,
    resources: &BTreeMap<String, ResourceDef>,
) -> Option<Result<(), String>> {
    let resource = available_attr(attr)?;
    let def = resources.get(resource).filter(|d| d.per_queue())?;
    let checked = scalar_only(attr, op).and_then(|()| {
        let amount = def.kind.amount(value).filter(|&x| x >= 0.0);
        if amount.is_none() {
            let why = def
                .kind
                .check(value)
                .err()
                .unwrap_or_else(|| "it is below 0".into());
            return Err(format!(
                "resources_available.{resource}: {why}; a {} amount, 0 or more, is needed",
                def.kind
            ));
        }
        map.insert(resource.to_string(), value.trim().to_string());
        Ok(())
    });
    Some(checked)
}

/// `(resources_available.NAME, value)` for each resource consumed per
/// queue and server that `map` bounds.
pub fn available_values(map: &BTreeMap<String, String>) -> Vec<(String, String)> {
    map.iter()
        .map(|(name, value)| (format!("resources_available.{name}"), value.clone()))
        .collect()
}

/// `(resources_X.NAME, value)` for each entry of the three maps.
pub fn map_values(
    max: &BTreeMap<String, String>,
    min: &BTreeMap<String, String>,
    default: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (head, map) in [
        ("resources_max", max),
        ("resources_min", min),
        ("resources_default", default),
    ] {
        for (name, value) in map {
            out.push((format!("{head}.{name}"), value.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::run_as;
    use crate::access::Role;
    use crate::site_resources::ResourceType;
    use crate::state::tests::state;

    #[test]
    fn resources_are_defined_listed_and_guarded() {
        let st = state(2);
        let mut config = st.config().clone();
        let out = run_as(
            Role::Manager,
            "create resource nmics type=long, flag=nh\n\
             create resource scratch,licA type = size\n\
             set resource licA type = long, flag = q\n\
             list resource nmics\n\
             set queue batch resources_max.nmics = 4, resources_max.scratch = 100gb",
            &mut config,
            &st,
        )
        .unwrap();
        assert_eq!(
            out.output,
            "Resource nmics\n    type = long\n    flag = nh\n\n"
        );
        let gpus = config.resource_def("nmics").unwrap();
        assert_eq!((gpus.kind, gpus.flags.as_str()), (ResourceType::Long, "nh"));
        assert_eq!(config.resource_def("licA").unwrap().flags, "q");
        assert_eq!(config.queues["batch"].resources_max["scratch"], "100gb");
        let printed = super::print(&config);
        assert!(
            printed.contains("create resource nmics\nset resource nmics type = long\nset resource nmics flag = nh\n"),
            "{printed}"
        );
        for (script, says) in [
            ("create resource mem type = size", "built in"),
            ("create resource nmics", "already exists"),
            (
                "create resource g2 type = string, flag = nh",
                "only long, float and size",
            ),
            ("create resource g3 type = duration", "not a resource type"),
            (
                "delete resource nmics",
                "named by queue batch's resources_max.nmics",
            ),
            (
                "set resource nmics type = string",
                "before changing its type",
            ),
            (
                "set queue batch resources_max.nmics = lots",
                "\"lots\" is not a whole number",
            ),
            (
                "set queue batch resources_max.frob = 1",
                "unknown resource \"frob\"",
            ),
            ("delete resource nosuch", "is not defined"),
        ] {
            let err = run_as(Role::Manager, script, &mut config.clone(), &st).unwrap_err();
            assert!(err.message.contains(says), "{script}: {err}");
        }
        let err = run_as(
            Role::Operator,
            "create resource x1",
            &mut config.clone(),
            &st,
        )
        .unwrap_err();
        assert!(err.message.contains("manager rights"), "{err}");
        run_as(
            Role::Manager,
            "unset queue batch resources_max.nmics\ndelete resource nmics\nunset resource licA flag",
            &mut config,
            &st,
        )
        .unwrap();
        assert!(config.resource_def("nmics").is_none());
        assert_eq!(config.resource_def("licA").unwrap().flags, "");
    }

    #[test]
    fn named_bounds_keep_their_own_fields_and_others_go_to_the_maps() {
        let st = state(2);
        let mut config = st.config().clone();
        run_as(
            Role::Manager,
            "set server resources_default.walltime = 2:00:00\n\
             set server resources_max.mem = 8gb\n\
             set queue batch resources_max.walltime = 4:00:00\n\
             set queue batch resources_default.ncpus = 2",
            &mut config,
            &st,
        )
        .unwrap();
        assert_eq!(config.server.default_walltime, 7200);
        assert!(!config.server.resources_default.contains_key("walltime"));
        assert_eq!(config.server.resources_max["mem"], "8gb");
        let batch = &config.queues["batch"];
        assert_eq!(batch.max_walltime, Some(14_400));
        assert!(!batch.resources_max.contains_key("walltime"));
        assert_eq!(batch.resources_default["ncpus"], "2");
        run_as(
            Role::Manager,
            "unset server resources_max.mem\nunset queue batch resources_default.ncpus",
            &mut config,
            &st,
        )
        .unwrap();
        assert!(config.server.resources_max.is_empty());
        assert!(config.queues["batch"].resources_default.is_empty());
    }
}
