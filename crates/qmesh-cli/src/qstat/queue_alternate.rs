//! `qstat -q`: PBS's other queue listing, the limits a job meets and the
//! jobs running and waiting, with totals:
//!
//! ```text
//!
//! server: server
//!
//! Queue            Memory CPU Time Walltime Node   Run   Que   Lm  State
//! ---------------- ------ -------- -------- ---- ----- ----- ----  -----
//! batch              --      --    24:00:00   64     3     2   --   E R
//!                                                ----- -----
//!                                                    3     2
//! ```
//!
//! Memory, CPU Time, Walltime and Node are the queue's `resources_max`
//! (mem, cput, walltime, nodes); Que counts queued, held and waiting jobs;
//! Lm is its `max_running`; State is E(nabled) or D(isabled), R(unning,
//! started) or S(topped). A limit the queue does not set shows `--`; the
//! queues carry no memory, CPU time or running-job limits yet, so those
//! columns show `--` (and `-G`/`-M` change nothing here).

use qmesh_core::time::format_hms;
use qmesh_proto::QueueInfo;

/// The listing of `queues` on `server` (nothing when there are none).
pub fn queue_alternate(queues: &[QueueInfo], server: &str) -> String {
    if queues.is_empty() {
        return String::new();
    }
    let mut out = format!("\nserver: {server}\n\n");
    out.push_str(
        "Queue            Memory CPU Time Walltime Node   Run   Que   Lm  State\n\
         ---------------- ------ -------- -------- ---- ----- ----- ----  -----\n",
    );
    let (mut all_running, mut all_waiting) = (0, 0);
    for q in queues {
        let none = "  --   ";
        let memory = "--  ";
        let cpu_time = none;
        let walltime = q.max_walltime.map_or_else(|| none.to_string(), format_hms);
        let nodes = q
            .max_nodes
            .map_or_else(|| "-- ".to_string(), |n| n.to_string());
        let limit = none;
        let waiting = q.queued + q.held + q.waiting;
        all_running += q.running;
        all_waiting += waiting;
        out.push_str(&format!(
            "{:<16.16} {memory:>6.6} {cpu_time:>8.8} {walltime:>8.8} {nodes:>4.4} {:>5} {waiting:>5} \
             {limit:>4.4}   {} {}\n",
            q.name,
            q.running,
            if q.enabled { 'E' } else { 'D' },
            if q.started { 'R' } else { 'S' },
        ));
    }
    out.push_str(&format!("{:47}----- -----\n", ""));
    out.push_str(&format!("{:47}{all_running:>5} {all_waiting:>5}\n", ""));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_as_pbs_prints_it() {
        let batch = QueueInfo {
            name: "batch".into(),
            enabled: true,
            started: true,
            max_walltime: Some(86_400),
            max_nodes: Some(64),
            queued: 1,
            held: 1,
            running: 3,
            ..Default::default()
        };
        let debug = QueueInfo {
            name: "debug_queue_with_a_long_name".into(),
            enabled: false,
            started: false,
            waiting: 4,
            ..Default::default()
        };
        assert_eq!(
            queue_alternate(&[batch, debug], "server"),
            "
server: server

Queue            Memory CPU Time Walltime Node   Run   Que   Lm  State
---------------- ------ -------- -------- ---- ----- ----- ----  -----
batch              --      --    24:00:00   64     3     2   --   E R
debug_queue_with   --      --       --     --      0     4   --   D S
                                               ----- -----
                                                   3     6
"
        );
        assert_eq!(queue_alternate(&[], "server"), "");
    }
}
