//! `place=`: how PBS Pro lays a job's chunks over hosts.
//!
//! `free` (anywhere), `pack` (all on one host), `scatter` (one chunk per
//! host), `vscatter` (one chunk per node: what qmesh always does, since
//! every chunk gets a node), then how they share: `excl` (no other job on
//! the job's nodes), `shared` (the node set decides), `exclhost` (no other
//! job on the job's hosts; qmesh keeps other jobs off the job's nodes, not
//! the whole host, and says so in the job's comment). `group=RES` (chunks
//! on nodes sharing a value of RES) is accepted and noted: qmesh has no
//! such groups, and the node sets already keep a job on like nodes.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrangement {
    #[default]
    Free,
    Pack,
    Scatter,
    Vscatter,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sharing {
    /// As the node set says.
    #[default]
    Default,
    Shared,
    Excl,
    Exclhost,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    #[serde(default)]
    pub arrangement: Arrangement,
    #[serde(default)]
    pub sharing: Sharing,
    /// `group=RES`, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

impl Place {
    /// `[arrangement][:sharing][:group=RES]`, in any order, as PBS Pro.
    pub fn parse(text: &str) -> Result<Place, String> {
        let mut place = Place::default();
        let mut arranged = false;
        let mut shared = false;
        for word in text.split(':').map(str::trim) {
            let lower = word.to_ascii_lowercase();
            let arrangement = match lower.as_str() {
                "free" => Some(Arrangement::Free),
                "pack" => Some(Arrangement::Pack),
                "scatter" => Some(Arrangement::Scatter),
                "vscatter" => Some(Arrangement::Vscatter),
                _ => None,
            };
            let sharing = match lower.as_str() {
                "shared" => Some(Sharing::Shared),
                "excl" => Some(Sharing::Excl),
                "exclhost" => Some(Sharing::Exclhost),
                _ => None,
            };
            match (arrangement, sharing, lower.strip_prefix("group=")) {
                (Some(a), _, _) if !arranged => {
                    place.arrangement = a;
                    arranged = true;
                }
                (_, Some(s), _) if !shared => {
                    place.sharing = s;
                    shared = true;
                }
                (_, _, Some(group)) if !group.is_empty() && place.group.is_none() => {
                    place.group = Some(group.to_string());
                }
                _ => {
                    return Err(format!(
                        "\"{word}\" in place={text} is not understood; write [free|pack|scatter|vscatter][:excl|shared|exclhost][:group=RESOURCE], each part once"
                    ));
                }
            }
        }
        Ok(place)
    }

    /// Whether it restricts which nodes may run the job.
    pub fn constrains(&self) -> bool {
        matches!(self.arrangement, Arrangement::Pack | Arrangement::Scatter)
            || matches!(self.sharing, Sharing::Excl | Sharing::Exclhost)
    }

    /// Whether the job keeps its nodes to itself on a shared node set.
    pub fn exclusive(&self) -> bool {
        matches!(self.sharing, Sharing::Excl | Sharing::Exclhost)
    }

    /// PBS Pro's form: `scatter:excl`.
    pub fn text(&self) -> String {
        let mut parts = vec![
            match self.arrangement {
                Arrangement::Free => "free",
                Arrangement::Pack => "pack",
                Arrangement::Scatter => "scatter",
                Arrangement::Vscatter => "vscatter",
            }
            .to_string(),
        ];
        match self.sharing {
            Sharing::Default => {}
            Sharing::Shared => parts.push("shared".into()),
            Sharing::Excl => parts.push("excl".into()),
            Sharing::Exclhost => parts.push("exclhost".into()),
        }
        if let Some(group) = &self.group {
            parts.push(format!("group={group}"));
        }
        parts.join(":")
    }

    pub fn is_default(&self) -> bool {
        *self == Place::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_pbs_form() {
        let p = Place::parse("scatter:excl").unwrap();
        assert_eq!(
            (p.arrangement, p.sharing),
            (Arrangement::Scatter, Sharing::Excl)
        );
        assert_eq!(p.text(), "scatter:excl");
        let p = Place::parse("excl").unwrap();
        assert_eq!(
            (p.arrangement, p.sharing),
            (Arrangement::Free, Sharing::Excl)
        );
        let p = Place::parse("pack:group=switch").unwrap();
        assert_eq!(p.group.as_deref(), Some("switch"));
        assert_eq!(p.text(), "pack:group=switch");
        assert!(!Place::parse("vscatter:shared").unwrap().constrains());
        assert!(Place::parse("pack").unwrap().constrains());
    }

    #[test]
    fn nonsense_is_refused_with_the_grammar() {
        for bad in ["scatter:pack", "sideways", "excl:shared", "group="] {
            let err = Place::parse(bad).unwrap_err();
            assert!(err.contains("write [free|pack"), "{bad}: {err}");
        }
    }
}
