//! Resources: those PBS Pro and Torque have built in, and those a site
//! defines (`qmgr -c "create resource ngpus type = long, flag = nh"`, PBS
//! Pro's command; Torque has none).
//!
//! A resource has a type, which says how its values are written and
//! compared (`2gb` above `512mb`; `1:00:00` above `30:00`), and PBS Pro's
//! flags, which say where it is consumed (`n`, `f` and `h`: per host; `q`:
//! per queue and server) and who may see it (`r`: users may read it, not
//! ask for it; `i`: invisible to users). Definitions are configuration,
//! kept in [`Config::resources`](crate::server::Config::resources) and printed by `print server` before the
//! queues whose `resources_max.*` name them. The checks of queue limits
//! (`resource_limits.rs`) and of `qsub -l NAME=VALUE` read the types here.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::resources::parse_size;
use crate::time::parse_duration;

/// How a resource's values are written and compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceType {
    Long,
    Float,
    /// `2gb`, `512mb`: bytes.
    Size,
    String,
    /// Comma-separated strings.
    StringArray,
    Boolean,
    /// `[[H:]M:]S`; built-in resources only (walltime, cput), as in PBS.
    Duration,
}

impl ResourceType {
    /// The types `create resource` takes (PBS Pro's).
    pub const SITE: [ResourceType; 6] = [
        ResourceType::Long,
        ResourceType::Float,
        ResourceType::Size,
        ResourceType::String,
        ResourceType::StringArray,
        ResourceType::Boolean,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ResourceType::Long => "long",
            ResourceType::Float => "float",
            ResourceType::Size => "size",
            ResourceType::String => "string",
            ResourceType::StringArray => "string_array",
            ResourceType::Boolean => "boolean",
            ResourceType::Duration => "duration",
        }
    }

    /// A type as `create resource ... type = T` writes it.
    pub fn parse(text: &str) -> Result<ResourceType, String> {
        let lower = text.trim().to_ascii_lowercase();
        ResourceType::SITE
            .into_iter()
            .find(|t| t.as_str() == lower)
            .ok_or_else(|| {
                format!(
                    "\"{text}\" is not a resource type; write one of {}",
                    ResourceType::SITE.map(|t| t.as_str()).join(", ")
                )
            })
    }

    /// Whether amounts of it can be consumed (the flags n, f and q).
    pub fn is_consumable(self) -> bool {
        matches!(
            self,
            ResourceType::Long | ResourceType::Float | ResourceType::Size | ResourceType::Duration
        )
    }

    /// Checks a value written for a resource of this type.
    pub fn check(self, value: &str) -> Result<(), String> {
        let value = value.trim();
        match self {
            ResourceType::Long => value
                .parse::<i64>()
                .map(|_| ())
                .map_err(|_| format!("\"{value}\" is not a whole number")),
            ResourceType::Float => match value.parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(()),
                _ => Err(format!("\"{value}\" is not a number")),
            },
            ResourceType::Size => parse_size(value).map(|_| ()),
            ResourceType::Duration => parse_duration(value).map(|_| ()).map_err(|e| e.to_string()),
            ResourceType::Boolean => crate::resources::parse_bool("the value", value).map(|_| ()),
            ResourceType::String | ResourceType::StringArray => {
                if value.is_empty() {
                    Err("the value is empty".into())
                } else {
                    Ok(())
                }
            }
        }
    }

    /// A value of a consumable type as a number to add up: a long or a
    /// float as it is, a size in bytes, a duration in seconds; `None` for
    /// other types and for values that do not parse.
    pub fn amount(self, value: &str) -> Option<f64> {
        let value = value.trim();
        match self {
            ResourceType::Long => value.parse::<i64>().ok().map(|n| n as f64),
            ResourceType::Float => value.parse::<f64>().ok().filter(|x| x.is_finite()),
            ResourceType::Size => parse_size(value).ok().map(|n| n as f64),
            ResourceType::Duration => parse_duration(value).ok().map(|n| n as f64),
            ResourceType::String | ResourceType::StringArray | ResourceType::Boolean => None,
        }
    }

    /// An amount of this type as PBS writes one: `4`, `1.5`, `400gb`,
    /// `01:00:00`.
    pub fn show_amount(self, amount: f64) -> String {
        match self {
            ResourceType::Size => crate::resources::format_size(amount.max(0.0) as u64),
            ResourceType::Duration => crate::time::format_hms(amount.max(0.0) as u64),
            ResourceType::Long => format!("{}", amount as i64),
            _ => format!("{amount}"),
        }
    }

    /// Orders two values of this type; `None` for strings and booleans,
    /// which are equal or not, and for values that do not parse.
    pub fn compare(self, a: &str, b: &str) -> Option<Ordering> {
        let (a, b) = (a.trim(), b.trim());
        match self {
            ResourceType::Long => Some(a.parse::<i64>().ok()?.cmp(&b.parse::<i64>().ok()?)),
            ResourceType::Float => a.parse::<f64>().ok()?.partial_cmp(&b.parse::<f64>().ok()?),
            ResourceType::Size => Some(parse_size(a).ok()?.cmp(&parse_size(b).ok()?)),
            ResourceType::Duration => Some(parse_duration(a).ok()?.cmp(&parse_duration(b).ok()?)),
            ResourceType::String | ResourceType::StringArray | ResourceType::Boolean => None,
        }
    }
}

