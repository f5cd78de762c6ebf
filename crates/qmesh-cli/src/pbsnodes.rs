//! pbsnodes: the nodes as PBS lists them, and the operator's two levers.
//! `pbsnodes [-a] [NODE...]` prints each node's state, host, set, job and
//! comment; `-l` lists only the nodes out of service (down, offline,
//! draining, drained); `-o NODE... [-C why]` takes nodes offline and `-r
//! NODE...` puts them back. The levers are qmgr's `set node` commands
//! (`qmgr -c "set node n7 state = offline"`), so the rights and the record
//! are the same whichever an operator types.

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::{NodeInfo, NodesReply, NodesRequest, QmgrRequest};

use crate::client::{self, CliError};
use crate::output::{self, Column, Output, Tree};

/// List the nodes and their states; take nodes offline and back.
///
/// States: free, job-busy, down (its agent is not connected), offline (no
/// new job), draining (no new job; its job runs on), drained.
#[derive(Parser, Debug)]
#[command(name = "pbsnodes", version)]
pub struct Args {
    /// Every node (the default when no option is given).
    #[arg(short = 'a', conflicts_with_all = ["list", "offline", "reset"])]
    pub all: bool,
    /// Only the nodes out of service, one line each.
    #[arg(short = 'l', conflicts_with_all = ["offline", "reset"])]
    pub list: bool,
    /// Take the named nodes offline: they take no new job, their jobs run on.
    #[arg(short = 'o', conflicts_with = "reset", requires = "nodes")]
    pub offline: bool,
    /// Put the named nodes back in service.
    #[arg(short = 'r', requires = "nodes")]
    pub reset: bool,
    /// Why, with -o (shown by pbsnodes and qmgr's list node).
    #[arg(short = 'C', visible_short_alias = 'N', value_name = "COMMENT")]
    pub comment: Option<String>,
    /// Print the nodes as JSON.
    #[arg(long)]
    pub json: bool,
    /// PBS's spelling of --json (-F json).
    #[arg(short = 'F', value_name = "FORMAT", value_parser = ["json"])]
    pub format: Option<String>,
    /// Node names.
    #[arg(value_name = "NODE")]
    pub nodes: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    match client::block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => client::fail("pbsnodes", &err),
    }
}

/// The qmgr script `-o` or `-r` stands for.
pub fn lever_script(args: &Args) -> Result<Option<String>, CliError> {
    let names = args.nodes.join(",");
    if args.offline {
        let mut script = format!("set node {names} state = offline");
        if let Some(why) = &args.comment {
            if why.contains(['"', '\n']) {
                return Err(CliError::msg(
                    "a comment may not hold a double quote or a newline",
                ));
            }
            script.push_str(&format!(", comment = \"{why}\""));
        }
        return Ok(Some(script));
    }
    if args.comment.is_some() && !args.reset {
        return Err(CliError::msg(
            "-C goes with -o: pbsnodes -o NODE -C \"why\"",
        ));
    }
    if args.reset {
        return Ok(Some(format!("set node {names} state = free")));
    }
    Ok(None)
}

async fn run(args: Args) -> Result<(), CliError> {
    if let Some(script) = lever_script(&args)? {
        let mut admin = client::admin().await?;
        admin
            .qmgr(QmgrRequest {
                script,
                source: "pbsnodes".into(),
                check_only: false,
            })
            .await?;
        return Ok(());
    }
    let mut jobs = client::jobs().await?;
    let reply = jobs
        .nodes(NodesRequest {
            names: args.nodes.clone(),
            host: String::new(),
        })
        .await?
        .into_inner();
    let json = args.json || args.format.is_some();
    let listing = Listing {
        reply,
        out_of_service_only: args.list,
    };
    output::emit(&listing, json)
        .map_err(|e| CliError::msg(format!("cannot write the node list: {e}")))
}

/// Whether a node is out of service (what `-l` lists).
fn out_of_service(node: &NodeInfo) -> bool {
    node.state.starts_with("down")
        || matches!(
            node.state.as_str(),
            "offline" | "draining" | "drained" | "busy"
        )
}

