//! The Standard Workload Format (Parallel Workloads Archive): one job per
//! line, 18 whitespace-separated fields, `;` starting header comments such
//! as `; MaxNodes: 128`. Missing values are -1.
//!
//! A job line that cannot be read is an error naming its line; a job that
//! reads but cannot be replayed (no processors, no run time, cancelled
//! before it started) is counted as skipped with the reason, never dropped
//! silently.

use std::collections::BTreeMap;
use std::io::BufRead;

/// One job of a trace, in the trace's units (seconds, processors).
#[derive(Clone, Debug, PartialEq)]
pub struct SwfJob {
    /// Field 1.
    pub number: u64,
    /// Field 2: seconds from the log's start.
    pub submit: i64,
    /// Field 3: as the log says (-1 unknown); the replay makes its own.
    pub wait: i64,
    /// Field 4.
    pub run: i64,
    /// Field 5: processors it was given.
    pub allocated: i64,
    /// Field 8: processors it asked for.
    pub requested_procs: i64,
    /// Field 9: wall time it asked for (-1 unknown).
    pub requested_time: i64,
    /// Field 11: 1 completed, 0 failed, 5 cancelled, ...
    pub status: i64,
    /// Fields 12, 13.
    pub user: i64,
    pub group: i64,
    /// Field 14: the executable (application) number (-1 unknown); what
    /// `--arrays` groups a user's jobs by.
    pub executable: i64,
    /// Fields 15, 16.
    pub queue: i64,
    pub partition: i64,
}

impl SwfJob {
    /// Processors to replay with: allocated, else requested.
    pub fn procs(&self) -> i64 {
        if self.allocated > 0 {
            self.allocated
        } else {
            self.requested_procs
        }
    }

    /// Wall time asked for: requested, else the run time.
    pub fn walltime(&self) -> i64 {
        if self.requested_time > 0 {
            self.requested_time
        } else {
            self.run
        }
    }
}

/// A trace: its header's fields and its jobs in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// `; Key: value` header lines, e.g. `MaxNodes` → `128` (the last, for
    /// a key given more than once).
    pub header: BTreeMap<String, String>,
    /// `; Queue: 3 q8s` lines: the names of queue numbers.
    pub queues: BTreeMap<i64, String>,
    /// `; Partition: 2 batch` lines.
    pub partitions: BTreeMap<i64, String>,
    pub jobs: Vec<SwfJob>,
}

impl Trace {
    /// The Unix time of the log's second 0 (`UnixStartTime`), so that a
    /// replay's calendar (prime time, weekends) is the log's own.
    pub fn unix_start(&self) -> Option<i64> {
        self.header.get("UnixStartTime")?.trim().parse().ok()
    }

    /// A queue number's name from the header, else the number itself.
    pub fn queue_name(&self, queue: i64) -> String {
        self.queues
            .get(&queue)
            .cloned()
            .unwrap_or_else(|| queue.to_string())
    }

    /// A partition named by number or by its header name.
    pub fn partition(&self, given: &str) -> Option<i64> {
        given.trim().parse().ok().or_else(|| {
            self.partitions
                .iter()
                .find(|(_, name)| name.as_str() == given.trim())
                .map(|(&n, _)| n)
        })
    }

