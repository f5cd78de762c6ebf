//! sinfo's format letters (`-o`), as Slurm 22.05 prints them: `%[.]SIZE`
//! then a letter, `.` right-justifying, a value cut to its size; the text
//! between fields printed as written. The default formats' partition and
//! node-list columns are as wide as their longest value (9 at least),
//! which Slurm's manual writes `%#P` and `%#N`.

use super::rows::Row;
use super::view::{SLURM_VERSION, SlurmNode};

/// How wide a field is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// As wide as its value.
    Free,
    Fixed(usize),
    /// The longest value of the column (node lists, partition names).
    Longest,
}

/// One piece of a format: text as written, or a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Field {
        letter: char,
        width: Width,
        right: bool,
    },
}

/// The letters qmesh's sinfo knows, with their headers.
const KNOWN: &[(char, &str)] = &[
    ('a', "AVAIL"),
    ('A', "NODES(A/I)"),
    ('b', "ACTIVE_FEATURES"),
    ('B', "MAX_CPUS_PER_NODE"),
    ('c', "CPUS"),
    ('C', "CPUS(A/I/O/T)"),
    ('d', "TMP_DISK"),
    ('D', "NODES"),
    ('e', "FREE_MEM"),
    ('E', "REASON"),
    ('f', "AVAIL_FEATURES"),
    ('F', "NODES(A/I/O/T)"),
    ('g', "GROUPS"),
    ('G', "GRES"),
    ('h', "OVERSUBSCRIBE"),
    ('H', "TIMESTAMP"),
    ('I', "PRIO_JOB_FACTOR"),
    ('l', "TIMELIMIT"),
    ('L', "DEFAULTTIME"),
    ('m', "MEMORY"),
    ('M', "PREEMPT_MODE"),
    ('n', "HOSTNAMES"),
    ('N', "NODELIST"),
    ('o', "NODE_ADDR"),
    ('O', "CPU_LOAD"),
    ('p', "PRIO_TIER"),
    ('P', "PARTITION"),
    ('r', "ROOT"),
    ('R', "PARTITION"),
    ('s', "JOB_SIZE"),
    ('S', "ALLOCNODES"),
    ('t', "STATE"),
    ('T', "STATE"),
    ('u', "USER"),
    ('U', "USER"),
    ('v', "VERSION"),
    ('V', "CLUSTER"),
    ('w', "WEIGHT"),
    ('X', "SOCKETS"),
    ('Y', "CORES"),
    ('z', "S:C:T"),
    ('Z', "THREADS"),
];

fn header_of(letter: char) -> Option<&'static str> {
    KNOWN.iter().find(|(l, _)| *l == letter).map(|(_, h)| *h)
}

/// Reads a format: `%[.][-]SIZE` and a letter between text; `%#` (the
/// default formats' own) is a column as wide as its longest value.
pub fn parse(format: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    for spec in crate::slurm_format::specs(format)? {
        let (letter, digits, right, longest) = match spec {
            crate::slurm_format::Spec::Text(t) => {
                pieces.push(Piece::Text(t));
                continue;
            }
            crate::slurm_format::Spec::Field {
                letter,
                width,
                right,
                longest,
            } => (letter, width, right, longest),
        };
        if header_of(letter).is_none() {
            let known: Vec<String> = KNOWN.iter().map(|(l, _)| format!("%{l}")).collect();
            return Err(format!(
                "--format \"{format}\": %{letter} is not a field qmesh's sinfo knows; known: {}",
                known.join(" ")
            ));
        }
        let width = match (longest, digits) {
            (true, _) => Width::Longest,
            (false, Some(n)) if n > 0 => Width::Fixed(n),
            _ => Width::Free,
        };
        pieces.push(Piece::Field {
            letter,
            width,
            right,
        });
    }
    Ok(pieces)
}