/// The nodes, ready to print.
pub struct Listing {
    pub reply: NodesReply,
    pub out_of_service_only: bool,
}

impl Listing {
    fn shown(&self) -> impl Iterator<Item = &NodeInfo> {
        self.reply
            .nodes
            .iter()
            .filter(|n| !self.out_of_service_only || out_of_service(n))
    }
}

const SHORT: [Column; 3] = [
    Column::left("NODE"),
    Column::left("STATE"),
    Column::left("COMMENT"),
];

/// A map's entries in name order (the wire's map has none).
fn sorted(map: &std::collections::HashMap<String, String>) -> Vec<(&String, &String)> {
    let mut entries: Vec<(&String, &String)> = map.iter().collect();
    entries.sort();
    entries
}

impl Output for Listing {
    fn text(&self) -> String {
        if self.out_of_service_only {
            let rows: Vec<Vec<String>> = self
                .shown()
                .map(|n| vec![n.name.clone(), n.state.clone(), n.comment.clone()])
                .collect();
            if rows.is_empty() {
                return String::new();
            }
            return output::table(&SHORT, &rows);
        }
        let mut out = String::new();
        for n in self.shown() {
            out.push_str(&n.name);
            out.push('\n');
            out.push_str(&format!("     state = {}\n", n.state));
            out.push_str(&format!("     host = {}\n", n.host));
            out.push_str(&format!("     node_set = {}\n", n.node_set));
            if n.cpus > 0 {
                out.push_str(&format!(
                    "     ncpus = {}\n     load = {}\n",
                    n.cpus, n.load
                ));
            }
            if n.mem > 0 {
                out.push_str(&format!(
                    "     mem = {}\n",
                    qmesh_core::resources::format_size(n.mem)
                ));
            }
            if !n.properties.is_empty() {
                out.push_str(&format!("     properties = {}\n", n.properties.join(",")));
            }
            for (name, value) in sorted(&n.resources_available) {
                out.push_str(&format!("     resources_available.{name} = {value}\n"));
            }
            if n.jobs_per_node > 1 {
                out.push_str(&format!("     jobs_per_node = {}\n", n.jobs_per_node));
            }
            if n.job_ids.len() > 1 {
                out.push_str(&format!("     jobs = {}\n", n.job_ids.join(", ")));
            } else if !n.job_id.is_empty() {
                out.push_str(&format!("     jobs = {} ({})\n", n.job_id, n.job_owner));
            }
            if !n.comment.is_empty() {
                out.push_str(&format!("     comment = {}\n", n.comment));
            }
            out.push('\n');
        }
        out
    }

