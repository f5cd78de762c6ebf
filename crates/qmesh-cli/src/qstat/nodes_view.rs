//! qmesh's own job table (`qstat --nodes-view`), for those who want the
//! nodes, the wall time asked for and the time elapsed at a glance:
//!
//! ```text
//! Job ID    Name             User  Queue Nodes Walltime S  Elapsed
//! --------- ---------------- ----- ----- ----- -------- - --------
//! 17.server solver           alice batch     3 01:00:00 R 00:12:34
//! ```
//!
//! Columns are as wide as their widest cell; with `-n`, each job's nodes
//! follow on a line of their own.

use qmesh_core::time::format_hms;
use qmesh_proto::JobInfo;

use super::jobs::{elapsed, exec_host, now_for, state_letter};
use crate::output::{self, Column};

const COLUMNS: [Column; 8] = [
    Column::left("Job ID"),
    Column::left("Name").at_most(16),
    Column::left("User").at_most(12),
    Column::left("Queue").at_most(12),
    Column::right("Nodes"),
    Column::right("Walltime"),
    Column::left("S"),
    Column::right("Elapsed"),
];

/// The table of `jobs` (nothing when there are none); `time` is the
/// server's time; `show_nodes` (`-n`) puts each job's nodes under it.
pub fn nodes_view(jobs: &[JobInfo], time: i64, show_nodes: bool) -> String {
    if jobs.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .map(|job| {
            vec![
                job.id.clone(),
                job.name.clone(),
                job.owner.clone(),
                job.queue.clone(),
                job.nodes.to_string(),
                format_hms(job.walltime),
                state_letter(job),
                elapsed(job, now_for(job, time)).map_or_else(|| "--".to_string(), format_hms),
            ]
        })
        .collect();
    let table = output::table(&COLUMNS, &rows);
    if !show_nodes {
        return table;
    }
    let mut lines = table.lines();
    let mut out = String::new();
    for header in lines.by_ref().take(2) {
        out.push_str(header);
        out.push('\n');
    }
    for (line, job) in lines.zip(jobs) {
        let hosts = exec_host(job);
        out.push_str(line);
        out.push_str("\n   ");
        out.push_str(if hosts.is_empty() { "--" } else { &hosts });
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_jobs::{T0, queued, running};
    use super::*;

    #[test]
    fn the_table() {
        assert_eq!(
            nodes_view(&[running(), queued()], T0 + 1000, false),
            "\
Job ID    Name             User  Queue Nodes Walltime S  Elapsed
--------- ---------------- ----- ----- ----- -------- - --------
17.server solver           alice batch     3 01:00:00 R 00:12:34
18.server a_rather_long_j* bob   batch    64 48:00:00 Q       --
"
        );
    }

    #[test]
    fn dash_n_puts_each_jobs_nodes_under_it() {
        let text = nodes_view(&[running(), queued()], T0 + 1000, true);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[2].starts_with("17.server"), "{text}");
        assert_eq!(lines[3], "   n1+n2+n3");
        assert!(lines[4].starts_with("18.server"), "{text}");
        assert_eq!(lines[5], "   --");
    }

    #[test]
    fn nothing_to_list_prints_nothing() {
        assert_eq!(nodes_view(&[], T0, false), "");
    }
}