/// The letters a format shows (to group rows by what is shown).
pub fn letters(pieces: &[Piece]) -> Vec<char> {
    pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Field { letter, .. } => Some(*letter),
            Piece::Text(_) => None,
        })
        .collect()
}

/// Prints the header (unless `header` is false) and the rows.
pub fn table(pieces: &[Piece], rows: &[Row], header: bool) -> String {
    let longest = |letter: char| -> usize {
        rows.iter()
            .map(|r| value(letter, r).chars().count())
            .max()
            .unwrap_or(0)
            .max(9)
    };
    let widths: Vec<Option<usize>> = pieces
        .iter()
        .map(|p| match p {
            Piece::Field {
                width: Width::Fixed(n),
                ..
            } => Some(*n),
            Piece::Field {
                width: Width::Longest,
                letter,
                ..
            } => Some(longest(*letter)),
            _ => None,
        })
        .collect();
    let mut out = String::new();
    if header {
        out.push_str(&line(pieces, &widths, |letter| {
            header_of(letter).unwrap_or_default().to_string()
        }));
    }
    for row in rows {
        out.push_str(&line(pieces, &widths, |letter| value(letter, row)));
    }
    out
}

/// One line: each field padded to its width, cut to it as Slurm cuts
/// (its first characters, whichever side it is justified to).
fn line(pieces: &[Piece], widths: &[Option<usize>], value: impl Fn(char) -> String) -> String {
    let mut out = String::new();
    for (piece, width) in pieces.iter().zip(widths) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Field { letter, right, .. } => {
                let text = value(*letter);
                match width {
                    Some(w) => {
                        let cut: String = text.chars().take(*w).collect();
                        if *right {
                            out.push_str(&format!("{cut:>w$}"));
                        } else {
                            out.push_str(&format!("{cut:<w$}"));
                        }
                    }
                    None => out.push_str(&text),
                }
            }
        }
    }
    out.push('\n');
    out
}

/// A row's value for a letter.
pub fn value(letter: char, row: &Row) -> String {
    let p = row.partition;
    let nodes = &row.nodes;
    let first = nodes.first().copied();
    let counts = Counts::of(nodes);
    match letter {
        'P' => {
            if p.default {
                format!("{}*", p.name)
            } else {
                p.name.clone()
            }
        }
        'R' => p.name.clone(),
        'a' => p.avail.lower().into(),
        'l' => limit(p.max_time),
        'L' => match p.default_time {
            Some(secs) => duration(secs),
            None => "n/a".into(),
        },
        's' => {
            let min = p.min_nodes.max(1);
            match p.max_nodes {
                None => format!("{min}-infinite"),
                Some(max) if max == min => max.to_string(),
                Some(max) => format!("{min}-{max}"),
            }
        }
        'D' => nodes.len().to_string(),
        'A' => format!("{}/{}", counts.alloc, counts.idle),
        'F' => format!(
            "{}/{}/{}/{}",
            counts.alloc, counts.idle, counts.other, counts.total
        ),
        'C' => format!(
            "{}/{}/{}/{}",
            counts.cpus_alloc, counts.cpus_idle, counts.cpus_other, counts.cpus_total
        ),
        't' => first.map_or("n/a".into(), |n| n.state.compact()),
        'T' => first.map_or("n/a".into(), |n| n.state.long()),
        'N' => hostlist(nodes.iter().map(|n| n.name.clone())),
        'n' | 'o' => hostlist(nodes.iter().map(|n| n.host.clone())),
        'c' => min_plus(nodes.iter().map(|n| u64::from(n.cpus))),
        'm' => min_plus(nodes.iter().map(|n| n.mem_mb)),
        'e' => "N/A".into(),
        'O' => load(nodes),
        'G' => first.map_or("(null)".into(), SlurmNode::gres),
        'f' | 'b' => first.map_or("(null)".into(), SlurmNode::features_text),
        'E' => first
            .map(|n| n.reason.clone())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| "none".into()),
        'H' | 'u' | 'U' => "Unknown".into(),
        'z' => format!("1:{}:1", min_plus(nodes.iter().map(|n| u64::from(n.cpus)))),
        'X' | 'Z' => "1".into(),
        'Y' => min_plus(nodes.iter().map(|n| u64::from(n.cpus))),
        'd' => "0".into(),
        'w' | 'I' => "1".into(),
        'p' => p.priority.to_string(),
        'g' => match &p.groups {
            Some(groups) if !groups.is_empty() => groups.join(","),
            _ => "all".into(),
        },
        'h' => {
            if !nodes.is_empty() && nodes.iter().all(|n| n.exclusive) {
                "EXCLUSIVE".into()
            } else {
                "NO".into()
            }
        }
        'r' => "no".into(),
        'S' => "all".into(),
        'B' => "UNLIMITED".into(),
        'M' => "OFF".into(),
        'v' => SLURM_VERSION.into(),
        'V' => "N/A".into(),
        _ => String::new(),
    }
}

