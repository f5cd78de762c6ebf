//! Resource requests as users write them: `-l nodes=4`, `-l walltime=1:00:00`,
//! `-l mem=2gb` (PBS), PBS Pro's `-l select=2:ncpus=8:mem=4gb` with
//! `place=scatter`, Torque's `nodes=2:ppn=8:ib+node07`. The NQS forms
//! (`-lP`, `-lT`, `-lM`) are rewritten to these by qsub.
//!
//! A request is read in two steps: the entries are gathered by name (a
//! later entry replaces an earlier one, so the command line, sent after the
//! directives, wins), then read together, since their meanings depend on
//! each other (PBS Pro refuses a job-wide `ncpus` beside `select`). What
//! comes out is what the scheduler needs (nodes, and what each node must
//! have), the layout of the job's chunks, and the `Resource_List` PBS shows.
//! Resources qmesh records but does not enforce leave a note, which the
//! job's comment shows: a user is never left to guess. The site's
//! host-level resources are matched to nodes by `node_resources`.

pub mod chunk;
pub mod place;

use std::collections::BTreeMap;

pub use chunk::{Chunk, Layout, Pin};
pub use place::{Arrangement, Place, Sharing};

use crate::error::CoreError;
use crate::time::{format_hms, parse_duration};

/// The resources qmesh acts on (with [`RECORDED_ONLY`], those a job may
/// name; any other is refused with the list).
const ACTED_ON: &[&str] = &[
    "select",
    "place",
    "nodes",
    "nodect",
    "walltime",
    "ncpus",
    "mem",
    "ngpus",
    "gpus",
    "mpiprocs",
    "ompthreads",
    "pmem",
    "vmem",
    "pvmem",
    "procs",
    "host",
    "software",
    "feature",
    "naccesspolicy",
    "pcput",
    "file",
    "nice",
    "preempt_targets",
    "excludenodes",
];

/// Recorded for qstat and accounting; not acted on, and the job's comment
/// says so.
const RECORDED_ONLY: &[&str] = &[
    "cput",
    "arch",
    "opsys",
    "other",
    "qos",
    "partition",
    "gres",
    "signal",
    "minwclimit",
    "tpn",
    "flags",
    "ddisk",
];

/// Whether a job may name resource `name` (built in; the site's own are
/// checked apart).
pub fn is_known(name: &str) -> bool {
    ACTED_ON.contains(&name) || RECORDED_ONLY.contains(&name)
}

/// PBS Pro's `preempt_targets` resource (a job's, or a queue's
/// `resources_default`): whom a job may preempt (`preempt.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreemptTargets {
    /// Any job of a normal queue (not set).
    Any,
    /// None (`NONE`).
    Nobody,
    /// Jobs of these queues (`queue=workq,queue=long`).
    Queues(Vec<String>),
}

impl PreemptTargets {
    /// The attribute's name in a queue's `resources_default` map.
    pub const RESOURCE: &'static str = "preempt_targets";

    pub fn parse(text: &str) -> Result<PreemptTargets, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("none") {
            return Ok(PreemptTargets::Nobody);
        }
        let mut queues = Vec::new();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item.split_once('=') {
                Some((key, queue))
                    if key.trim().eq_ignore_ascii_case("queue") && !queue.trim().is_empty() =>
                {
                    queues.push(queue.trim().to_string());
                }
                _ => {
                    return Err(format!(
                        "preempt_targets \"{text}\": \"{item}\" is not queue=NAME; write \
                         queue=NAME[,queue=NAME...] or NONE (qmesh does not target jobs by \
                         Resource_List)"
                    ));
                }
            }
        }
        if queues.is_empty() {
            return Err(format!(
                "preempt_targets \"{text}\" names no queue; write queue=NAME[,queue=NAME...] or NONE"
            ));
        }
        Ok(PreemptTargets::Queues(queues))
    }

    pub fn allow(&self, queue: &str) -> bool {
        match self {
            PreemptTargets::Any => true,
            PreemptTargets::Nobody => false,
            PreemptTargets::Queues(names) => names.iter().any(|n| n == queue),
        }
    }
}

