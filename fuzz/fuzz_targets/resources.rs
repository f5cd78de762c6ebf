//! `-l` resource lists as the daemon reads them: `NAME=VALUE` entries
//! split at commas as qsub splits them, PBS Pro's `select=` chunks and
//! `place=`, Torque's `nodes=N:ppn=P+host` specs, sizes and durations.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qmesh_core::resources::{self, ResourceRequest};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let pairs: Vec<(&str, &str)> = text
        .split(',')
        .filter_map(|item| item.split_once('='))
        .collect();
    if let Ok(req) = ResourceRequest::parse_with(pairs, &["foo_licence"]) {
        let _ = req.is_plain();
        let _ = req.resource_list(req.nodes.unwrap_or(1), req.walltime.unwrap_or(0));
    }
    let _ = resources::chunk::parse_select(text);
    let _ = resources::chunk::parse_nodes_spec(text);
    let _ = resources::Place::parse(text);
    let _ = resources::parse_size(text);
    let _ = qmesh_core::time::parse_duration(text);
    let _ = qmesh_core::select::parse_resources(text);
    let _ = qmesh_core::array::ArraySpec::parse_pbs(text);
    let _ = qmesh_core::array::ArraySpec::parse_torque(text);
    let _ = qmesh_core::depend::parse(text, "srv");
});
