//! Standard Workload Format traces (qmesh-sim): header lines, job lines,
//! what the replay asks of each job, and, for a short trace, the replay
//! itself on a 64-node flat machine (times, sizes, the log's start).
#![no_main]

use libfuzzer_sys::fuzz_target;
use qmesh_core::node::Topology;
use qmesh_sim::machine::Machine;
use qmesh_sim::replay::{self, Options};

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = qmesh_sim::swf::read(data, "fuzz.swf") else {
        return;
    };
    let _ = trace.unix_start();
    let _ = trace.max_procs();
    let _ = trace.partition("1");
    for job in &trace.jobs {
        let _ = job.procs();
        let _ = job.walltime();
        let _ = trace.queue_name(job.queue);
    }
    if trace.jobs.len() <= 32 {
        let options = Options {
            machine: Machine::Single {
                topology: Topology::Flat,
                nodes: Some(64),
            },
            accounting: true,
            ..Options::default()
        };
        let _ = replay::replay(&trace, &options);
    }
});
