//! Which nodes serve a job whose chunks say where they run: host or node
//! pins (`host=`, `vnode=`, Torque's `nodes=node03+node04`), `place=pack`
//! (all on one host), `place=scatter` (one chunk per host), `place=excl`
//! on a shared set (no other job on its nodes), and GPUs and the site's
//! resources consumed per node on a shared set (no more than a node has
//! free; flag `f`: on the first node only), and nodes or hosts it must not
//! run on (`excludenodes=`, Slurm's `-x`). Counting nodes is not enough for these
//! jobs: the planner asks [`choose`] for concrete nodes among the free ones
//! its profiles allow, and a job it finds none for waits with `Placement`.
//!
//! The choice is greedy, in the pool's order (the planner's preference):
//! pinned chunks first, each taking the first candidate it admits. A pack
//! job tries each host in turn. Greedy can miss an assignment a full
//! matching would find (two chunks each pinned to either of two nodes in
//! a contrived order); such a job waits for the next pass, when the pool
//! differs, and its reservation is counted, as every reservation on a flat
//! set is.

use crate::job::Job;
use crate::node_resources::{Consumed, HostResource};
use crate::resources::{Arrangement, Pin};

/// What a job asks of its nodes beyond their number and attributes, one
/// entry per node in chunk order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Wants<'j> {
    pub pins: Vec<Option<&'j Pin>>,
    pub arrangement: Arrangement,
    /// `place=excl`: its nodes run no other job.
    pub sole: bool,
    /// GPUs it needs on each node.
    pub gpus: u32,
    /// Site resources it uses up on each node (flag `n`).
    pub per_node: Vec<&'j HostResource>,
    /// Site resources it uses up on its first node only (flag `f`),
    /// which that node must have.
    pub first_node: Vec<&'j HostResource>,
    /// Nodes or hosts it must not run on.
    pub avoid: &'j [String],
}

impl<'j> Wants<'j> {
    /// `None` for a job that only needs a number of nodes.
    pub fn of(job: &'j Job) -> Option<Wants<'j>> {
        let layout = job.layout.as_ref();
        let pins: Vec<Option<&Pin>> = match layout {
            Some(l) if l.pinned() => l.per_node().map(|c| c.pin.as_ref()).collect(),
            _ => vec![None; job.nodes as usize],
        };
        let arrangement = layout.map_or(Arrangement::Free, |l| l.place.arrangement);
        let sole = layout.is_some_and(|l| l.place.exclusive());
        let gpus = job.gpus.unwrap_or(0);
        let consumed = |how| -> Vec<&HostResource> {
            job.node_resources
                .iter()
                .filter(|r| r.consumed == how)
                .collect()
        };
        let (per_node, first_node) = (consumed(Consumed::PerNode), consumed(Consumed::FirstNode));
        let avoid: &[String] = layout.map_or(&[], |l| &l.avoid[..]);
        let plain = pins.iter().all(Option::is_none)
            && avoid.is_empty()
            && !matches!(arrangement, Arrangement::Pack | Arrangement::Scatter)
            && !sole
            && gpus == 0
            && per_node.is_empty()
            && first_node.is_empty();
        (!plain).then_some(Wants {
            pins,
            arrangement,
            sole,
            gpus,
            per_node,
            first_node,
            avoid,
        })
    }

    /// Whether a node of a shared set that runs `others` jobs and has
    /// `gpus_free` GPUs no job holds may take this job.
    pub fn fits_shared(&self, others: usize, gpus_free: u32) -> bool {
        !(self.sole && others > 0) && (self.gpus == 0 || gpus_free >= self.gpus)
    }

    /// Whether any node of a set whose nodes all live on `host` (`None`:
    /// on several hosts) serves the job as well as any other, so that the
    /// set's allocator may place it: no pin names anything else, and
    /// `pack`/`scatter` hold or cannot matter there.
    pub fn indifferent_on(&self, host: Option<&str>, nodes: impl Fn(&Pin) -> bool) -> bool {
        let pins_hold = self.pins.iter().flatten().all(|pin| {
            host.is_some_and(|h| matches!(pin, Pin::Host(n) | Pin::Name(n) if n == h)) || nodes(pin)
        });
        let arranged = match self.arrangement {
            Arrangement::Pack => host.is_some(),
            Arrangement::Scatter => self.pins.len() <= 1,
            Arrangement::Free | Arrangement::Vscatter => true,
        };
        pins_hold && arranged
    }

    /// Whether node `node` of host `host` is one the job must not run on.
    pub fn avoids(&self, node: &str, host: &str) -> bool {
        self.avoid.iter().any(|a| a == node || a == host)
    }
}

/// A free node the job could take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Candidate<'a> {
    /// Its index in `State::nodes`.
    pub index: usize,
    pub name: &'a str,
    pub host: &'a str,
    /// Which of the planner's per-set caps it counts against.
    pub set: usize,
    /// Whether it may be the job's first node: it has what the job uses
    /// up there (flag `f`).
    pub first_ok: bool,
}

/// One candidate per entry of `wants`, in entry order (node `i` serves
/// chunk entry `i`), taking at most `caps[set]` nodes of a set; `None`
/// if the pool does not allow it.
pub(crate) fn choose(
    wants: &Wants,
    pool: &[Candidate],
    caps: &[(usize, usize)],
) -> Option<Vec<usize>> {
    if wants.arrangement == Arrangement::Pack {
        let mut hosts: Vec<&str> = Vec::new();
        for c in pool {
            if !hosts.contains(&c.host) {
                hosts.push(c.host);
            }
        }
        return hosts.into_iter().find_map(|host| {
            let on_host: Vec<Candidate> = pool.iter().copied().filter(|c| c.host == host).collect();
            assign(wants, &on_host, caps)
        });
    }
    assign(wants, pool, caps)
}