/// What a job asked for; `None` where it named nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceRequest {
    pub nodes: Option<u32>,
    /// Seconds.
    pub walltime: Option<u64>,
    /// Bytes per node.
    pub mem: Option<u64>,
    /// CPUs per node (`-l ncpus=8`, a chunk's `ncpus`, Torque's `ppn`).
    pub ncpus: Option<u32>,
    /// GPUs per node (`ngpus`, Torque's `gpus=`).
    pub gpus: Option<u32>,
    /// Node features every node must have (`-l feature=fat`, Torque's
    /// `nodes=4:fat`, PBS Pro's `fat=True` in a chunk, `software=`).
    pub features: Vec<String>,
    /// Chunks and placement, when the request says more than a number of
    /// nodes.
    pub layout: Option<Layout>,
    /// The request as PBS shows it in `Resource_List` (before the queue's
    /// defaults fill it in: see [`ResourceRequest::resource_list`]).
    pub list: BTreeMap<String, String>,
    /// What was accepted but is not done, in words, for the job's comment.
    pub notes: Vec<String>,
}

impl ResourceRequest {
    /// Reads a resource list; a later entry replaces an earlier one of the
    /// same name. Site-defined resources are refused (see
    /// [`ResourceRequest::parse_with`]).
    pub fn parse<'a>(
        list: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<ResourceRequest, CoreError> {
        ResourceRequest::parse_with(list, &[])
    }

    /// [`ResourceRequest::parse`], recording the resources the site
    /// declared (`qmgr create resource`), named in `site`.
    pub fn parse_with<'a>(
        list: impl IntoIterator<Item = (&'a str, &'a str)>,
        site: &[&str],
    ) -> Result<ResourceRequest, CoreError> {
        let mut given: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in list {
            let name = name.trim().to_ascii_lowercase();
            let name = match name.as_str() {
                "features" => "feature".to_string(),
                "gpus" => "ngpus".to_string(),
                _ => name,
            };
            if !is_known(&name) && !site.contains(&name.as_str()) {
                let known: Vec<&str> = ACTED_ON
                    .iter()
                    .chain(RECORDED_ONLY)
                    .chain(site)
                    .copied()
                    .collect();
                return Err(CoreError::UnknownResource {
                    name,
                    known: known.join(", "),
                });
            }
            given.insert(name, value.trim().to_string());
        }
        read(given)
    }

    /// What `nodes=N,walltime=S` (seconds) reads to, made without text:
    /// the request [`ResourceRequest::parse`] gives for those two (a
    /// property test holds them together), for callers that have the
    /// numbers (a replay submits hundreds of thousands of jobs).
    pub fn nodes_and_walltime(nodes: u32, walltime: u64) -> Result<ResourceRequest, CoreError> {
        let (n, w) = (nodes.to_string(), walltime.to_string());
        if nodes == 0 {
            // The parser's refusal, in its words.
            return ResourceRequest::parse([("nodes", n.as_str()), ("walltime", w.as_str())]);
        }
        let mut req = ResourceRequest {
            nodes: Some(nodes),
            walltime: Some(walltime),
            ..ResourceRequest::default()
        };
        req.list.insert("nodes".into(), n);
        req.list.insert("walltime".into(), w);
        Ok(req)
    }

    /// Whether it asks for nothing but nodes, wall time and what every
    /// node must have (memory, CPUs, features): a job whose
    /// `Resource_List` follows from its fields.
    pub fn is_plain(&self) -> bool {
        const PLAIN: [&str; 6] = ["nodes", "nodect", "walltime", "mem", "ncpus", "feature"];
        self.layout.is_none()
            && self.notes.is_empty()
            && self.gpus.is_none()
            && self.list.keys().all(|k| PLAIN.contains(&k.as_str()))
    }

    /// `Resource_List` once the job's nodes and wall time are settled: what
    /// it asked for, with `nodect`, `ncpus`, `select`, `walltime` worked
    /// out as PBS Pro shows them.
    pub fn resource_list(&self, nodes: u32, walltime: u64) -> BTreeMap<String, String> {
        let mut list = self.list.clone();
        list.insert("walltime".into(), format_hms(walltime));
        list.insert("nodect".into(), nodes.to_string());
        let select = match self.layout.as_ref().filter(|l| !l.chunks.is_empty()) {
            Some(layout) => layout.clone(),
            None => Layout {
                chunks: vec![Chunk {
                    count: nodes,
                    ncpus: self.ncpus,
                    mem: self.mem,
                    gpus: self.gpus,
                    features: self.features.clone(),
                    ..Chunk::default()
                }],
                place: Place::default(),
                avoid: Vec::new(),
            },
        };
        let cpus: u64 = select
            .chunks
            .iter()
            .map(|c| u64::from(c.count) * u64::from(c.cpus()))
            .fold(0, u64::saturating_add);
        list.insert("ncpus".into(), cpus.to_string());
        if !list.contains_key("mem") {
            let mem: u64 = select
                .chunks
                .iter()
                .filter_map(|c| c.mem.map(|m| m.saturating_mul(u64::from(c.count))))
                .fold(0, u64::saturating_add);
            if mem > 0 {
                list.insert("mem".into(), format_size(mem));
            }
        }
        let gpus: u64 = select
            .chunks
            .iter()
            .filter_map(|c| c.gpus.map(|g| u64::from(g) * u64::from(c.count)))
            .fold(0, u64::saturating_add);
        if gpus > 0 {
            list.insert("ngpus".into(), gpus.to_string());
        }
        list.insert("select".into(), select.select_text());
        if let Some(layout) = &self.layout
            && !layout.place.is_default()
        {
            list.insert("place".into(), layout.place.text());
        }
        list
    }
}

