//! Chunks: what PBS Pro's `select=` and Torque's `nodes=` ask of each node.
//!
//! PBS Pro writes a job as chunks, `select=2:ncpus=8:mpiprocs=8+1:ncpus=1`,
//! and a chunk is "a node's worth" of CPUs and memory. qmesh allocates whole
//! nodes (space sharing, the seeds' machines), so every chunk gets a node of
//! its own: the job takes as many nodes as it has chunks, and every node it
//! takes must have what the largest chunk asks for (a node set is
//! homogeneous, so that costs nothing on a set of equal nodes). What a chunk
//! says of processes and threads shapes the job's node file (`mpiprocs`
//! lines per node, as PBS Pro writes `PBS_NODEFILE`) and its environment
//! (`NCPUS`, `OMP_NUM_THREADS`). Torque's `nodes=2:ppn=8:ib+node07` is read
//! into the same chunks, as PBS Pro itself converts it.

use serde::{Deserialize, Serialize};

use super::place::Place;
use super::{check_feature, format_size, parse_size};

/// Where a chunk must run, when the job names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pin {
    /// `host=NAME` (PBS Pro): a node of that host.
    Host(String),
    /// `vnode=NAME` (PBS Pro): that node.
    Node(String),
    /// Torque's `nodes=NAME`: the node of that name, or a node of the host
    /// of that name (Torque's nodes are hosts; qmesh's hosts may hold many).
    Name(String),
}

impl Pin {
    pub fn name(&self) -> &str {
        match self {
            Pin::Host(n) | Pin::Node(n) | Pin::Name(n) => n,
        }
    }

    /// Whether a node `node` of host `host` is where the chunk may run.
    pub fn admits(&self, node: &str, host: &str) -> bool {
        match self {
            Pin::Host(h) => h == host,
            Pin::Node(n) => n == node,
            Pin::Name(n) => n == node || n == host,
        }
    }
}

/// One kind of chunk, and how many of it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    pub count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ncpus: Option<u32>,
    /// Bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vmem: Option<u64>,
    /// Processes: lines of the node file for this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpiprocs: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ompthreads: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<Pin>,
    /// Node features (Torque properties, PBS Pro boolean resources).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    /// Other resources as written (`arch=linux`), kept for qstat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other: Vec<(String, String)>,
}

impl Chunk {
    /// Lines in the node file for each node of this chunk: `mpiprocs`,
    /// else one (PBS Pro's default).
    pub fn procs(&self) -> u32 {
        self.mpiprocs.unwrap_or(1)
    }

    /// CPUs it asks for on its node (1 when it names none, as PBS).
    pub fn cpus(&self) -> u32 {
        self.ncpus.unwrap_or(1)
    }

    /// `OMP_NUM_THREADS` on its node: `ompthreads`; else, for a chunk
    /// that names its processes, the CPUs shared among them (so a Torque
    /// `ppn=8` MPI job runs one thread per rank); else its CPUs (PBS Pro).
    pub fn threads(&self) -> u32 {
        match (self.ompthreads, self.mpiprocs) {
            (Some(t), _) => t,
            (None, Some(p)) if p > 0 => (self.cpus() / p).max(1),
            _ => self.cpus(),
        }
    }

    /// The chunk in PBS Pro's select form: `2:ncpus=8:mpiprocs=8:mem=4gb`.
    pub fn to_select(&self) -> String {
        let mut out = self.count.to_string();
        let mut add = |name: &str, value: String| {
            out.push(':');
            out.push_str(name);
            out.push('=');
            out.push_str(&value);
        };
        add("ncpus", self.cpus().to_string());
        if let Some(p) = self.mpiprocs {
            add("mpiprocs", p.to_string());
        }
        if let Some(t) = self.ompthreads {
            add("ompthreads", t.to_string());
        }
        if let Some(m) = self.mem {
            add("mem", format_size(m));
        }
        if let Some(m) = self.vmem {
            add("vmem", format_size(m));
        }
        if let Some(g) = self.gpus {
            add("ngpus", g.to_string());
        }
        match &self.pin {
            Some(Pin::Host(h)) | Some(Pin::Name(h)) => add("host", h.clone()),
            Some(Pin::Node(n)) => add("vnode", n.clone()),
            None => {}
        }
        for f in &self.features {
            add(f, "True".to_string());
        }
        for (name, value) in &self.other {
            add(name, value.clone());
        }
        out
    }
}

/// How a job's chunks are laid out: the chunks, and `place=`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Empty: the job's nodes are plain (`nodes=N`), only `place` says more.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<Chunk>,
    #[serde(default)]
    pub place: Place,
    /// Nodes or hosts the job must not run on (Moab's and Torque's
    /// `excludenodes=n1:n2`, Slurm's `sbatch -x`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub avoid: Vec<String>,
}

