//! The job as PBS Pro and Torque start it: real scripts, submitted with
//! real qsub options, print what they see (environment, node file, where
//! they start, umask, limits, TMPDIR, GPUs) and the test checks it.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use crate::agents::{agent_with, free_port, remote_config};
use crate::harness::Daemon;

/// Four nodes of four CPUs on this host, and the queue batch over them.
const FOUR_CPU_NODES: &str = r#"
[agents]
local = true
local_host = "localhost"

[server]
default_queue = "batch"

[[queue]]
name = "batch"
node_sets = ["c"]

[[node_set]]
name = "c"
count = 4
host = "localhost"
cpus = 4
"#;

/// Prints `NAME=value` for what a PBS job sees; starts where PBS starts
/// it, then goes to the submit directory as PBS users write it.
const SHOW: &str = r#"#!/bin/sh
#PBS -N show
echo "pwd=$(pwd)"
for v in PBS_O_HOST PBS_O_HOME PBS_O_LOGNAME PBS_O_PATH PBS_O_QUEUE PBS_O_WORKDIR \
         PBS_ENVIRONMENT PBS_JOBNAME PBS_JOBID PBS_QUEUE PBS_NODEFILE PBS_NUM_NODES \
         PBS_NUM_PPN PBS_NP NCPUS OMP_NUM_THREADS PBS_NODENUM PBS_TASKNUM \
         PBS_VNODENUM PBS_JOBDIR TMPDIR; do
  eval "echo $v=\"\${$v}\""
done
echo "nodefile=$(tr '\n' ' ' < "$PBS_NODEFILE")"
echo "tmpdir_mode=$(stat -c %a "$TMPDIR")"
echo "umask=$(umask)"
echo "limits=$(ulimit -t) $(ulimit -v) $(ulimit -f)"
echo "bash=${BASH_VERSION:+yes}"
cd "$PBS_O_WORKDIR"
touch "made-${PBS_JOBID%%.*}"
"#;