/// The gathered entries, read together.
fn read(mut given: BTreeMap<String, String>) -> Result<ResourceRequest, CoreError> {
    let mut req = ResourceRequest::default();
    let bad = |name: &str, value: &str, why: &str| CoreError::BadResource {
        name: name.to_string(),
        value: value.to_string(),
        why: why.to_string(),
    };
    let take = |given: &mut BTreeMap<String, String>, name: &str| given.remove(name);

    // The chunks: select (PBS Pro), nodes (Torque, or a count), procs.
    let select = take(&mut given, "select");
    let nodes = take(&mut given, "nodes").or_else(|| take(&mut given, "nodect"));
    let procs = take(&mut given, "procs");
    let mut layout: Option<Layout> = None;
    let mut torque_place = None;
    match (&select, &nodes) {
        (Some(_), Some(n)) => {
            return Err(bad(
                "nodes",
                n,
                "nodes= and select= cannot be used together; write one of them, e.g. select=2:ncpus=8",
            ));
        }
        (Some(s), None) => {
            let chunks = chunk::parse_select(s).map_err(|why| bad("select", s, &why))?;
            req.list.insert("select".into(), s.clone());
            layout = Some(Layout {
                chunks,
                place: Place::default(),
                avoid: Vec::new(),
            });
        }
        (None, Some(n)) => {
            req.list.insert("nodes".into(), n.clone());
            if let Ok(count) = n.parse::<u32>() {
                if count == 0 {
                    return Err(bad("nodes", n, "a job needs at least one node"));
                }
                req.nodes = Some(count);
            } else if n.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(
                    "nodes",
                    n,
                    "write a whole number of nodes, e.g. nodes=4",
                ));
            } else {
                let (chunks, place) =
                    chunk::parse_nodes_spec(n).map_err(|why| bad("nodes", n, &why))?;
                torque_place = place;
                layout = Some(Layout {
                    chunks,
                    place: Place::default(),
                    avoid: Vec::new(),
                });
            }
        }
        (None, None) => {}
    }
    if let Some(p) = &procs {
        req.list.insert("procs".into(), p.clone());
        if layout.is_some() || req.nodes.is_some() {
            return Err(bad(
                "procs",
                p,
                "procs= cannot be used with nodes= or select=; give ppn in nodes=, e.g. nodes=2:ppn=8",
            ));
        }
        let n = parse_cpus(p).map_err(|why| bad("procs", p, &why))?;
        req.notes
            .push(format!("procs={n} is given one node with {n} CPUs"));
        layout = Some(Layout {
            chunks: vec![Chunk {
                count: 1,
                ncpus: Some(n),
                mpiprocs: Some(n),
                ..Chunk::default()
            }],
            place: Place::default(),
            avoid: Vec::new(),
        });
    }

    // Job-wide values that belong to chunks under PBS Pro's select.
    if select.is_some() {
        for name in ["ncpus", "mem", "ngpus", "vmem", "mpiprocs", "ompthreads"] {
            if let Some(value) = given.get(name) {
                return Err(bad(
                    name,
                    value,
                    &format!(
                        "a job-wide {name} cannot be given with select=; put it in the chunk, e.g. select=1:{name}={value}"
                    ),
                ));
            }
        }
    }
    for name in ["mpiprocs", "ompthreads"] {
        if let Some(value) = given.get(name) {
            return Err(bad(
                name,
                value,
                &format!("{name} belongs in a chunk; write e.g. select=1:ncpus=4:{name}={value}"),
            ));
        }
    }

    // Placement.
    let mut place = torque_place.unwrap_or_default();
    if let Some(text) = take(&mut given, "place") {
        place = Place::parse(&text).map_err(|why| bad("place", &text, &why))?;
        req.list.insert("place".into(), text);
    }
    if let Some(policy) = take(&mut given, "naccesspolicy") {
        req.list.insert("naccesspolicy".into(), policy.clone());
        match policy.to_ascii_lowercase().as_str() {
            "singlejob" => place.sharing = Sharing::Excl,
            "shared" => place.sharing = Sharing::Shared,
            "singleuser" | "singletask" | "uniqueuser" | "singleaccount" => req.notes.push(format!(
                "naccesspolicy={policy} is taken as singlejob: no other job shares the job's nodes"
            )),
            _ => {
                return Err(bad(
                    "naccesspolicy",
                    &policy,
                    "write singlejob, singleuser or shared",
                ));
            }
        }
        if place.sharing == Sharing::Default {
            place.sharing = Sharing::Excl;
        }
    }
    if place.sharing == Sharing::Exclhost {
        req.notes.push(
            "place=exclhost keeps other jobs off the job's nodes; other nodes of its hosts may run other jobs".into(),
        );
    }
    if let Some(group) = &place.group {
        req.notes.push(format!(
            "place=group={group} is not done: qmesh keeps a job on like nodes by its node sets"
        ));
    }
    if let Some(host) = take(&mut given, "host") {
        req.list.insert("host".into(), host.clone());
        let host = host.trim().to_string();
        if host.is_empty() {
            return Err(bad("host", &host, "write a host name, e.g. host=node01"));
        }
        let layout = layout.get_or_insert_with(|| Layout {
            chunks: vec![Chunk {
                count: req.nodes.unwrap_or(1),
                ..Chunk::default()
            }],
            place: Place::default(),
            avoid: Vec::new(),
        });
        for chunk in &mut layout.chunks {
            if chunk.pin.is_none() {
                chunk.pin = Some(Pin::Host(host.clone()));
            }
        }
        req.nodes = None;
    }
    if !place.is_default() {
        layout.get_or_insert_with(Layout::default).place = place;
    }
    // Moab's and Torque's `excludenodes=n1:n2` (Slurm's -x): nodes or hosts
    // it must not run on.
    if let Some(text) = take(&mut given, "excludenodes") {
        let names = text
            .split([':', '+'])
            .map(chunk::node_name)
            .collect::<Result<Vec<String>, _>>()
            .map_err(|why| {
                bad(
                    "excludenodes",
                    &text,
                    &format!(
                        "{why}; write node or host names joined by :, e.g. excludenodes=n1:n2"
                    ),
                )
            })?;
        req.list.insert("excludenodes".into(), names.join(":"));
        layout.get_or_insert_with(Layout::default).avoid = names;
    }

    // Per node: what the largest chunk asks for, or the job-wide values.
    let chunks: &[Chunk] = layout.as_ref().map_or(&[], |l| &l.chunks[..]);
    if !chunks.is_empty() {
        // At most chunk::MAX_NODES: the parsers refuse more.
        req.nodes = Some(chunks.iter().map(|c| c.count).sum());
        req.ncpus = chunks.iter().filter_map(|c| c.ncpus).max();
        req.mem = chunks.iter().filter_map(|c| c.mem).max();
        req.gpus = chunks.iter().filter_map(|c| c.gpus).max();
        // A chunk's other resources are matched to nodes, or noted as
        // recorded only, by `node_resources`, which knows the site's.
        for chunk in chunks {
            for f in &chunk.features {
                if !req.features.contains(f) {
                    req.features.push(f.clone());
                }
            }
        }
    }
    if let Some(v) = take(&mut given, "ncpus") {
        let n = parse_cpus(&v).map_err(|why| bad("ncpus", &v, &why))?;
        req.list.insert("ncpus".into(), v);
        req.ncpus = Some(req.ncpus.map_or(n, |c| c.max(n)));
    }
    if let Some(v) = take(&mut given, "mem") {
        let m = parse_size(&v).map_err(|why| bad("mem", &v, &why))?;
        req.list.insert("mem".into(), v);
        req.mem = Some(req.mem.map_or(m, |have| have.max(m)));
    }
    if let Some(v) = take(&mut given, "ngpus") {
        let g = v
            .trim()
            .parse::<u32>()
            .map_err(|_| bad("ngpus", &v, "write a whole number of GPUs, e.g. ngpus=2"))?;
        req.list.insert("ngpus".into(), v);
        req.gpus = Some(req.gpus.map_or(g, |have| have.max(g)));
    }
    if let Some(v) = take(&mut given, "pmem") {
        let m = parse_size(&v).map_err(|why| bad("pmem", &v, &why))?;
        req.list.insert("pmem".into(), v);
        let procs = chunks.iter().map(Chunk::procs).max().unwrap_or(1);
        let per_node = m.saturating_mul(u64::from(procs));
        req.mem = Some(req.mem.map_or(per_node, |have| have.max(per_node)));
    }
    for name in ["vmem", "pvmem", "file"] {
        if let Some(v) = take(&mut given, name) {
            parse_size(&v).map_err(|why| bad(name, &v, &why))?;
            if name == "vmem" {
                req.notes
                    .push("vmem is recorded, not enforced (pvmem limits each process)".into());
            }
            req.list.insert(name.into(), v);
        }
    }
    for name in ["pcput", "cput"] {
        if let Some(v) = take(&mut given, name) {
            parse_duration(&v).map_err(|e| bad(name, &v, &e.to_string()))?;
            req.list.insert(name.into(), v);
        }
    }
    if let Some(v) = take(&mut given, PreemptTargets::RESOURCE) {
        PreemptTargets::parse(&v).map_err(|why| CoreError::BadOption { message: why })?;
        req.list.insert(PreemptTargets::RESOURCE.into(), v);
    }
    if let Some(v) = take(&mut given, "nice") {
        match v.trim().parse::<i32>() {
            Ok(n) if (-20..=19).contains(&n) => {}
            _ => return Err(bad("nice", &v, "write a number from -20 to 19")),
        }
        req.list.insert("nice".into(), v);
    }
    for name in ["feature", "software"] {
        if let Some(v) = take(&mut given, name) {
            let features: Result<Vec<String>, String> =
                v.split([':', ',', '+']).map(check_feature).collect();
            match features {
                Ok(features) => {
                    for f in features {
                        if !req.features.contains(&f) {
                            req.features.push(f);
                        }
                    }
                }
                // PBS Pro's software is any string (`abaqus/2023`): one
                // that names no feature is recorded, as PBS Pro does.
                Err(_) if name == "software" => req.notes.push(format!(
                    "software={v} is recorded, not asked of the nodes (it is not a list of node features)"
                )),
                Err(why) => return Err(bad(name, &v, &why)),
            }
            req.list.insert(name.into(), v);
        }
    }
    if let Some(v) = take(&mut given, "walltime") {
        req.walltime = Some(parse_duration(&v)?);
        req.list.insert("walltime".into(), v);
    }
    // What is left is recorded: resources qmesh does not act on, and the
    // site's own.
    for (name, value) in given {
        if RECORDED_ONLY.contains(&name.as_str()) {
            req.notes.push(format!("{name} is recorded, not enforced"));
        }
        req.list.insert(name, value);
    }
    req.layout = layout;
    Ok(req)
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