impl Layout {
    /// Nodes the chunks take (0 when there are none).
    pub fn nodes(&self) -> u32 {
        self.chunks
            .iter()
            .fold(0, |n: u32, c| n.saturating_add(c.count))
    }

    /// The chunk each node serves, in order: the first `count` nodes of
    /// the job serve the first chunk, and so on.
    pub fn per_node(&self) -> impl Iterator<Item = &Chunk> + '_ {
        self.chunks
            .iter()
            .flat_map(|c| std::iter::repeat_n(c, c.count as usize))
    }

    /// Whether some chunk names its node or host.
    pub fn pinned(&self) -> bool {
        self.chunks.iter().any(|c| c.pin.is_some())
    }

    /// Whether the scheduler must choose the nodes with care: pins, all
    /// on one host, one chunk per host.
    pub fn constrains_placement(&self) -> bool {
        self.pinned() || self.place.constrains() || !self.avoid.is_empty()
    }

    /// Whether node `node` of host `host` is one the job must not run on.
    pub fn avoids(&self, node: &str, host: &str) -> bool {
        self.avoid.iter().any(|a| a == node || a == host)
    }

    /// The chunks in select form, `+` between kinds.
    pub fn select_text(&self) -> String {
        self.chunks
            .iter()
            .map(Chunk::to_select)
            .collect::<Vec<_>>()
            .join("+")
    }
}

/// Why a chunk specification was refused: the text to show after the
/// resource name.
pub type ChunkError = String;

/// The most nodes the chunks of one request may ask for together: more
/// than any machine has, and far from the end of a `u32`, so that the
/// sums over chunks cannot overflow.
pub const MAX_NODES: u32 = 1_000_000;

/// PBS Pro: `[N:]res=value[:res=value...][+[N:]...]`.
pub fn parse_select(text: &str) -> Result<Vec<Chunk>, ChunkError> {
    let text = text.trim();
    if text.is_empty() {
        return Err("it is empty; write e.g. select=2:ncpus=8:mem=4gb".into());
    }
    let chunks = text
        .split('+')
        .map(parse_select_chunk)
        .collect::<Result<Vec<_>, _>>()?;
    within_max_nodes(&chunks)?;
    Ok(chunks)
}

/// Refuses chunks that ask for more than [`MAX_NODES`] together.
fn within_max_nodes(chunks: &[Chunk]) -> Result<(), ChunkError> {
    let total: u64 = chunks.iter().map(|c| u64::from(c.count)).sum();
    if total > u64::from(MAX_NODES) {
        return Err(format!(
            "the chunks ask for {total} nodes together; a job may ask for at most {MAX_NODES}"
        ));
    }
    Ok(())
}