    fn json(&self) -> Tree {
        let nodes = self
            .shown()
            .map(|n| {
                let mut attrs = vec![
                    ("state".into(), Tree::text(&n.state)),
                    ("host".into(), Tree::text(&n.host)),
                    ("node_set".into(), Tree::text(&n.node_set)),
                    ("up".into(), Tree::Bool(n.up)),
                ];
                if n.cpus > 0 {
                    attrs.push(("ncpus".into(), Tree::int(i64::from(n.cpus))));
                    attrs.push(("load".into(), Tree::Float(n.load)));
                }
                if n.mem > 0 {
                    let mem = qmesh_core::resources::format_size(n.mem);
                    attrs.push(("mem".into(), Tree::text(&mem)));
                }
                if !n.properties.is_empty() {
                    let properties = n.properties.iter().map(Tree::text).collect();
                    attrs.push(("properties".into(), Tree::List(properties)));
                }
                if !n.resources_available.is_empty() {
                    let have = sorted(&n.resources_available)
                        .into_iter()
                        .map(|(name, value)| (name.clone(), Tree::text(value)))
                        .collect();
                    attrs.push(("resources_available".into(), Tree::Map(have)));
                }
                if n.jobs_per_node > 1 {
                    attrs.push((
                        "jobs_per_node".into(),
                        Tree::int(i64::from(n.jobs_per_node)),
                    ));
                }
                if !n.job_id.is_empty() {
                    let ids: Vec<Tree> = if n.job_ids.is_empty() {
                        vec![Tree::text(&n.job_id)]
                    } else {
                        n.job_ids.iter().map(Tree::text).collect()
                    };
                    attrs.push(("jobs".into(), Tree::List(ids)));
                    attrs.push(("job_owner".into(), Tree::text(&n.job_owner)));
                }
                if !n.comment.is_empty() {
                    attrs.push(("comment".into(), Tree::text(&n.comment)));
                }
                (n.name.clone(), Tree::Map(attrs))
            })
            .collect();
        Tree::Map(vec![
            ("pbs_server".into(), Tree::text(&self.reply.server)),
            ("nodes".into(), Tree::Map(nodes)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, state: &str, job: &str, comment: &str) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            node_set: "sp".into(),
            host: "h1".into(),
            up: state != "down",
            job_id: job.into(),
            job_owner: if job.is_empty() { "" } else { "alice" }.into(),
            state: state.into(),
            comment: comment.into(),
            ..NodeInfo::default()
        }
    }

    fn reply() -> NodesReply {
        NodesReply {
            nodes: vec![
                node("n0", "free", "", ""),
                node("n1", "job-busy", "3.srv", ""),
                node("n2", "offline", "", "fan"),
                node("n3", "down", "", ""),
            ],
            server: "srv".into(),
            sets: vec![],
        }
    }

    #[test]
    fn all_nodes_as_pbs_blocks() {
        let text = Listing {
            reply: reply(),
            out_of_service_only: false,
        }
        .text();
        assert!(
            text.starts_with("n0\n     state = free\n     host = h1\n"),
            "{text}"
        );
        assert!(text.contains("n1\n     state = job-busy\n"), "{text}");
        assert!(text.contains("     jobs = 3.srv (alice)\n"), "{text}");
        assert!(text.contains("     comment = fan\n"), "{text}");
    }

    #[test]
    fn a_nodes_site_resources_show_as_resources_available() {
        let mut reply = reply();
        reply.nodes[0]
            .resources_available
            .insert("scratch".into(), "400gb".into());
        reply.nodes[0]
            .resources_available
            .insert("model".into(), "skylake".into());
        let listing = Listing {
            reply,
            out_of_service_only: false,
        };
        let text = listing.text();
        assert!(
            text.contains(
                "     resources_available.model = skylake\n     resources_available.scratch = 400gb\n"
            ),
            "{text}"
        );
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&listing.json()).unwrap()).unwrap();
        assert_eq!(
            doc["nodes"]["n0"]["resources_available"]["scratch"],
            "400gb"
        );
    }

    #[test]
    fn dash_l_lists_only_the_nodes_out_of_service() {
        let listing = Listing {
            reply: reply(),
            out_of_service_only: true,
        };
        let text = listing.text();
        assert!(!text.contains("n0") && !text.contains("n1"), "{text}");
        assert!(text.contains("n2") && text.contains("offline") && text.contains("fan"));
        assert!(text.contains("n3") && text.contains("down"));
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&listing.json()).unwrap()).unwrap();
        assert_eq!(doc["nodes"]["n2"]["comment"], "fan");
        assert!(doc["nodes"].get("n0").is_none());
    }

    #[test]
    fn the_levers_are_qmgr_commands() {
        let args = Args::try_parse_from(["pbsnodes", "-o", "n2", "n3", "-C", "new disk"]).unwrap();
        assert_eq!(
            lever_script(&args).unwrap().unwrap(),
            "set node n2,n3 state = offline, comment = \"new disk\""
        );
        let args = Args::try_parse_from(["pbsnodes", "-r", "n2"]).unwrap();
        assert_eq!(
            lever_script(&args).unwrap().unwrap(),
            "set node n2 state = free"
        );
        assert!(
            Args::try_parse_from(["pbsnodes", "-o"]).is_err(),
            "-o needs a node"
        );
        assert!(Args::try_parse_from(["pbsnodes", "-o", "-r", "n1"]).is_err());
        let args = Args::try_parse_from(["pbsnodes", "-a"]).unwrap();
        assert!(lever_script(&args).unwrap().is_none());
    }
}
