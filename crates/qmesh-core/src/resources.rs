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
                    // Torque: nodes=N[:ppn=M][:feature]; qmesh allocates whole nodes.
                    let count = value.split(':').next().unwrap_or("");
                    let n: u32 = count
                        .parse()
                        .map_err(|_| bad("write a whole number of nodes, e.g. nodes=4"))?;
                    if n == 0 {
                        return Err(bad("a job needs at least one node"));
                    }
                    req.nodes = Some(n);
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
