//! A job script's directives (`#PBS`, `#QSUB`, `#@$` lines), read and
//! checked as qsub reads them: the words, NQS's forms, every option's
//! parser (`-l`, `-v`, `-W`, `-J`/`-t`, ...).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|script: &[u8]| {
    let _ = qmesh_cli::directives::scan(script);
    let _ = qmesh_cli::directives::scan_with(script, &["#MY"]);
    let _ = qmesh_cli::qsub::check_directives(script);
});