/// What the script printed, by name.
fn seen(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn owner() -> nix::unistd::User {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .expect("the test's user")
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_pbs_pro_select_job_sees_its_share_starts_at_home_with_its_tmpdir_umask_and_limits() {
    let d = Daemon::start_with(Some(FOUR_CPU_NODES));
    d.script("show.sh", SHOW);
    // A qsub run without HOME or LOGNAME (cron, a service): the owner's.
    let out = d
        .cmd("qsub")
        .env_remove("HOME")
        .env_remove("LOGNAME")
        .args([
            "-l",
            "select=2:ncpus=2:mpiprocs=2",
            "-S",
            "/bin/bash",
            "-W",
            "umask=027",
            "-l",
            "pcput=00:01:00,pvmem=1gb,file=1mb",
            "show.sh",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", crate::harness::stderr(&out));
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}");
    let seq = id.split('.').next().unwrap();
    let out_path = d.work.join(format!("show.o{seq}"));
    let text = std::fs::read_to_string(&out_path).unwrap();
    let v = seen(&text);
    let me = owner();
    let home = me.dir.display().to_string();
    let tmpdir = d.tmpdir_base().join(format!("pbs.{id}"));
    let work = d.work.display().to_string();
    for (name, want) in [
        ("pwd", home.as_str()),
        ("PBS_JOBDIR", &home),
        ("PBS_O_HOME", &home),
        ("PBS_O_LOGNAME", &me.name),
        ("PBS_O_WORKDIR", &work),
        ("PBS_O_QUEUE", "batch"),
        ("PBS_QUEUE", "batch"),
        ("PBS_ENVIRONMENT", "PBS_BATCH"),
        ("PBS_JOBNAME", "show"),
        ("PBS_JOBID", &id),
        ("PBS_NUM_NODES", "2"),
        ("PBS_NUM_PPN", "2"),
        ("PBS_NP", "4"),
        ("NCPUS", "2"),
        ("OMP_NUM_THREADS", "1"),
        ("PBS_NODENUM", "0"),
        ("PBS_TASKNUM", "1"),
        ("PBS_VNODENUM", "0"),
        ("TMPDIR", &tmpdir.display().to_string()),
        ("tmpdir_mode", "700"),
        ("umask", "0027"),
        // CPU seconds, kB of address space, kB of file (bash's units).
        ("limits", "60 1048576 1024"),
        ("bash", "yes"),
    ] {
        assert_eq!(
            v.get(name).map(String::as_str),
            Some(want),
            "{name} in:\n{text}"
        );
    }
    assert_eq!(v["PBS_O_PATH"], std::env::var("PATH").unwrap());
    assert!(!v["PBS_O_HOST"].is_empty(), "{text}");
    // Each node once per MPI process, the job's nodes in order.
    let lines: Vec<&str> = v["nodefile"].split_whitespace().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0] == lines[1] && lines[2] == lines[3] && lines[0] != lines[2]);
    assert!(!tmpdir.exists(), "the TMPDIR goes with the job");
    assert_eq!(mode(&d.work.join(format!("made-{seq}"))), 0o640);
    assert_eq!(
        mode(&out_path),
        0o640,
        "the output file under the umask too"
    );
    // What the agent measured, in PBS's resources_used.
    assert!(info.resources_used.contains_key("cput"), "{info:?}");
    assert!(info.resources_used.contains_key("mem"), "{info:?}");
}

#[test]
fn a_torque_nodes_ppn_job_gets_ppn_lines_per_node_and_keeps_its_own_omp_threads() {
    let d = Daemon::start_with(Some(FOUR_CPU_NODES));
    d.script("show.sh", SHOW);
    let id = d.qsub(&[
        "-l",
        "nodes=2:ppn=3",
        "-v",
        "OMP_NUM_THREADS=7",
        "-j",
        "eo",
        "show.sh",
    ]);
    assert_eq!(d.wait_job(&id).exit_status, Some(0));
    let seq = id.split('.').next().unwrap();
    // -j eo: everything in the error file.
    assert!(!d.work.join(format!("show.o{seq}")).exists());
    let text = std::fs::read_to_string(d.work.join(format!("show.e{seq}"))).unwrap();
    let v = seen(&text);
    assert_eq!(v["PBS_NUM_PPN"], "3", "{text}");
    assert_eq!(v["PBS_NP"], "6", "{text}");
    assert_eq!(v["NCPUS"], "3", "{text}");
    assert_eq!(v["OMP_NUM_THREADS"], "7", "-v wins: {text}");
    assert_eq!(v["nodefile"].split_whitespace().count(), 6, "{text}");
    assert_eq!(v["bash"], "", "no -S: the #! line's shell");
}

#[test]
fn a_job_over_its_pcput_is_killed_by_the_kernel() {
    let d = Daemon::start_with(Some(FOUR_CPU_NODES));
    d.script("spin.sh", "#!/bin/sh\nwhile :; do :; done\n");
    let id = d.qsub(&["-l", "pcput=1", "spin.sh"]);
    let info = d.wait_job(&id);
    // RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL at the hard one.
    assert!(matches!(info.exit_signal, Some(9) | Some(24)), "{info:?}");
}

#[test]
fn two_gpu_jobs_on_one_host_get_different_gpus() {
    let port = free_port();
    let keydir = tempfile::tempdir().unwrap();
    let key = keydir.path().join("cluster.key");
    std::fs::write(&key, "s3cret-key\n").unwrap();
    let d = Daemon::start_with(Some(&remote_config(port, &key, "")));
    // remote1 holds the set's two nodes: two GPUs each.
    let mut agent = agent_with(&d, port, "remote1", &key, "gpus", &["--gpus", "4"]);
    d.await_node_state("r00", "free");
    d.await_node_state("r01", "free");
    let mut fifos = Vec::new();
    for name in ["a", "b"] {
        let seen = d.fifo(&format!("seen-{name}"));
        let go = d.fifo(&format!("go-{name}"));
        fifos.push((seen, go));
    }
    d.script(
        "gpu.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\n\
         echo \"$CUDA_VISIBLE_DEVICES $(tr '\\n' ' ' < \"$PBS_GPUFILE\")\" > seen-$PBS_JOBNAME\n\
         read x < go-$PBS_JOBNAME\n",
    );
    let a = d.qsub(&["-N", "a", "-l", "select=1:ngpus=2", "gpu.sh"]);
    let b = d.qsub(&["-N", "b", "-l", "select=1:ngpus=2", "gpu.sh"]);
    let mut given: Vec<String> = fifos
        .iter()
        .map(|(seen, _)| d.read_fifo(seen).trim().to_string())
        .collect();
    given.sort();
    assert_eq!(
        given,
        [
            "0,1 remote1-gpu0 remote1-gpu1",
            "2,3 remote1-gpu2 remote1-gpu3"
        ],
        "both run at once, on GPUs of their own"
    );
    for (_, go) in &fifos {
        d.write_fifo(go, "go\n");
    }
    assert_eq!(d.wait_job(&a).exit_status, Some(0));
    assert_eq!(d.wait_job(&b).exit_status, Some(0));
    crate::agents::stop_agent(&mut agent);
}

#[test]
fn a_job_submits_a_job_and_watches_it() {
    let d = Daemon::start_with(Some(FOUR_CPU_NODES));
    let qsub = crate::harness::bin("qsub");
    let qstat = crate::harness::bin("qstat");
    // Nothing tells the job where the daemon is but its agent. The child
    // may have ended by the time the parent asks: qstat -x.
    d.script(
        "child.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho \"$PBS_O_HOST\" > child_host\n",
    );
    d.script(
        "parent.sh",
        &format!(
            "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\n\
             {qsub} -N child child.sh > child_id || exit 1\n\
             {qstat} -x \"$(cat child_id)\" > /dev/null || exit 2\n"
        ),
    );
    let parent = d.qsub(&["parent.sh"]);
    assert_eq!(d.wait_job(&parent).exit_status, Some(0), "{}", d.log());
    let child = std::fs::read_to_string(d.work.join("child_id")).unwrap();
    assert_eq!(d.wait_job(child.trim()).exit_status, Some(0));
    let host = std::fs::read_to_string(d.work.join("child_host")).unwrap();
    let here = nix::unistd::gethostname().unwrap().into_string().unwrap();
    assert_eq!(
        host.trim(),
        here,
        "the child was submitted from the job's node"
    );
}
