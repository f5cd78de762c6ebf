//! sinfo's rows: the nodes of each partition grouped as Slurm groups them.
//! Partition-oriented, a node joins the first row of its partition whose
//! first node matches it in what the format shows (its state for `%t`,
//! features for `%f`, GRES for `%G`, reason for `%E`; with `-e` also CPUs,
//! memory, load); `-N` gives every node of every partition a row. Rows
//! come in partition order, then by state (Slurm's `#P,-t`); `-N` sorts by
//! node name (numbers compared as numbers).

use std::cmp::Ordering;

use super::view::{Cluster, NodeState, SlurmNode, SlurmPartition};

/// One line of sinfo: a partition and some of its nodes (none when the
/// partition has none to show).
#[derive(Clone, Debug)]
pub struct Row<'a> {
    pub partition: &'a SlurmPartition,
    pub nodes: Vec<&'a SlurmNode>,
}

/// What a node must share with a row's first node to join it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Matching {
    pub state: bool,
    pub features: bool,
    pub gres: bool,
    pub reason: bool,
    /// `-e`: CPUs, memory and load too.
    pub exact: bool,
}

impl Matching {
    fn joins(&self, row: &SlurmNode, node: &SlurmNode) -> bool {
        (!self.state || row.state.long() == node.state.long())
            && (!self.features || row.features == node.features)
            && (!self.gres || row.gpus == node.gpus)
            && (!self.reason || row.reason == node.reason)
            && (!self.exact
                || (row.cpus == node.cpus && row.mem_mb == node.mem_mb && row.load == node.load))
    }
}

/// Which nodes and partitions to show.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// `-p`: these partitions only.
    pub partitions: Vec<String>,
    /// `-n`: these nodes only.
    pub nodes: Vec<String>,
    /// `-t`: nodes in one of these states.
    pub states: Vec<StateWord>,
    /// `-r`: nodes whose agent answers.
    pub responding: bool,
}

impl Filter {
    fn filtering_nodes(&self) -> bool {
        !self.nodes.is_empty() || !self.states.is_empty() || self.responding
    }

    fn keeps(&self, node: &SlurmNode) -> bool {
        (self.nodes.is_empty() || self.nodes.contains(&node.name))
            && (self.states.is_empty() || self.states.iter().any(|s| s.matches(&node.state)))
            && (!self.responding || !node.state.no_respond)
    }
}

/// A state `-t` names, as Slurm reads it (a base or a flag; a prefix of
/// the name will do).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateWord {
    All,
    Idle,
    Allocated,
    Mixed,
    Down,
    Drain,
    Drained,
    Draining,
    Reserved,
    NoRespond,
}

impl StateWord {
    /// The names `-t` takes, as Slurm lists them.
    pub const NAMES: &'static str = "all, idle, allocated (alloc), mixed (mix), down, drain, \
        drained, draining (drng), reserved (resv), no_respond";

    pub fn parse(word: &str) -> Option<StateWord> {
        let w = word.trim().to_ascii_lowercase();
        if w.is_empty() {
            return None;
        }
        let is = |name: &str| name.starts_with(&w);
        Some(match () {
            _ if w == "all" => StateWord::All,
            _ if is("idle") => StateWord::Idle,
            _ if is("allocated") || w == "alloc" => StateWord::Allocated,
            _ if is("mixed") => StateWord::Mixed,
            _ if is("down") => StateWord::Down,
            _ if w == "drain" => StateWord::Drain,
            _ if is("drained") => StateWord::Drained,
            _ if is("draining") || w == "drng" => StateWord::Draining,
            _ if is("reserved") || w == "resv" => StateWord::Reserved,
            _ if is("no_respond") => StateWord::NoRespond,
            _ => return None,
        })
    }

    fn matches(&self, s: &NodeState) -> bool {
        use super::view::Base;
        let busy = matches!(s.base, Base::Allocated | Base::Mixed);
        match self {
            StateWord::All => true,
            StateWord::Idle => s.base == Base::Idle,
            StateWord::Allocated => s.base == Base::Allocated,
            StateWord::Mixed => s.base == Base::Mixed,
            StateWord::Down => s.base == Base::Down,
            StateWord::Drain => s.drain,
            StateWord::Drained => s.drain && !busy,
            StateWord::Draining => s.drain && busy,
            StateWord::Reserved => s.reserved,
            StateWord::NoRespond => s.no_respond,
        }
    }
}

