//! qmsg on the job's host: a line appended to the files the job has open
//! as its standard error and output, `/proc/JOB/fd/2` and `fd/1` of the
//! job's first process. Opening those links reaches the very file the job
//! writes, opened by the job as its user, whatever its path has become
//! since (a path could now be a symlink to a file of root's: it is never
//! opened by name). A job that joined its streams (`-j oe`) has one file:
//! the line is written once.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::MetadataExt;

use tracing::{info, warn};

/// Appends `text` and a newline to the job's error file, output file, or
/// both (once when they are one file). `job` is the job's first process.
pub fn write(job: i32, text: &str, to_output: bool, to_error: bool) {
    let mut written: Vec<(u64, u64)> = Vec::new();
    for (fd, wanted, name) in [(2, to_error, "error"), (1, to_output, "output")] {
        if !wanted {
            continue;
        }
        let link = format!("/proc/{job}/fd/{fd}");
        let file = OpenOptions::new().append(true).open(&link);
        let mut file = match file {
            Ok(f) => f,
            Err(e) => {
                warn!(
                    job,
                    "cannot open the job's {name} file ({link}: {e}); the message is not written there"
                );
                continue;
            }
        };
        let same = file
            .metadata()
            .map(|m| (m.dev(), m.ino()))
            .ok()
            .filter(|key| written.contains(key));
        if same.is_some() {
            continue;
        }
        let mut line = text.as_bytes().to_vec();
        line.push(b'\n');
        match file.write_all(&line) {
            Ok(()) => {
                info!(job, file = name, "qmsg written");
                if let Ok(m) = file.metadata() {
                    written.push((m.dev(), m.ino()));
                }
            }
            Err(e) => warn!(
                job,
                "cannot write the message to the job's {name} file: {e}"
            ),
        }
    }
}
