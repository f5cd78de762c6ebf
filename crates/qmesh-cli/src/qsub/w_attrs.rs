//! `qsub -W ATTR=VALUE[,ATTR=VALUE...]`: PBS's extended attributes.
//!
//! A `-W` value is a comma list of attributes, but a dependency list or a
//! group list has commas of its own, so a part without `=` continues the
//! attribute before it (`-W depend=afterok:1,afterany:2,umask=022` is two
//! attributes). qsub keeps the attributes' text; the server checks what it
//! can know better (dependencies name jobs, groups need the group file).

/// The `-W` attributes qsub knows, in the order given; later ones win.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WAttrs {
    /// `depend=` lists, in order (they accumulate).
    pub depend: Vec<String>,
    pub umask: Option<String>,
    pub group_list: Option<String>,
    /// `block=true`: qsub waits for the job and exits with its status.
    pub block: Option<bool>,
    /// `sandbox=PRIVATE` (true) or `HOME` (false).
    pub sandbox_private: Option<bool>,
}

impl WAttrs {
    /// `other`'s attributes laid over ours: theirs win; dependencies add up.
    pub fn then(mut self, other: WAttrs) -> WAttrs {
        self.depend.extend(other.depend);
        WAttrs {
            depend: self.depend,
            umask: other.umask.or(self.umask),
            group_list: other.group_list.or(self.group_list),
            block: other.block.or(self.block),
            sandbox_private: other.sandbox_private.or(self.sandbox_private),
        }
    }
}

/// Reads `-W` values.
pub fn parse(values: &[String]) -> Result<WAttrs, String> {
    let mut out = WAttrs::default();
    for value in values {
        let mut attrs: Vec<(String, String)> = Vec::new();
        for part in value.split(',') {
            // A part names an attribute if it is the first, or if it
            // starts with one qsub knows; else it continues the last.
            let named = part
                .split_once('=')
                .map(|(name, val)| (name.trim().to_ascii_lowercase(), val))
                .filter(|(name, _)| attrs.is_empty() || KNOWN.contains(&name.as_str()));
            match (named, attrs.last_mut()) {
                (Some((name, val)), _) => attrs.push((name, val.to_string())),
                (None, Some((_, val))) => {
                    val.push(',');
                    val.push_str(part);
                }
                (None, None) => {
                    return Err(format!(
                        "-W {value}: write ATTRIBUTE=VALUE, e.g. -W depend=afterok:12"
                    ));
                }
            }
        }
        for (name, val) in attrs {
            let val = val.trim().to_string();
            if val.is_empty() {
                return Err(format!("-W {name}= has no value; e.g. {}", example(&name)));
            }
            match name.as_str() {
                "depend" => out.depend.push(val),
                "umask" => out.umask = Some(val),
                "group_list" => out.group_list = Some(val),
                "block" => {
                    out.block = Some(match val.to_ascii_lowercase().as_str() {
                        "true" | "t" | "y" | "yes" | "1" => true,
                        "false" | "f" | "n" | "no" | "0" => false,
                        _ => {
                            return Err(format!("-W block={val}: write block=true or block=false"));
                        }
                    })
                }
                "stagein" | "stageout" => {
                    return Err(format!(
                        "-W {name}: qmesh does not stage files; its jobs see the submit host's file systems. Copy the files in the job script instead (e.g. cp or rsync before the work)"
                    ));
                }
                "sandbox" if val.eq_ignore_ascii_case("home") => out.sandbox_private = Some(false),
                "sandbox" if val.eq_ignore_ascii_case("private") => {
                    out.sandbox_private = Some(true)
                }
                "sandbox" => {
                    return Err(format!(
                        "-W sandbox={val}: write sandbox=PRIVATE (a directory of the job's own under its home, removed at its end) or sandbox=HOME (the start directory)"
                    ));
                }
                _ => {
                    return Err(format!(
                        "-W {name}: unknown attribute; qsub takes -W depend=, umask=, group_list=, block= (stagein and stageout are refused: qmesh does not stage files)"
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// Attributes whose name may follow a comma inside a `-W` value.
const KNOWN: &[&str] = &[
    "depend",
    "umask",
    "group_list",
    "block",
    "stagein",
    "stageout",
    "sandbox",
];

fn example(name: &str) -> &'static str {
    match name {
        "depend" => "-W depend=afterok:12",
        "umask" => "-W umask=022",
        "group_list" => "-W group_list=staff",
        "block" => "-W block=true",
        _ => "-W depend=afterok:12",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(values: &[&str]) -> Result<WAttrs, String> {
        parse(&values.iter().map(|v| v.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn lists_keep_their_commas() {
        let got = w(&[
            "depend=afterok:3:5.srv,afterany:4,umask=022",
            "group_list=g1@h1,g2",
        ])
        .unwrap();
        assert_eq!(got.depend, vec!["afterok:3:5.srv,afterany:4"]);
        assert_eq!(got.umask.as_deref(), Some("022"));
        assert_eq!(got.group_list.as_deref(), Some("g1@h1,g2"));
        assert_eq!(w(&["block=true"]).unwrap().block, Some(true));
    }

    #[test]
    fn what_qmesh_cannot_do_is_refused_with_what_to_do() {
        let err = w(&["stagein=/tmp/in@host:/data/in"]).unwrap_err();
        assert!(err.contains("does not stage files"), "{err}");
        assert_eq!(w(&["sandbox=PRIVATE"]).unwrap().sandbox_private, Some(true));
        let err = w(&["sandbox=ELSEWHERE"]).unwrap_err();
        assert!(err.contains("write sandbox=PRIVATE"), "{err}");
        assert!(w(&["sandbox=HOME"]).is_ok());
        let err = w(&["frob=1"]).unwrap_err();
        assert!(err.contains("unknown attribute"), "{err}");
        let err = w(&["block=maybe"]).unwrap_err();
        assert!(err.contains("block=true"), "{err}");
        assert!(w(&["umask="]).unwrap_err().contains("-W umask=022"));
    }

    #[test]
    fn later_values_win_and_dependencies_add_up() {
        let a = w(&["depend=afterok:1,umask=077"]).unwrap();
        let b = w(&["depend=afterany:2,umask=022"]).unwrap();
        let both = a.then(b);
        assert_eq!(both.depend, vec!["afterok:1", "afterany:2"]);
        assert_eq!(both.umask.as_deref(), Some("022"));
    }
}