    /// The machine's size from the header: MaxProcs, else MaxNodes.
    pub fn max_procs(&self) -> Option<u32> {
        ["MaxProcs", "MaxNodes"]
            .iter()
            .filter_map(|k| self.header.get(*k))
            .find_map(|v| v.split_whitespace().next()?.parse().ok())
            .filter(|&n: &u32| n > 0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SwfError {
    #[error("{source_name}, line {line}: {why}: {text}")]
    Line {
        source_name: String,
        line: usize,
        why: String,
        text: String,
    },
    #[error("cannot read {source_name}: {source}")]
    Read {
        source_name: String,
        source: std::io::Error,
    },
}

/// Reads a trace; `source_name` names it in errors.
pub fn read(input: impl BufRead, source_name: &str) -> Result<Trace, SwfError> {
    let mut trace = Trace::default();
    for (index, line) in input.lines().enumerate() {
        let line = line.map_err(|source| SwfError::Read {
            source_name: source_name.to_string(),
            source,
        })?;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if let Some(comment) = text.strip_prefix(';') {
            if let Some((key, value)) = comment.split_once(':') {
                let key = key.trim();
                if !key.is_empty() && !key.contains(' ') {
                    let value = value.trim();
                    // `Queue: 3 q8s`: a number and its name.
                    let named = value
                        .split_once(char::is_whitespace)
                        .and_then(|(n, name)| Some((n.parse::<i64>().ok()?, name.trim())));
                    match (key, named) {
                        ("Queue", Some((n, name))) => {
                            trace.queues.insert(n, name.to_string());
                        }
                        ("Partition", Some((n, name))) => {
                            trace.partitions.insert(n, name.to_string());
                        }
                        _ => {}
                    }
                    trace.header.insert(key.to_string(), value.to_string());
                }
            }
            continue;
        }
        let bad = |why: String| SwfError::Line {
            source_name: source_name.to_string(),
            line: index + 1,
            why,
            text: text.chars().take(120).collect(),
        };
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() != 18 {
            return Err(bad(format!(
                "a job line has 18 fields, this one has {}",
                fields.len()
            )));
        }
        let mut values = [0i64; 18];
        for (i, field) in fields.iter().enumerate() {
            values[i] = parse_field(field)
                .ok_or_else(|| bad(format!("field {} (\"{field}\") is not a number", i + 1)))?;
        }
        if values[0] < 0 {
            return Err(bad("field 1 (the job number) is negative".into()));
        }
        trace.jobs.push(SwfJob {
            number: values[0] as u64,
            submit: values[1],
            wait: values[2],
            run: values[3],
            allocated: values[4],
            requested_procs: values[7],
            requested_time: values[8],
            status: values[10],
            user: values[11],
            group: values[12],
            executable: values[13],
            queue: values[14],
            partition: values[15],
        });
    }
    Ok(trace)
}

/// Integers, or decimals (some logs write `12.00` for averages), rounded.
fn parse_field(field: &str) -> Option<i64> {
    field.parse::<i64>().ok().or_else(|| {
        field
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(|v| v.round() as i64)
    })
}

/// Opens a trace file, gzip or not (by its `.gz` name).
pub fn open(path: &std::path::Path) -> Result<Trace, SwfError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| SwfError::Read {
        source_name: name.clone(),
        source,
    })?;
    if path.extension().is_some_and(|e| e == "gz") {
        read(
            std::io::BufReader::new(flate2::read::MultiGzDecoder::new(file)),
            &name,
        )
    } else {
        read(std::io::BufReader::new(file), &name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_header_and_jobs() {
        let text = "; Version: 2.2\n; MaxNodes: 128\n; MaxProcs: 128\n\
                    1 0 5 100 4 -1 -1 4 200 -1 1 3 2 -1 1 -1 -1 -1\n\
                    2 10 -1 50 -1 -1 -1 8 -1 -1 1 4 2 -1 2 -1 -1 -1\n";
        let t = read(text.as_bytes(), "t.swf").unwrap();
        assert_eq!(t.max_procs(), Some(128));
        assert_eq!(t.jobs.len(), 2);
        assert_eq!((t.jobs[0].procs(), t.jobs[0].walltime()), (4, 200));
        assert_eq!(
            (t.jobs[1].procs(), t.jobs[1].walltime()),
            (8, 50),
            "requested, run"
        );
        assert_eq!((t.jobs[1].user, t.jobs[1].queue), (4, 2));
        assert_eq!(t.jobs[0].executable, -1);
    }

    #[test]
    fn queue_and_partition_names_and_the_start_time_come_from_the_header() {
        let text = "; UnixStartTime: 820090437\n; Queue:  0  interactive\n\
                    ; Queue:  3  q8s  \n; Partition:  2  batch\n\
                    1 0 5 100 4 -1 -1 4 200 -1 1 3 2 -1 3 2 -1 -1\n";
        let t = read(text.as_bytes(), "t.swf").unwrap();
        assert_eq!(t.unix_start(), Some(820_090_437));
        assert_eq!(t.queue_name(3), "q8s");
        assert_eq!(t.queue_name(0), "interactive");
        assert_eq!(t.queue_name(7), "7", "no name: the number");
        assert_eq!(t.partition("batch"), Some(2));
        assert_eq!(t.partition("2"), Some(2));
        assert_eq!(t.partition("interactive"), None);
        assert_eq!(t.jobs[0].partition, 2);
    }

    #[test]
    fn malformed_lines_are_named_by_number() {
        let e = read("; x\n1 0 5 100\n".as_bytes(), "t.swf").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.swf, line 2: a job line has 18 fields, this one has 4: 1 0 5 100"
        );
        let e = read(
            "1 0 5 1OO 4 -1 -1 4 200 -1 1 3 2 -1 1 -1 -1 -1\n".as_bytes(),
            "t.swf",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.swf, line 1: field 4 (\"1OO\") is not a number"),
            "{e}"
        );
    }
}