fn assign(wants: &Wants, pool: &[Candidate], caps: &[(usize, usize)]) -> Option<Vec<usize>> {
    let mut left: Vec<(usize, usize)> = caps.to_vec();
    let mut taken = vec![false; pool.len()];
    let mut hosts_used: Vec<&str> = Vec::new();
    let mut chosen: Vec<Option<usize>> = vec![None; wants.pins.len()];
    // Pinned entries first: they have the fewest candidates.
    let mut order: Vec<usize> = (0..wants.pins.len()).collect();
    order.sort_by_key(|&e| wants.pins[e].is_none());
    for e in order {
        let pin = wants.pins[e];
        let found = pool.iter().enumerate().position(|(k, c)| {
            !taken[k]
                && (e != 0 || c.first_ok)
                && pin.is_none_or(|p| p.admits(c.name, c.host))
                && !wants.avoids(c.name, c.host)
                && (wants.arrangement != Arrangement::Scatter || !hosts_used.contains(&c.host))
                && left.iter().any(|&(s, n)| s == c.set && n > 0)
        })?;
        taken[found] = true;
        let c = pool[found];
        if let Some(cap) = left.iter_mut().find(|(s, _)| *s == c.set) {
            cap.1 -= 1;
        }
        hosts_used.push(c.host);
        chosen[e] = Some(c.index);
    }
    chosen.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::ResourceRequest;

    fn wants_for(resources: &[(&str, &str)]) -> (Vec<Option<Pin>>, Arrangement, bool) {
        let req = ResourceRequest::parse(resources.iter().copied()).unwrap();
        let layout = req.layout.unwrap_or_default();
        let pins: Vec<Option<Pin>> = if layout.chunks.is_empty() {
            vec![None; req.nodes.unwrap_or(1) as usize]
        } else {
            layout.per_node().map(|c| c.pin.clone()).collect()
        };
        (pins, layout.place.arrangement, layout.place.exclusive())
    }

    fn pool<'a>(nodes: &'a [(&'a str, &'a str)]) -> Vec<Candidate<'a>> {
        nodes
            .iter()
            .enumerate()
            .map(|(index, (name, host))| Candidate {
                index,
                name,
                host,
                set: 0,
                first_ok: true,
            })
            .collect()
    }

    fn run(resources: &[(&str, &str)], nodes: &[(&str, &str)]) -> Option<Vec<usize>> {
        let (pins, arrangement, sole) = wants_for(resources);
        let wants = Wants {
            pins: pins.iter().map(Option::as_ref).collect(),
            arrangement,
            sole,
            gpus: 0,
            per_node: Vec::new(),
            first_node: Vec::new(),
            avoid: &[],
        };
        choose(&wants, &pool(nodes), &[(0, nodes.len())])
    }

    const CLUSTER: [(&str, &str); 6] = [
        ("a0", "ha"),
        ("a1", "ha"),
        ("b0", "hb"),
        ("b1", "hb"),
        ("b2", "hb"),
        ("c0", "hc"),
    ];

    #[test]
    fn pins_get_their_nodes_in_chunk_order() {
        assert_eq!(
            run(&[("nodes", "2+c0:ppn=2")], &CLUSTER),
            Some(vec![0, 1, 5])
        );
        assert_eq!(run(&[("nodes", "hb+ha")], &CLUSTER), Some(vec![2, 0]));
        assert_eq!(
            run(&[("select", "2:host=hc")], &CLUSTER),
            None,
            "hc has one node"
        );
        assert_eq!(run(&[("nodes", "zz")], &CLUSTER), None);
    }

    #[test]
    fn pack_takes_one_host_and_scatter_one_node_per_host() {
        assert_eq!(
            run(&[("select", "3"), ("place", "pack")], &CLUSTER),
            Some(vec![2, 3, 4])
        );
        assert_eq!(run(&[("select", "4"), ("place", "pack")], &CLUSTER), None);
        assert_eq!(
            run(&[("select", "3"), ("place", "scatter")], &CLUSTER),
            Some(vec![0, 2, 5])
        );
        assert_eq!(
            run(&[("select", "4"), ("place", "scatter")], &CLUSTER),
            None
        );
    }

    #[test]
    fn caps_per_set_hold() {
        let (pins, arrangement, sole) = wants_for(&[("select", "2")]);
        let wants = Wants {
            pins: pins.iter().map(Option::as_ref).collect(),
            arrangement,
            sole,
            gpus: 0,
            per_node: Vec::new(),
            first_node: Vec::new(),
            avoid: &[],
        };
        let mut p = pool(&CLUSTER);
        p[2].set = 1;
        p[3].set = 1;
        assert_eq!(choose(&wants, &p, &[(0, 1), (1, 1)]), Some(vec![0, 2]));
        assert_eq!(choose(&wants, &p, &[(0, 1), (1, 0)]), None);
    }

    #[test]
    fn plain_jobs_want_nothing_special() {
        let job_wants = |resources: &[(&str, &str)]| {
            let (pins, arrangement, sole) = wants_for(resources);
            pins.iter().all(Option::is_none)
                && !matches!(arrangement, Arrangement::Pack | Arrangement::Scatter)
                && !sole
        };
        assert!(job_wants(&[("nodes", "4")]));
        assert!(job_wants(&[("select", "2:ncpus=4"), ("place", "vscatter")]));
        assert!(!job_wants(&[("select", "2"), ("place", "scatter:excl")]));
    }
}