/// A row's nodes by what they do: allocated (jobs on them), idle, other
/// (down or draining), and their CPUs the same way.
#[derive(Default)]
struct Counts {
    alloc: usize,
    idle: usize,
    other: usize,
    total: usize,
    cpus_alloc: u64,
    cpus_idle: u64,
    cpus_other: u64,
    cpus_total: u64,
}

impl Counts {
    fn of(nodes: &[&SlurmNode]) -> Counts {
        let mut c = Counts::default();
        for n in nodes {
            let (cpus, used) = (u64::from(n.cpus), u64::from(n.cpus_alloc.min(n.cpus)));
            c.total += 1;
            c.cpus_total += cpus;
            c.cpus_alloc += used;
            if n.state.other() {
                c.other += 1;
                c.cpus_other += cpus - used;
            } else {
                c.cpus_idle += cpus - used;
                if n.cpus_alloc > 0 || n.state.base != super::view::Base::Idle {
                    c.alloc += 1;
                } else {
                    c.idle += 1;
                }
            }
        }
        c
    }
}

/// Names as sinfo writes a hostlist: sorted, `n[1-3,7]`, zero padding
/// kept (`local[00-15]`).
fn hostlist(names: impl Iterator<Item = String>) -> String {
    let mut names: Vec<String> = names.collect();
    names.sort_unstable();
    names.dedup();
    qmesh_core::job::slurm::hostlist::compress_sorted(&names)
}

/// The smallest value, `+` when some are larger (Slurm's CPU and memory
/// columns).
fn min_plus(values: impl Iterator<Item = u64>) -> String {
    let values: Vec<u64> = values.collect();
    match (values.iter().min(), values.iter().max()) {
        (Some(min), Some(max)) if min == max => min.to_string(),
        (Some(min), Some(_)) => format!("{min}+"),
        _ => "0".into(),
    }
}

fn load(nodes: &[&SlurmNode]) -> String {
    let loads: Vec<f64> = nodes.iter().filter_map(|n| n.load).collect();
    let min = loads.iter().copied().fold(f64::INFINITY, f64::min);
    let max = loads.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if loads.is_empty() {
        "N/A".into()
    } else if min == max {
        format!("{min:.2}")
    } else {
        format!("{min:.2}-{max:.2}")
    }
}

/// A time limit as sinfo writes it: `infinite`, `M:SS`, `H:MM:SS`,
/// `D-HH:MM:SS`.
pub fn limit(secs: Option<u64>) -> String {
    match secs {
        None => "infinite".into(),
        Some(secs) => duration(secs),
    }
}

fn duration(secs: u64) -> String {
    crate::squeue::duration(secs)
}

#[cfg(test)]
mod tests {
    use super::super::rows::{Filter, Matching, rows};
    use super::super::view::{Avail, Base, Cluster, NodeState, SlurmPartition};
    use super::*;

