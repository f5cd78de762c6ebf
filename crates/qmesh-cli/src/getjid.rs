//! getjid: on a node, which job holds it. Named nodes are looked up as
//! they are; with no names, the nodes of the job it runs in (its node
//! file, when `QMESH_NODEFILE` or `PBS_NODEFILE` is set), else the nodes of
//! this host. Prints the job ids, one per line, as scripts want them.

use std::collections::BTreeSet;
use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::{NodeInfo, NodesReply, NodesRequest};

use crate::client::{self, CliError};
use crate::output::{self, Output, Tree};

/// Print the id of the job holding a node.
///
/// Without NODE: the nodes of the job getjid runs in (QMESH_NODEFILE or
/// PBS_NODEFILE), else the nodes of this host (-H names another host).
/// Prints each job id once; exits 1 if no job holds any of the nodes.
#[derive(Parser, Debug)]
#[command(name = "getjid", version)]
pub struct Args {
    /// The nodes of this host instead of this one's.
    #[arg(
        short = 'H',
        long = "host",
        value_name = "HOST",
        conflicts_with = "nodes"
    )]
    pub host: Option<String>,
    /// Print every node with its job as JSON.
    #[arg(long)]
    pub json: bool,
    /// Node names.
    #[arg(value_name = "NODE")]
    pub nodes: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    match client::block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => client::fail("getjid", &err),
    }
}

/// What to ask for: named nodes, a job's node file, or a host.
fn request(args: &Args) -> Result<NodesRequest, CliError> {
    if !args.nodes.is_empty() {
        return Ok(NodesRequest {
            names: args.nodes.clone(),
            host: String::new(),
        });
    }
    if let Some(host) = &args.host {
        return Ok(NodesRequest {
            names: Vec::new(),
            host: host.clone(),
        });
    }
    for var in ["QMESH_NODEFILE", "PBS_NODEFILE"] {
        if let Some(path) = std::env::var_os(var).filter(|p| !p.is_empty()) {
            let bytes = client::read_named_file(std::path::Path::new(&path), "node file")?;
            let names = node_file(&String::from_utf8_lossy(&bytes));
            if !names.is_empty() {
                return Ok(NodesRequest {
                    names,
                    host: String::new(),
                });
            }
        }
    }
    Ok(NodesRequest {
        names: Vec::new(),
        host: client::hostname(),
    })
}

/// The distinct node names of a node file, in order.
fn node_file(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && seen.insert(l.to_string()))
        .map(str::to_string)
        .collect()
}

async fn run(args: Args) -> Result<bool, CliError> {
    let request = request(&args)?;
    let host = request.host.clone();
    let mut jobs = client::jobs().await?;
    let reply = jobs.nodes(request).await?.into_inner();
    if reply.nodes.is_empty() && !host.is_empty() {
        return Err(CliError::msg(format!(
            "host \"{host}\" has no nodes in qmesh's node sets; name a node: getjid NODE"
        )));
    }
    let held = reply.nodes.iter().any(|n| !n.job_id.is_empty());
    output::emit(&Holders(reply), args.json)
        .map_err(|e| CliError::msg(format!("cannot write the job ids: {e}")))?;
    if !held && !args.json {
        eprintln!("getjid: no job holds {}", nodes_phrase(&args.nodes));
    }
    Ok(held)
}

fn nodes_phrase(named: &[String]) -> String {
    match named {
        [] => "the nodes of this host".to_string(),
        [one] => format!("node {one}"),
        many => format!("nodes {}", many.join(", ")),
    }
}

/// The nodes and their jobs.
struct Holders(NodesReply);

impl Output for Holders {
    fn text(&self) -> String {
        let mut seen = BTreeSet::new();
        self.0
            .nodes
            .iter()
            .filter(|n| !n.job_id.is_empty() && seen.insert(n.job_id.clone()))
            .map(|n| format!("{}\n", n.job_id))
            .collect()
    }

    fn json(&self) -> Tree {
        let node = |n: &NodeInfo| {
            Tree::Map(vec![
                ("node".into(), Tree::text(&n.name)),
                ("node_set".into(), Tree::text(&n.node_set)),
                ("host".into(), Tree::text(&n.host)),
                ("up".into(), Tree::Bool(n.up)),
                (
                    "job_id".into(),
                    if n.job_id.is_empty() {
                        Tree::Null
                    } else {
                        Tree::text(&n.job_id)
                    },
                ),
                ("owner".into(), Tree::text(&n.job_owner)),
            ])
        };
        Tree::List(self.0.nodes.iter().map(node).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, job: &str) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            node_set: "sp".into(),
            host: "h".into(),
            up: true,
            job_id: job.into(),
            job_owner: if job.is_empty() { "" } else { "alice" }.into(),
            ..NodeInfo::default()
        }
    }

    #[test]
    fn each_job_once_and_free_nodes_not_at_all() {
        let reply = NodesReply {
            nodes: vec![
                node("sp00", "3.srv"),
                node("sp01", "3.srv"),
                node("sp02", ""),
                node("sp03", "4.srv"),
            ],
            server: "srv".into(),
            sets: vec![],
        };
        assert_eq!(Holders(reply.clone()).text(), "3.srv\n4.srv\n");
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&Holders(reply).json()).unwrap()).unwrap();
        assert!(doc[2]["job_id"].is_null());
        assert_eq!(doc[3]["owner"], "alice");
    }

    #[test]
    fn a_node_file_names_each_node_once() {
        assert_eq!(
            node_file("sp00\nsp01\nsp00\n\n sp02 \n"),
            ["sp00", "sp01", "sp02"]
        );
    }

    #[test]
    fn named_nodes_beat_the_environment() {
        let args = Args::try_parse_from(["getjid", "sp05"]).unwrap();
        assert_eq!(request(&args).unwrap().names, ["sp05"]);
        let args = Args::try_parse_from(["getjid", "-H", "node7"]).unwrap();
        assert_eq!(request(&args).unwrap().host, "node7");
        assert!(Args::try_parse_from(["getjid", "-H", "x", "sp05"]).is_err());
    }
}
