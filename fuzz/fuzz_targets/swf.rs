//! Standard Workload Format traces (qmesh-sim): header lines, job lines,
//! and what the replay asks of each job.
#![no_main]

use libfuzzer_sys::fuzz_target;

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
});