    /// Slurm 22.05's default format, as its sinfo sets it up.
    const DEFAULT: &str = "%#P %.5a %.10l %.6D %.6t %N";

    fn node(name: &str, base: Base, load: f64) -> SlurmNode {
        SlurmNode {
            name: name.into(),
            host: "h1".into(),
            node_set: "s".into(),
            state: NodeState {
                base,
                drain: false,
                reserved: false,
                no_respond: false,
            },
            cpus: 2,
            cpus_alloc: if base == Base::Mixed { 1 } else { 0 },
            mem_mb: 24105,
            mem_alloc_mb: 0,
            gpus: 0,
            gpus_alloc: 0,
            features: Vec::new(),
            reason: String::new(),
            load: Some(load),
            exclusive: false,
            partitions: Vec::new(),
        }
    }

    fn debug() -> Cluster {
        Cluster {
            nodes: vec![node("n1", Base::Idle, 0.77)],
            partitions: vec![SlurmPartition {
                name: "debug".into(),
                default: true,
                avail: Avail::Up,
                max_time: None,
                default_time: None,
                min_nodes: 0,
                max_nodes: None,
                groups: None,
                priority: 1,
                nodes: vec!["n1".into()],
            }],
        }
    }

    fn print(cluster: &Cluster, format: &str, node_oriented: bool) -> String {
        let pieces = parse(format).unwrap();
        let m = Matching {
            state: true,
            ..Matching::default()
        };
        table(
            &pieces,
            &rows(cluster, &Filter::default(), m, node_oriented),
            true,
        )
    }

    #[test]
    fn the_default_table_is_slurms_to_the_character() {
        // tests/slurm/fixtures/sinfo.txt
        assert_eq!(
            print(&debug(), DEFAULT, false),
            "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n\
             debug*       up   infinite      1   idle n1\n"
        );
    }

    #[test]
    fn the_node_long_and_summary_tables_are_slurms() {
        // What the rig's sinfo -N, -N -l and -s printed.
        assert_eq!(
            print(&debug(), "%#N %.6D %.#P %6t", true),
            "NODELIST   NODES PARTITION STATE \nn1             1    debug* idle  \n"
        );
        assert_eq!(
            print(
                &debug(),
                "%#N %.6D %.#P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E",
                true
            ),
            "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT \
             AVAIL_FE REASON              \n\
             n1             1    debug*        idle 2       1:2:1  24105        0      1   \
             (null) none                \n"
        );
        assert_eq!(
            print(&debug(), "%#P %.5a %.10l %.16F %N", false),
            "PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST\n\
             debug*       up   infinite          0/1/0/1 n1\n"
        );
    }

    #[test]
    fn letters_cut_and_count_as_slurm_does() {
        let mut c = debug();
        c.nodes.push(node("n2", Base::Mixed, 1.5));
        c.partitions[0].nodes.push("n2".into());
        c.partitions[0].avail = Avail::Inactive;
        c.partitions[0].max_time = Some(5400);
        c.partitions[0].max_nodes = Some(4);
        let out = print(&c, "%.5a|%l|%s|%C|%A|%F|%O|%T", false);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[1], "inact|1:30:00|1-4|1/1/0/2|1/0|1/0/0/1|1.50|mixed");
        assert_eq!(lines[2], "inact|1:30:00|1-4|0/2/0/2|0/1|0/1/0/1|0.77|idle");
        let summary = table(
            &parse("%C %c %N").unwrap(),
            &rows(&c, &Filter::default(), Matching::default(), false),
            false,
        );
        assert_eq!(summary, "1/3/0/4 2 n[1-2]\n");
        let padded = ["local00", "local01", "local02", "local10"].map(String::from);
        assert_eq!(hostlist(padded.into_iter()), "local[00-02,10]");
        assert!(parse("%y").unwrap_err().contains("%y is not a field"));
        assert!(parse("%.").is_err());
    }
}