/// PBS sizes: a whole number with an optional unit b, kb, mb, gb, tb, pb
/// (or k, m, g, t, p), any case, powers of 1024; PBS's words (w, kw, mw,
/// gw, tw) are eight bytes each.
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
        "p" | "pb" => 1 << 50,
        "w" => 8,
        "kw" => 8 << 10,
        "mw" => 8 << 20,
        "gw" => 8 << 30,
        "tw" => 8 << 40,
        other => {
            return Err(format!(
                "unknown unit \"{other}\"; use b, kb, mb, gb, tb or pb"
            ));
        }
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

/// A PBS boolean (`True`, `false`, `yes`, `1`...); the error names `name`.
pub fn parse_bool(name: &str, value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "1" | "on" => Ok(true),
        "false" | "f" | "no" | "n" | "0" | "off" => Ok(false),
        _ => Err(format!(
            "\"{value}\" is not a value for {name}; write True or False"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Found while fuzzing (fuzz/fuzz_targets/resources.rs): chunk counts
    // added up past u32 (a panic in debug builds; in release a job asking
    // for 4294967297 nodes counted as 1), and memory past u64.
    #[test]
    fn fuzz_select_chunk_counts_beyond_u32_are_refused() {
        for (name, value) in [
            ("select", "4294967295:ncpus=1+2:ncpus=1"),
            ("select", "1000001:ncpus=1"),
            ("nodes", "4294967295:ppn=1+2:ppn=1"),
        ] {
            let err = ResourceRequest::parse([(name, value)])
                .unwrap_err()
                .to_string();
            assert!(err.contains("at most 1000000"), "{err}");
        }
        let most = ResourceRequest::parse([("select", "999999:ncpus=1+1:ncpus=2")]).unwrap();
        assert_eq!(most.nodes, Some(chunk::MAX_NODES));
    }

    #[test]
    fn fuzz_select_memory_beyond_u64_saturates() {
        let req = ResourceRequest::parse([(
            "select",
            "500000:mem=17179869183gb+500000:mem=17179869183gb",
        )])
        .unwrap();
        let list = req.resource_list(1_000_000, 60);
        assert_eq!(list["mem"], format_size(u64::MAX));
    }

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
        let err = ResourceRequest::parse([("nodes", "2:ppn=many")]).unwrap_err();
        assert!(err.to_string().contains("nodes"), "{err}");
        let err = ResourceRequest::parse([("nodes", "")]).unwrap_err();
        assert!(err.to_string().contains("nodes=4"), "{err}");
        let err = ResourceRequest::parse([("nodes", "0")]).unwrap_err();
        assert!(err.to_string().contains("at least one"), "{err}");
        let err = ResourceRequest::parse([("gpus_x", "2")]).unwrap_err();
        assert!(
            err.to_string().contains("unknown resource \"gpus_x\""),
            "{err}"
        );
        let err = ResourceRequest::parse([("walltime", "1:99")]).unwrap_err();
        assert!(err.to_string().contains("bad wall time"), "{err}");
        assert!(parse_size("3xb").is_err());
        assert_eq!(parse_size("5000m").unwrap(), 5000 << 20);
        assert_eq!(parse_size("2kw").unwrap(), 16 << 10);
    }

    #[test]
    fn select_gives_nodes_and_what_each_must_have() {
        let req = ResourceRequest::parse([
            ("select", "2:ncpus=8:mem=4gb+1:ncpus=16:ngpus=2"),
            ("place", "scatter"),
        ])
        .unwrap();
        assert_eq!(req.nodes, Some(3));
        assert_eq!(req.ncpus, Some(16));
        assert_eq!(req.mem, Some(4 << 30));
        assert_eq!(req.gpus, Some(2));
        let layout = req.layout.as_ref().unwrap();
        assert_eq!(layout.place.arrangement, Arrangement::Scatter);
        let list = req.resource_list(3, 3600);
        assert_eq!(list["nodect"], "3");
        assert_eq!(list["ncpus"], "32");
        assert_eq!(list["mem"], "8gb");
        assert_eq!(list["ngpus"], "2");
        assert_eq!(list["place"], "scatter");
        assert_eq!(list["walltime"], "01:00:00");
        assert_eq!(list["select"], "2:ncpus=8:mem=4gb+1:ncpus=16:ngpus=2");
    }

    #[test]
    fn plain_node_counts_keep_their_meaning() {
        let req = ResourceRequest::parse([("nodes", "4")]).unwrap();
        assert_eq!(req.nodes, Some(4));
        assert!(req.layout.is_none());
        let list = req.resource_list(4, 60);
        assert_eq!(list["nodes"], "4");
        assert_eq!(list["select"], "4:ncpus=1");
        assert_eq!(list["ncpus"], "4");
    }

    #[test]
    fn torque_nodes_and_pmem() {
        let req = ResourceRequest::parse([("nodes", "2:ppn=8"), ("pmem", "1gb")]).unwrap();
        assert_eq!(req.nodes, Some(2));
        assert_eq!(req.ncpus, Some(8));
        assert_eq!(req.mem, Some(8 << 30), "pmem times the processes of a node");
        let list = req.resource_list(2, 60);
        assert_eq!(list["select"], "2:ncpus=8:mpiprocs=8");
        assert_eq!(list["pmem"], "1gb");
        let req = ResourceRequest::parse([("nodes", "node03")]).unwrap();
        let layout = req.layout.unwrap();
        assert_eq!(layout.chunks[0].pin, Some(Pin::Name("node03".into())));
        assert!(layout.constrains_placement());
    }

    #[test]
    fn pbs_pro_refusals_say_what_to_write() {
        let err = ResourceRequest::parse([("select", "1:ncpus=2"), ("ncpus", "4")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("select=1:ncpus=4"), "{err}");
        let err = ResourceRequest::parse([("select", "1"), ("nodes", "2")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot be used together"), "{err}");
        let err = ResourceRequest::parse([("mpiprocs", "4")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("belongs in a chunk"), "{err}");
        let err = ResourceRequest::parse([("place", "sideways")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("place"), "{err}");
    }

    #[test]
    fn site_resources_are_recorded_and_others_refused_with_the_list() {
        let req = ResourceRequest::parse_with([("matlab", "2")], &["matlab"]).unwrap();
        assert_eq!(req.list["matlab"], "2");
        let err = ResourceRequest::parse_with([("fluent", "1")], &["matlab"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown resource \"fluent\""), "{err}");
        assert!(err.contains("select") && err.contains("matlab"), "{err}");
    }

    #[test]
    fn what_is_not_done_is_said() {
        let req =
            ResourceRequest::parse([("cput", "1:00:00"), ("place", "pack:group=switch")]).unwrap();
        assert!(
            !req.notes.iter().any(|n| n.contains("cput")),
            "cput is enforced (in the job's cgroup): {:?}",
            req.notes
        );
        assert!(
            req.notes.iter().any(|n| n.contains("group=switch")),
            "{:?}",
            req.notes
        );
        let req = ResourceRequest::parse([("host", "login1"), ("ncpus", "2")]).unwrap();
        assert_eq!(req.nodes, Some(1));
        assert_eq!(req.ncpus, Some(2));
        assert_eq!(
            req.layout.unwrap().chunks[0].pin,
            Some(Pin::Host("login1".into()))
        );
    }

    #[test]
    fn software_names_features_or_is_recorded() {
        let req = ResourceRequest::parse([("software", "matlab")]).unwrap();
        assert_eq!(req.features, vec!["matlab".to_string()]);
        let req = ResourceRequest::parse([("software", "abaqus/2023.1")]).unwrap();
        assert!(req.features.is_empty());
        assert_eq!(
            req.list.get("software").map(String::as_str),
            Some("abaqus/2023.1")
        );
        assert!(
            req.notes
                .iter()
                .any(|n| n.contains("software=abaqus/2023.1 is recorded")),
            "{:?}",
            req.notes
        );
        let err = ResourceRequest::parse([("feature", "a/b")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("feature"), "{err}");
    }

    proptest::proptest! {
        #[test]
        fn nodes_and_walltime_as_numbers_read_as_their_text(
            nodes in proptest::prop_oneof![0u32..3, 1u32..5000, proptest::num::u32::ANY],
            walltime in proptest::prop_oneof![0u64..3, 1u64..1_000_000, proptest::num::u64::ANY],
        ) {
            let (n, w) = (nodes.to_string(), walltime.to_string());
            let text = ResourceRequest::parse([("nodes", n.as_str()), ("walltime", w.as_str())]);
            let numbers = ResourceRequest::nodes_and_walltime(nodes, walltime);
            match (numbers, text) {
                (Ok(numbers), Ok(text)) => proptest::prop_assert_eq!(numbers, text),
                (Err(numbers), Err(text)) => {
                    proptest::prop_assert_eq!(numbers.to_string(), text.to_string())
                }
                (numbers, text) => proptest::prop_assert!(false, "{:?} against {:?}", numbers, text),
            }
        }
    }
}
