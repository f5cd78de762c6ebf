//! Resource requests as users write them: `-l nodes=4`, `-l walltime=1:00:00`,
//! `-l mem=2gb` (PBS), and Torque's `nodes=4:ppn=8`. The NQS forms (`-lP`,
//! `-lT`, `-lM`) are rewritten to these by qsub.

use crate::error::CoreError;
use crate::time::parse_duration;

/// What a job asked for; `None` where it named nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceRequest {
    pub nodes: Option<u32>,
    /// Seconds.
    pub walltime: Option<u64>,
    /// Bytes per node.
    pub mem: Option<u64>,
    /// CPUs per node (`-l ncpus=8`, or Torque's `nodes=4:ppn=8`).
    pub ncpus: Option<u32>,
    /// Node features every node must have (`-l feature=fat`, or Torque's
    /// `nodes=4:fat`).
    pub features: Vec<String>,
}

impl ResourceRequest {
    /// Reads a resource list; a later entry overrides an earlier one, so a
    /// client may send directives first and the command line after them.
    pub fn parse<'a>(
        list: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<ResourceRequest, CoreError> {
        let mut req = ResourceRequest::default();
        for (name, value) in list {
            let name = name.trim();
            let value = value.trim();
            let bad = |why: &str| CoreError::BadResource {
                name: name.to_string(),
                value: value.to_string(),
                why: why.to_string(),
            };
            match name {
                "nodes" | "nodect" => {
                    // Torque: nodes=N[:ppn=M][:feature]...; qmesh allocates
                    // whole nodes, so ppn says what a node must have.
                    let mut parts = value.split(':');
                    let count = parts.next().unwrap_or("");
                    let n: u32 = count
                        .parse()
                        .map_err(|_| bad("write a whole number of nodes, e.g. nodes=4"))?;
                    if n == 0 {
                        return Err(bad("a job needs at least one node"));
                    }
                    req.nodes = Some(n);
                    for part in parts {
                        match part.strip_prefix("ppn=") {
                            Some(ppn) => req.ncpus = Some(parse_cpus(ppn).map_err(|w| bad(&w))?),
                            None => req.features.push(check_feature(part).map_err(|w| bad(&w))?),
                        }
                    }
                }
                "ncpus" => req.ncpus = Some(parse_cpus(value).map_err(|why| bad(&why))?),
                "feature" | "features" => {
                    req.features = value
                        .split([':', ',', '+'])
                        .map(|f| check_feature(f).map_err(|why| bad(&why)))
                        .collect::<Result<_, _>>()?;
                }
                "walltime" => req.walltime = Some(parse_duration(value)?),
                "mem" => req.mem = Some(parse_size(value).map_err(|why| bad(&why))?),
                _ => {
                    return Err(CoreError::UnknownResource {
                        name: name.to_string(),
                    });
                }
            }
        }
        Ok(req)
    }
}

fn parse_cpus(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("write a whole number of CPUs above 0, e.g. ncpus=8".into()),
    }
}

/// A feature name as sites write them: letters, digits, `_`, `-`, `.`.
pub fn check_feature(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("a feature name is empty; write e.g. feature=fat".into());
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(format!(
            "feature \"{name}\" has '{c}'; use letters, digits, _, - and ."
        ));
    }
    Ok(name.to_string())
}

/// PBS sizes: a whole number with an optional unit b, kb, mb, gb, tb (or
/// k, m, g, t), any case, powers of 1024.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| "write a size such as 512mb or 2gb".to_string())?;
    let scale: u64 = match unit {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        "t" | "tb" => 1 << 40,
        other => return Err(format!("unknown unit \"{other}\"; use b, kb, mb, gb or tb")),
    };
    n.checked_mul(scale)
        .ok_or_else(|| "the size is too large".to_string())
}

/// A size the way PBS prints one: the largest unit that divides it.
pub fn format_size(bytes: u64) -> String {
    for (unit, shift) in [("tb", 40), ("gb", 30), ("mb", 20), ("kb", 10)] {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}b")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pbs_and_torque_forms() {
        let req = ResourceRequest::parse([
            ("nodes", "4:ppn=8"),
            ("walltime", "1:30:00"),
            ("mem", "2gb"),
        ])
        .unwrap();
        assert_eq!(req.nodes, Some(4));
        assert_eq!(req.walltime, Some(5400));
        assert_eq!(req.mem, Some(2 << 30));
    }

    #[test]
    fn node_attributes_in_pbs_and_torque_forms() {
        let req = ResourceRequest::parse([("nodes", "2:ppn=16:fat"), ("mem", "32gb")]).unwrap();
        assert_eq!(req.ncpus, Some(16));
        assert_eq!(req.features, vec!["fat".to_string()]);
        let req = ResourceRequest::parse([("feature", "fat:gpu"), ("ncpus", "4")]).unwrap();
        assert_eq!(req.features, vec!["fat".to_string(), "gpu".to_string()]);
        assert_eq!(req.ncpus, Some(4));
        let err = ResourceRequest::parse([("feature", "f@t")]).unwrap_err();
        assert!(err.to_string().contains("'@'"), "{err}");
        assert!(ResourceRequest::parse([("ncpus", "0")]).is_err());
    }

    #[test]
    fn later_entries_win() {
        let req = ResourceRequest::parse([("nodes", "4"), ("nodes", "8")]).unwrap();
        assert_eq!(req.nodes, Some(8));
    }

    #[test]
    fn bad_requests_name_the_resource() {
        let err = ResourceRequest::parse([("nodes", "many")]).unwrap_err();
        assert!(err.to_string().contains("nodes"), "{err}");
        let err = ResourceRequest::parse([("nodes", "0")]).unwrap_err();
        assert!(err.to_string().contains("at least one"), "{err}");
        let err = ResourceRequest::parse([("gpus", "2")]).unwrap_err();
        assert!(
            err.to_string().contains("unknown resource \"gpus\""),
            "{err}"
        );
        let err = ResourceRequest::parse([("walltime", "1:99")]).unwrap_err();
        assert!(err.to_string().contains("bad wall time"), "{err}");
        assert!(parse_size("3pb").is_err());
    }
}