fn parse_select_chunk(spec: &str) -> Result<Chunk, ChunkError> {
    let mut parts = spec.split(':').map(str::trim).peekable();
    let mut chunk = Chunk {
        count: 1,
        ..Chunk::default()
    };
    if let Some(first) = parts.peek()
        && !first.contains('=')
    {
        chunk.count = parse_count(first, "chunks")?;
        parts.next();
    }
    for part in parts {
        let Some((name, value)) = part.split_once('=') else {
            return Err(format!(
                "\"{part}\" in chunk \"{spec}\" is not NAME=VALUE; write e.g. 2:ncpus=8"
            ));
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        set_chunk_resource(&mut chunk, &name, value, spec)?;
    }
    Ok(chunk)
}

fn set_chunk_resource(
    chunk: &mut Chunk,
    name: &str,
    value: &str,
    spec: &str,
) -> Result<(), ChunkError> {
    let in_chunk = |why: String| format!("{why} in chunk \"{spec}\"");
    match name {
        "ncpus" => chunk.ncpus = Some(parse_whole(value, "ncpus").map_err(in_chunk)?),
        "mpiprocs" => chunk.mpiprocs = Some(parse_whole(value, "mpiprocs").map_err(in_chunk)?),
        "ompthreads" => {
            chunk.ompthreads = Some(parse_count(value, "ompthreads").map_err(in_chunk)?)
        }
        "ngpus" | "gpus" => chunk.gpus = Some(parse_whole(value, "ngpus").map_err(in_chunk)?),
        "mem" => chunk.mem = Some(parse_size(value).map_err(|w| in_chunk(format!("mem: {w}")))?),
        "vmem" => chunk.vmem = Some(parse_size(value).map_err(|w| in_chunk(format!("vmem: {w}")))?),
        "host" => chunk.pin = Some(Pin::Host(node_name(value).map_err(in_chunk)?)),
        "vnode" => chunk.pin = Some(Pin::Node(node_name(value).map_err(in_chunk)?)),
        _ => {
            // A boolean host resource asks for a feature; anything else is
            // kept as written and checked against the site's resources by
            // the caller (`1` too: it may be an amount, `nmics=1`, which
            // `node_resources::check_chunks` tells from a boolean).
            match value.to_ascii_lowercase().as_str() {
                "true" | "t" | "y" | "yes" => {
                    chunk.features.push(check_feature(name).map_err(in_chunk)?)
                }
                _ => chunk.other.push((name.to_string(), value.to_string())),
            }
        }
    }
    Ok(())
}

/// Torque: `N|NAME[:ppn=P][:gpus=G][:PROPERTY...][+...]`, an optional
/// `#excl` or `#shared` at the end; PBS Pro's `RESOURCE=VALUE` in an
/// element too (`nodes=1:ncpus=16`), as a select chunk takes it.
pub fn parse_nodes_spec(text: &str) -> Result<(Vec<Chunk>, Option<Place>), ChunkError> {
    let (text, suffix) = match text.trim().split_once('#') {
        Some((spec, suffix)) => (spec, Some(suffix.trim().to_ascii_lowercase())),
        None => (text.trim(), None),
    };
    if text.is_empty() {
        return Err("it is empty; write e.g. nodes=2:ppn=8".into());
    }
    let place = match suffix.as_deref() {
        None => None,
        Some("excl") => Some(Place::parse("excl")?),
        Some("shared") => Some(Place::parse("shared")?),
        Some(other) => {
            return Err(format!(
                "\"#{other}\" is not a node access suffix; write #excl or #shared"
            ));
        }
    };
    let chunks = text
        .split('+')
        .map(parse_nodes_element)
        .collect::<Result<Vec<_>, _>>()?;
    within_max_nodes(&chunks)?;
    Ok((chunks, place))
}

fn parse_nodes_element(spec: &str) -> Result<Chunk, ChunkError> {
    let mut parts = spec.split(':').map(str::trim);
    let first = parts.next().unwrap_or_default();
    let mut chunk = Chunk {
        count: 1,
        ..Chunk::default()
    };
    if first.bytes().all(|b| b.is_ascii_digit()) && !first.is_empty() {
        chunk.count = parse_count(first, "nodes")?;
    } else {
        chunk.pin = Some(Pin::Name(node_name(first)?));
    }
    let in_spec = |why: String| format!("{why} in \"{spec}\"");
    for part in parts {
        match part.split_once('=') {
            Some((name, value)) => match name.trim().to_ascii_lowercase().as_str() {
                "ppn" => {
                    let ppn = parse_count(value.trim(), "ppn").map_err(in_spec)?;
                    chunk.ncpus = Some(ppn);
                    chunk.mpiprocs = Some(ppn);
                }
                "gpus" => chunk.gpus = Some(parse_whole(value.trim(), "gpus").map_err(in_spec)?),
                "procs" => {
                    return Err(format!(
                        "\"procs\" in \"{spec}\" is not a node attribute Torque knows; write ppn=N, gpus=N or a property name"
                    ));
                }
                // PBS Pro takes a chunk's resources in a nodes spec too
                // (nodes=1:ncpus=16, nodes=2:ppn=4:mem=8gb), as in select.
                other => set_chunk_resource(&mut chunk, other, value.trim(), spec)?,
            },
            None => chunk.features.push(check_feature(part).map_err(in_spec)?),
        }
    }
    Ok(chunk)
}

fn parse_count(text: &str, what: &str) -> Result<u32, ChunkError> {
    match text.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "\"{text}\" is not a number of {what}; write a whole number above 0"
        )),
    }
}

fn parse_whole(text: &str, what: &str) -> Result<u32, ChunkError> {
    text.trim()
        .parse::<u32>()
        .map_err(|_| format!("{what}=\"{text}\" is not a whole number"))
}

