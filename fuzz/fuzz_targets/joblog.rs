//! Accounting log and server event lines as qreport, tracejob and
//! qmesh-sim --to-swf read them, and qreport's `E` records.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qmesh_core::joblog;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for line in text.lines() {
        if let Some(parsed) = joblog::parse_accounting_line(line) {
            let _ = joblog::record_keys(&parsed.message);
        }
        let _ = joblog::parse_event_line(line);
        let _ = joblog::record_keys(line);
        if let Some(ended) = qmesh_core::report::Ended::from_line(line) {
            let _ = (ended.wait(), ended.run());
        }
    }
    let _ = joblog::filter_mask(text);
    let _ = joblog::file_day(text);
});
