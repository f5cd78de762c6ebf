//! PBS's holidays file (`qmgr import holidays`): YEAR, the prime-time
//! rows and the holiday lines, and the qmgr commands made of them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(commands) = qmesh_core::qmgr::import_holidays_commands(text) {
        // What it writes must parse as qmgr.
        qmesh_core::qmgr::parse_script(&commands)
            .unwrap_or_else(|e| panic!("holidays made bad qmgr: {e}\n{commands}"));
    }
});