/// A node or host name as jobs name them.
pub(super) fn node_name(text: &str) -> Result<String, ChunkError> {
    let text = text.trim();
    if text.is_empty() {
        return Err("a node or host name is empty".into());
    }
    if let Some(c) = text
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '[' | ']')))
    {
        return Err(format!(
            "\"{text}\" is not a node or host name ('{c}' is not allowed)"
        ));
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::place::{Arrangement, Sharing};

    #[test]
    fn pbs_pro_chunks() {
        let chunks = parse_select("2:ncpus=8:mpiprocs=4:mem=4gb+1:ncpus=1:host=login1").unwrap();
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].count, 2);
        assert_eq!(chunks[0].ncpus, Some(8));
        assert_eq!(chunks[0].procs(), 4);
        assert_eq!(chunks[0].threads(), 2);
        assert_eq!(chunks[0].mem, Some(4 << 30));
        assert_eq!(chunks[1].pin, Some(Pin::Host("login1".into())));
        assert_eq!(chunks[1].procs(), 1);
        let one = parse_select("ncpus=36:ompthreads=36").unwrap();
        assert_eq!(one[0].count, 1);
        assert_eq!(one[0].threads(), 36);
        assert_eq!(parse_select("1:ncpus=12").unwrap()[0].threads(), 12);
    }

    #[test]
    fn dask_jobqueue_writes_this() {
        let chunks = parse_select("1:ncpus=1:mem=954MB").unwrap();
        assert_eq!(chunks[0].mem, Some(954 << 20));
        assert_eq!(chunks[0].to_select(), "1:ncpus=1:mem=954mb");
    }

    #[test]
    fn boolean_resources_are_features_and_others_are_kept() {
        let chunks = parse_select("1:ncpus=4:bigmem=True:arch=linux").unwrap();
        assert_eq!(chunks[0].features, vec!["bigmem".to_string()]);
        assert_eq!(
            chunks[0].other,
            vec![("arch".to_string(), "linux".to_string())]
        );
    }

    #[test]
    fn torque_node_specs() {
        let (chunks, place) = parse_nodes_spec("2:ppn=8:ib+node07:ppn=2").unwrap();
        assert!(place.is_none());
        assert_eq!(chunks[0].count, 2);
        assert_eq!(chunks[0].ncpus, Some(8));
        assert_eq!(chunks[0].procs(), 8);
        assert_eq!(chunks[0].threads(), 1);
        assert_eq!(chunks[0].features, vec!["ib".to_string()]);
        assert_eq!(chunks[1].pin, Some(Pin::Name("node07".into())));
        assert_eq!(chunks[1].procs(), 2);
        let (chunks, _) = parse_nodes_spec("host1+host2:ppn=4").unwrap();
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].procs(), 1);
        let (_, place) = parse_nodes_spec("1:ppn=2#excl").unwrap();
        assert_eq!(place.unwrap().sharing, Sharing::Excl);
        let (chunks, _) = parse_nodes_spec("1:ppn=4:gpus=2").unwrap();
        assert_eq!(chunks[0].gpus, Some(2));
        let layout = Layout {
            chunks,
            place: Place::default(),
            avoid: Vec::new(),
        };
        assert_eq!(layout.select_text(), "1:ncpus=4:mpiprocs=4:ngpus=2");
        assert_eq!(layout.place.arrangement, Arrangement::Free);
    }

    #[test]
    fn nodes_are_handed_out_chunk_by_chunk() {
        let layout = Layout {
            chunks: parse_select("2:ncpus=4+1:ncpus=1").unwrap(),
            place: Place::default(),
            avoid: Vec::new(),
        };
        let cpus: Vec<u32> = layout.per_node().map(Chunk::cpus).collect();
        assert_eq!(cpus, vec![4, 4, 1]);
        assert_eq!(layout.nodes(), 3);
    }

    #[test]
    fn pbs_pro_resources_in_a_nodes_spec() {
        let (chunks, _) = parse_nodes_spec("1:ncpus=16").unwrap();
        assert_eq!(chunks[0].ncpus, Some(16));
        let (chunks, _) = parse_nodes_spec("2:ppn=4:mem=8gb:fat+node07:ncpus=2").unwrap();
        assert_eq!(
            (chunks[0].count, chunks[0].ncpus, chunks[0].mpiprocs),
            (2, Some(4), Some(4))
        );
        assert!(chunks[0].mem.is_some());
        assert_eq!(chunks[0].features.len(), 1);
        assert_eq!(chunks[1].ncpus, Some(2));
        let err = parse_nodes_spec("1:ncpus=many").unwrap_err();
        assert!(
            err.contains("ncpus") && err.contains("1:ncpus=many"),
            "{err}"
        );
        // A site resource is kept for the caller to check, as in select.
        let (chunks, _) = parse_nodes_spec("1:nmics=2").unwrap();
        assert_eq!(
            chunks[0].other,
            vec![("nmics".to_string(), "2".to_string())]
        );
    }

    #[test]
    fn bad_chunks_say_where() {
        let err = parse_select("2:ncpus").unwrap_err();
        assert!(err.contains("not NAME=VALUE"), "{err}");
        let err = parse_select("0:ncpus=2").unwrap_err();
        assert!(err.contains("above 0"), "{err}");
        let err = parse_select("1:mem=lots").unwrap_err();
        assert!(err.contains("mem"), "{err}");
        let err = parse_nodes_spec("2:ppn=x").unwrap_err();
        assert!(err.contains("ppn"), "{err}");
        let err = parse_nodes_spec("2:procs=4").unwrap_err();
        assert!(err.contains("ppn=N"), "{err}");
        let err = parse_nodes_spec("2#maybe").unwrap_err();
        assert!(err.contains("#excl"), "{err}");
        assert!(parse_nodes_spec("n@1").is_err());
    }
}
