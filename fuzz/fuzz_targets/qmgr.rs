//! qmgr scripts (PBS's commands and qmesh's own: node sets, groups,
//! calendar, accounts, shutdowns, resources), parsed and then run as a
//! manager against the embedded configuration, as the daemon does.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use qmesh_core::qmgr;

fuzz_target!(|data: &[u8]| {
    let Ok(script) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(commands) = qmgr::parse_script(script) else {
        return;
    };
    common::with_state(|state, file| {
        let mut config = state.config().clone();
        let _ = qmgr::run_over(&commands, &mut config, state, &common::manager(), file);
    });
});