/// The rows of `cluster` as sinfo prints them.
pub fn rows<'a>(
    cluster: &'a Cluster,
    filter: &Filter,
    matching: Matching,
    node_oriented: bool,
) -> Vec<Row<'a>> {
    let mut rows: Vec<(usize, Row<'a>)> = Vec::new();
    for (index, partition) in cluster.partitions.iter().enumerate() {
        if !filter.partitions.is_empty() && !filter.partitions.contains(&partition.name) {
            continue;
        }
        let nodes: Vec<&SlurmNode> = cluster
            .nodes_of(partition)
            .into_iter()
            .filter(|n| filter.keeps(n))
            .collect();
        if node_oriented {
            rows.extend(nodes.into_iter().map(|n| {
                (
                    index,
                    Row {
                        partition,
                        nodes: vec![n],
                    },
                )
            }));
            continue;
        }
        let first = rows.len();
        if nodes.is_empty() && (partition.nodes.is_empty() || filter.filtering_nodes()) {
            rows.push((
                index,
                Row {
                    partition,
                    nodes: Vec::new(),
                },
            ));
        }
        for node in nodes {
            match rows[first..]
                .iter_mut()
                .find(|(_, row)| matching.joins(row.nodes[0], node))
            {
                Some((_, row)) => row.nodes.push(node),
                None => rows.push((
                    index,
                    Row {
                        partition,
                        nodes: vec![node],
                    },
                )),
            }
        }
    }
    if node_oriented {
        rows.sort_by(|(_, a), (_, b)| natural(&a.nodes[0].name, &b.nodes[0].name));
    } else {
        let state = |row: &Row| row.nodes.first().map_or(0, |n| n.state.number());
        rows.sort_by(|(ia, a), (ib, b)| ia.cmp(ib).then(state(b).cmp(&state(a))));
    }
    rows.into_iter().map(|(_, row)| row).collect()
}

/// Names compared as Slurm's hostlists compare them: at the first
/// difference, numbers by value.
pub fn natural(a: &str, b: &str) -> Ordering {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    let same = ab.iter().zip(bb).take_while(|(x, y)| x == y).count();
    let number = |s: &[u8]| -> Option<u64> {
        let digits: String = s
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .map(|&c| c as char)
            .collect();
        digits.parse().ok()
    };
    match (number(&ab[same..]), number(&bb[same..])) {
        (Some(x), Some(y)) if same < ab.len() && same < bb.len() => x.cmp(&y),
        _ => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::super::view::{Avail, Base};
    use super::*;

    fn node(name: &str, base: Base, drain: bool) -> SlurmNode {
        SlurmNode {
            name: name.into(),
            host: "h".into(),
            node_set: "s".into(),
            state: NodeState {
                base,
                drain,
                reserved: false,
                no_respond: false,
            },
            cpus: 2,
            cpus_alloc: if base == Base::Idle { 0 } else { 2 },
            mem_mb: 100,
            mem_alloc_mb: 0,
            gpus: 0,
            gpus_alloc: 0,
            features: Vec::new(),
            reason: String::new(),
            load: Some(0.0),
            exclusive: true,
            partitions: vec!["batch".into()],
        }
    }

    fn partition(name: &str, nodes: &[&str]) -> SlurmPartition {
        SlurmPartition {
            name: name.into(),
            default: false,
            avail: Avail::Up,
            max_time: None,
            default_time: None,
            min_nodes: 0,
            max_nodes: None,
            groups: None,
            priority: 0,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
        }
    }

    fn cluster() -> Cluster {
        Cluster {
            nodes: vec![
                node("n10", Base::Idle, false),
                node("n2", Base::Allocated, false),
                node("n3", Base::Idle, false),
                node("n1", Base::Idle, true),
            ],
            partitions: vec![
                partition("batch", &["n10", "n2", "n3", "n1"]),
                partition("empty", &[]),
            ],
        }
    }

    fn names(rows: &[Row]) -> Vec<String> {
        rows.iter()
            .map(|r| {
                let nodes: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
                format!("{}:{}", r.partition.name, nodes.join(","))
            })
            .collect()
    }

    #[test]
    fn nodes_group_by_state_in_slurms_order() {
        let c = cluster();
        let by_state = Matching {
            state: true,
            ..Matching::default()
        };
        let rows = rows(&c, &Filter::default(), by_state, false);
        // drain (0x202) before alloc (3) before idle (2); then the empty
        // partition's row.
        assert_eq!(
            names(&rows),
            ["batch:n1", "batch:n2", "batch:n10,n3", "empty:"]
        );
        let summary = super::rows(&c, &Filter::default(), Matching::default(), false);
        assert_eq!(names(&summary), ["batch:n10,n2,n3,n1", "empty:"]);
    }

    #[test]
    fn node_oriented_rows_sort_by_name_numbers_as_numbers() {
        let c = cluster();
        let rows = rows(&c, &Filter::default(), Matching::default(), true);
        assert_eq!(
            names(&rows),
            ["batch:n1", "batch:n2", "batch:n3", "batch:n10"]
        );
    }

    #[test]
    fn filters_by_state_name_and_partition() {
        let c = cluster();
        let filter = Filter {
            states: vec![StateWord::parse("idle").unwrap()],
            ..Filter::default()
        };
        let m = Matching {
            state: true,
            ..Matching::default()
        };
        // Slurm's -t idle takes a drained idle node too; a partition with
        // none left still has its row.
        assert_eq!(
            names(&rows(&c, &filter, m, false)),
            ["batch:n1", "batch:n10,n3", "empty:"]
        );
        let filter = Filter {
            partitions: vec!["batch".into()],
            nodes: vec!["n2".into()],
            ..Filter::default()
        };
        assert_eq!(names(&rows(&c, &filter, m, false)), ["batch:n2"]);
        assert_eq!(StateWord::parse("drng"), Some(StateWord::Draining));
        assert_eq!(StateWord::parse("MIX"), Some(StateWord::Mixed));
        assert_eq!(StateWord::parse("zz"), None);
    }
}
