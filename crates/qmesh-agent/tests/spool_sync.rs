//! A job's end, once in the spool, survives a power cut of its host: the
//! result file is written to a temporary name, fsynced, renamed into
//! place, and the directory holding the new name is fsynced before the
//! write returns (the agent reports the end only after). Proved on the
//! system calls, under strace, as the store's group commit is
//! (qmesh-store's power_cut test).

use std::process::Command;

/// The helper: run under strace by the test below.
#[test]
#[ignore = "run by a_result_is_synced_with_its_name_before_the_write_returns under strace"]
fn spool_sync_helper() {
    let Some(dir) = std::env::var_os("QMESH_SPOOL_SYNC_DIR") else {
        return;
    };
    let path = std::path::Path::new(&dir).join("result.json");
    qmesh_agent::record::write_atomic(&path, b"{}", 0o644).unwrap();
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(b"WRITTEN\n").unwrap();
    out.flush().unwrap();
}

#[test]
fn a_result_is_synced_with_its_name_before_the_write_returns() {
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("strace is not installed here: the system-call proof is skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("jobs-7");
    std::fs::create_dir(&job).unwrap();
    let trace = dir.path().join("trace");
    let out = Command::new("strace")
        .args([
            "-f",
            "-y",
            "-qq",
            "-e",
            "trace=fsync,fdatasync,rename,renameat,renameat2,write",
            "-o",
        ])
        .arg(&trace)
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "spool_sync_helper", "--ignored", "--nocapture"])
        .env("QMESH_SPOOL_SYNC_DIR", &job)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = std::fs::read_to_string(&trace).unwrap();
    let dir_fd = format!("<{}>", job.display());
    let (mut file_synced, mut renamed, mut dir_synced) = (false, false, false);
    for line in calls.lines() {
        if line.contains("fsync(") && line.contains(".result.json.") {
            file_synced = true;
        } else if line.contains("rename") && line.contains("result.json\"") {
            assert!(file_synced, "renamed before its data was synced:\n{calls}");
            renamed = true;
        } else if line.contains("fsync(") && line.contains(&dir_fd) && renamed {
            dir_synced = true;
        } else if line.contains("write(1") && line.contains("WRITTEN") {
            assert!(
                dir_synced,
                "the write returned before the directory naming the result was synced:\n{calls}"
            );
            return;
        }
    }
    panic!("the helper never said it wrote:\n{calls}");
}