impl fmt::Display for ResourceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The resources PBS Pro and Torque define themselves, with their types.
/// `nodes` is Torque's node spec (`nodes=2:ppn=8`) as well as a count.
pub const BUILT_IN: &[(&str, ResourceType)] = &[
    ("arch", ResourceType::String),
    ("cput", ResourceType::Duration),
    ("file", ResourceType::Size),
    ("host", ResourceType::String),
    ("max_walltime", ResourceType::Duration),
    ("mem", ResourceType::Size),
    ("min_walltime", ResourceType::Duration),
    ("mpiprocs", ResourceType::Long),
    ("naccelerators", ResourceType::Long),
    ("ncpus", ResourceType::Long),
    ("ngpus", ResourceType::Long),
    ("nice", ResourceType::Long),
    ("nodect", ResourceType::Long),
    ("nodes", ResourceType::String),
    ("ompthreads", ResourceType::Long),
    ("pcput", ResourceType::Duration),
    ("place", ResourceType::String),
    ("pmem", ResourceType::Size),
    ("procs", ResourceType::Long),
    ("pvmem", ResourceType::Size),
    ("select", ResourceType::String),
    ("software", ResourceType::String),
    ("vmem", ResourceType::Size),
    ("vnode", ResourceType::String),
    ("walltime", ResourceType::Duration),
];

/// The type of a built-in resource.
pub fn built_in(name: &str) -> Option<ResourceType> {
    BUILT_IN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, kind)| kind)
}

/// PBS Pro's resource flags, in the order qmesh writes them.
const FLAGS: &str = "nfhqmri";

/// A site-defined resource (`create resource NAME type = T, flag = F`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceDef {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ResourceType,
    /// PBS Pro's flags in canonical order (`nh`, `fh`, `q`, `hi`...);
    /// empty: a server- or queue-level resource nothing consumes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub flags: String,
}

impl ResourceDef {
    /// A new definition: PBS makes a resource `long` unless told.
    pub fn new(name: &str) -> ResourceDef {
        ResourceDef {
            name: name.to_string(),
            kind: ResourceType::Long,
            flags: String::new(),
        }
    }

    /// Whether jobs consume it per host (flag `n` or `f`).
    pub fn per_host(&self) -> bool {
        self.flags.contains(['n', 'f'])
    }

    /// Whether it is consumed per queue and server (flag `q`): a job-wide
    /// amount, such as licences, that the server's and its queue's
    /// `resources_available` bound.
    pub fn per_queue(&self) -> bool {
        self.flags.contains('q')
    }

    /// Whether nodes have it (flag `h`): a chunk's or job's request is
    /// matched against their node set's `resources_available`.
    pub fn host_level(&self) -> bool {
        self.flags.contains('h')
    }

    /// Whether users may ask for it (neither `r` nor `i`).
    pub fn requestable(&self) -> bool {
        !self.flags.contains(['r', 'i'])
    }
}

/// Checks a resource name as PBS does: a letter, then letters, digits, `_`
/// and `-`.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        && name.len() <= 256;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "bad resource name \"{name}\": use letters, digits, _ and -, a letter first"
        ))
    }
}

/// Reads PBS Pro's flags (`nh`, `fh`, `q`, `h`, `i`, `r`, `m`, and their
/// combinations) for a resource of type `kind`, into canonical order.
pub fn parse_flags(text: &str, kind: ResourceType) -> Result<String, String> {
    let text = text.trim();
    if let Some(c) = text.chars().find(|c| !FLAGS.contains(*c)) {
        return Err(format!(
            "'{c}' is not a resource flag; flags are n and f (consumed per host, with h), \
             h (host level), q (consumed per queue and server), m (sent to the hosts), \
             r (read only to users) and i (invisible to users), e.g. flag = nh"
        ));
    }
    let has = |c: char| text.contains(c);
    if (has('n') || has('f')) && !has('h') {
        return Err(format!(
            "flag \"{text}\": n and f say a resource is consumed per host and need h with \
             them: write nh or fh"
        ));
    }
    if has('n') && has('f') {
        return Err(format!(
            "flag \"{text}\": a resource is consumed on every host (nh) or on the first (fh), \
             not both"
        ));
    }
    if has('r') && has('i') {
        return Err(format!(
            "flag \"{text}\": r (read only) and i (invisible) exclude each other; write one"
        ));
    }
    if (has('n') || has('f') || has('q')) && !kind.is_consumable() {
        return Err(format!(
            "flag \"{text}\": only long, float and size resources are consumed (n, f, q); \
             \"{kind}\" is not"
        ));
    }
    Ok(FLAGS.chars().filter(|c| has(*c)).collect())
}

/// Where a job uses a host-level resource up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Consumed {
    /// Flag `h` alone: matched, not used up.
    #[default]
    No,
    /// Flag `n`: on each of its nodes.
    PerNode,
    /// Flag `f`: on its first node only.
    FirstNode,
}

