//! The site's configuration file (TOML), read and checked, and the state
//! the daemon would start on it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(settings) = qmesh_config::Settings::parse(text, "fuzz.toml") else {
        return;
    };
    let _ = qmesh_core::State::new("srv", settings.initial, settings.node_sets);
});