impl Consumed {
    fn is_no(&self) -> bool {
        *self == Consumed::No
    }
}

/// A host-level resource a job asks of its nodes: `scratch=100gb`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostResource {
    pub name: String,
    /// As written (the largest the chunks ask, for a number).
    pub value: String,
    pub kind: ResourceType,
    #[serde(default, skip_serializing_if = "Consumed::is_no")]
    pub consumed: Consumed,
}

impl HostResource {
    /// Whether a node whose set has `have` (`None`: the set does not
    /// name it) serves the request.
    pub fn served_by(&self, have: Option<&str>) -> bool {
        let truth = |v: &str| crate::resources::parse_bool(&self.name, v.trim()).ok();
        match self.kind {
            ResourceType::Boolean => {
                truth(&self.value) == Some(have.and_then(truth).unwrap_or(false))
            }
            ResourceType::String => have.is_some_and(|h| h.trim() == self.value.trim()),
            ResourceType::StringArray => have.is_some_and(|h| {
                let items: Vec<&str> = h.split(',').map(str::trim).collect();
                self.value
                    .split(',')
                    .map(str::trim)
                    .all(|want| items.contains(&want))
            }),
            kind => have.is_some_and(|h| {
                kind.compare(h, &self.value)
                    .is_some_and(|o| o != std::cmp::Ordering::Less)
            }),
        }
    }

    /// What one node of the job uses up, for a consumed resource.
    pub fn amount(&self) -> f64 {
        self.kind.amount(&self.value).unwrap_or(0.0)
    }

    /// Whether the first node of the job uses it up (flag `n` or `f`),
    /// and whether every node does (`n`).
    pub fn consumed_on(&self, first: bool) -> bool {
        match self.consumed {
            Consumed::No => false,
            Consumed::PerNode => true,
            Consumed::FirstNode => first,
        }
    }

    /// Whether every node of the job must have it (all but flag `f`).
    pub fn on_every_node(&self) -> bool {
        self.consumed != Consumed::FirstNode
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Config;

    #[test]
    fn types_check_and_compare_values() {
        assert!(ResourceType::Size.check("2gb").is_ok());
        assert!(ResourceType::Size.check("2 apples").is_err());
        assert!(ResourceType::Long.check("-3").is_ok());
        assert!(ResourceType::Long.check("3.5").is_err());
        assert!(ResourceType::Boolean.check("True").is_ok());
        assert!(ResourceType::Boolean.check("maybe").is_err());
        assert_eq!(
            ResourceType::Size.compare("2gb", "512mb"),
            Some(Ordering::Greater)
        );
        assert_eq!(
            ResourceType::Duration.compare("30:00", "1:00:00"),
            Some(Ordering::Less)
        );
        assert_eq!(
            ResourceType::Long.compare("16", "16"),
            Some(Ordering::Equal)
        );
        assert_eq!(ResourceType::String.compare("a", "b"), None);
        assert_eq!(
            ResourceType::parse("String_Array"),
            Ok(ResourceType::StringArray)
        );
        let err = ResourceType::parse("duration").unwrap_err();
        assert!(err.contains("long, float, size"), "{err}");
    }

    #[test]
    fn flags_follow_pbs_pro() {
        assert_eq!(parse_flags("hn", ResourceType::Long).unwrap(), "nh");
        assert_eq!(parse_flags("fh", ResourceType::Size).unwrap(), "fh");
        assert_eq!(parse_flags("q", ResourceType::Float).unwrap(), "q");
        assert_eq!(parse_flags("hi", ResourceType::Boolean).unwrap(), "hi");
        assert_eq!(parse_flags("", ResourceType::String).unwrap(), "");
        for (flags, kind, says) in [
            ("n", ResourceType::Long, "need h"),
            ("nfh", ResourceType::Long, "not both"),
            ("ri", ResourceType::Long, "exclude"),
            ("nh", ResourceType::Boolean, "only long, float and size"),
            ("x", ResourceType::Long, "'x' is not a resource flag"),
        ] {
            let err = parse_flags(flags, kind).unwrap_err();
            assert!(err.contains(says), "{flags}: {err}");
        }
    }

    #[test]
    fn types_come_from_the_built_ins_then_the_site() {
        let mut config = Config::default();
        assert_eq!(config.resource_type("mem"), Some(ResourceType::Size));
        assert_eq!(config.resource_type("ngpus"), Some(ResourceType::Long));
        assert_eq!(config.resource_type("nmics"), None);
        let err = config
            .known_resource("resources_max.nmics", "nmics")
            .unwrap_err();
        assert!(
            err.contains("unknown resource \"nmics\"") && err.contains("create resource"),
            "{err}"
        );
        let mut def = ResourceDef::new("nmics");
        def.flags = "nh".into();
        config.resources.insert("nmics".into(), def);
        assert_eq!(config.resource_type("nmics"), Some(ResourceType::Long));
        assert!(config.resource_def("nmics").unwrap().per_host());
        assert!(config.resource_names().contains("defined here: nmics"));
        assert!(check_name("nmics").is_ok());
        assert!(check_name("9lives").is_err());
    }
}
