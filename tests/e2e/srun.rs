//! srun and salloc against a real daemon and agents: inside a two-host
//! job srun lays its tasks out in Slurm's block order, each task runs on
//! its node (the agent says which: PBS_NODENUM) with its rank's `SLURM_*`
//! variables, `-l` labels the lines, `--multi-prog` gives each rank its
//! program, and a failing task's status and Slurm's error line come
//! back. Outside a job srun gets an allocation, runs the step in it and
//! exits with its status; salloc runs a command here whose srun reaches
//! the allocation's nodes.

use crate::cluster::Cluster;
use crate::harness::{Daemon, bin, stderr};

fn sorted_lines(text: &str, prefix: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(String::from)
        .collect();
    lines.sort();
    lines
}

#[test]
fn srun_in_a_two_host_job_runs_ranks_in_blocks_with_labels_and_statuses() {
    let c = Cluster::start(2, 1, 30, None);
    c.await_nodes(&["h1", "h2"], "free");
    let d = &c.d;
    let srun = bin("srun");
    d.script(
        "mp.conf",
        "# rank 0 alone, then a range, then the rest\n0 echo zero %t\n1-2 echo mid %t %o\n* echo rest %t\n",
    );
    d.script(
        "step.sh",
        &format!(
            "#!/bin/sh\n#SBATCH -N 2 --ntasks-per-node=2 -o step.out\n\
             {srun} -l sh -c 'echo \"rank $SLURM_PROCID node $SLURM_NODEID local $SLURM_LOCALID \
             at $PBS_NODENUM step $SLURM_STEP_ID of $SLURM_STEP_NUM_TASKS gtids $SLURM_GTIDS \
             job $SLURM_JOB_ID\"'\n\
             {srun} -l --multi-prog mp.conf\n\
             {srun} -n 4 sh -c 'exit $((SLURM_NODEID * 3))'; echo \"status $?\"\n\
             mkdir -p sub && cd sub && {srun} -n 1 sh -c 'echo \"in $PWD\"'\n"
        ),
    );
    let out = d.ok("sbatch", &["--parsable", "step.sh"]);
    let number = out.trim().to_string();
    let info = d.wait_job(&d.full_id(&number));
    let text = std::fs::read_to_string(d.work.join("step.out")).unwrap_or_default();
    assert_eq!(info.exit_status, Some(0), "{text}\n{}", d.log());
    // Ranks 0-1 on the first node, 2-3 on the second; the agent of each
    // says where it ran.
    assert_eq!(
        sorted_lines(&text, "0: rank")
            .into_iter()
            .chain(sorted_lines(&text, "1: rank"))
            .chain(sorted_lines(&text, "2: rank"))
            .chain(sorted_lines(&text, "3: rank"))
            .collect::<Vec<_>>(),
        [
            format!("0: rank 0 node 0 local 0 at 0 step 0 of 4 gtids 0,1 job {number}"),
            format!("1: rank 1 node 0 local 1 at 0 step 0 of 4 gtids 0,1 job {number}"),
            format!("2: rank 2 node 1 local 0 at 1 step 0 of 4 gtids 2,3 job {number}"),
            format!("3: rank 3 node 1 local 1 at 1 step 0 of 4 gtids 2,3 job {number}"),
        ],
        "{text}"
    );
    assert_eq!(
        sorted_lines(&text, "")
            .into_iter()
            .filter(|l| l.contains(": zero") || l.contains(": mid") || l.contains(": rest"))
            .collect::<Vec<_>>(),
        ["0: zero 0", "1: mid 1 0", "2: mid 2 1", "3: rest 3"],
        "--multi-prog: {text}"
    );
    // Ranks 2-3 (the second node) exit 3: one line for both, as Slurm.
    assert!(
        text.contains("srun: error: h2a: tasks 2-3: Exited with exit code 3"),
        "{text}"
    );
    assert!(!text.contains("h1a: task"), "ranks 0-1 exited 0: {text}");
    assert!(text.contains("status 3\n"), "{text}");
    // A task runs where srun was started, not in the job's directory.
    assert!(
        text.contains(&format!("in {}/sub\n", d.work.display())),
        "{text}"
    );
}

#[test]
fn srun_outside_a_job_allocates_runs_the_step_and_gives_its_status() {
    let d = Daemon::start();
    let out = d.run(
        "srun",
        &[
            "-n",
            "2",
            "-l",
            "-J",
            "outside",
            "sh",
            "-c",
            "echo \"hi $SLURM_PROCID of $SLURM_NTASKS in $SLURM_JOB_NAME\"; exit 5",
        ],
    );
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(5), "{said}\n{}", stderr(&out));
    assert_eq!(
        sorted_lines(&said, ""),
        ["0: hi 0 of 2 in outside", "1: hi 1 of 2 in outside"],
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("tasks 0-1: Exited with exit code 5"),
        "{}",
        stderr(&out)
    );
    // The allocation was a job of its own, ended with the step's status.
    let ids = d.all_job_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let info = d.wait_job(&ids[0]);
    assert_eq!(info.name, "outside");
    assert_eq!(info.exit_status, Some(5), "{info:?}");
    // Its terminal's output went nowhere: no file left behind.
    let left: Vec<_> = std::fs::read_dir(&d.work)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn salloc_runs_its_command_here_and_srun_in_it_reaches_the_nodes() {
    let c = Cluster::start(2, 1, 30, None);
    c.await_nodes(&["h1", "h2"], "free");
    let d = &c.d;
    let srun = bin("srun");
    let out = d.run(
        "salloc",
        &[
            "-N",
            "2",
            "sh",
            "-c",
            &format!(
                "echo \"nodes $SLURM_NNODES $SLURM_JOB_NODELIST\"; \
                 {srun} -l sh -c 'echo at $PBS_NODENUM step $SLURM_STEP_ID'; \
                 {srun} -n 1 sh -c 'echo again step $SLURM_STEP_ID'; exit 4"
            ),
        ],
    );
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "{said}\n{err}\n{}", d.log());
    assert!(
        said.contains("nodes 2 h[1-2]a\n") || said.contains("nodes 2 h1a,h2a\n"),
        "{said}"
    );
    let labelled: Vec<String> = sorted_lines(&said, "0: ")
        .into_iter()
        .chain(sorted_lines(&said, "1: "))
        .collect();
    assert_eq!(
        labelled,
        ["0: at 0 step 0", "1: at 1 step 0"],
        "{said}\n{err}"
    );
    assert!(said.contains("again step 1\n"), "steps are counted: {said}");
    let number = err
        .lines()
        .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
        .unwrap_or_else(|| panic!("{err}"))
        .to_string();
    assert!(
        err.contains(&format!("salloc: Relinquishing job allocation {number}")),
        "{err}"
    );
    let info = d.wait_job(&d.full_id(&number));
    assert_eq!(info.exit_status, Some(4), "{info:?}");
}

/// A job qsub submitted has no `SLURM_*` variables of its own: srun finds
/// its nodes from the daemon and gives each task the job's, one task per
/// node by default.
#[test]
fn srun_in_a_qsub_job_gives_the_tasks_the_jobs_slurm_variables() {
    let d = Daemon::start();
    let srun = bin("srun");
    d.script(
        "pbs.sh",
        &format!(
            "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\n{srun} -l sh -c 'echo \"$SLURM_JOB_ID $SLURM_NNODES $SLURM_PROCID at $PBS_NODENUM\"'\n\
             {srun} -n 2 -o 'o-%j-%t.txt' sh -c 'echo \"out $SLURM_PROCID\"; echo \"err $SLURM_PROCID\" >&2'\n"
        ),
    );
    let id = d.qsub(&["-l", "nodes=3", "pbs.sh"]);
    assert_eq!(d.wait_job(&id).exit_status, Some(0), "{}", d.log());
    let seq = id.split('.').next().unwrap();
    let out = std::fs::read_to_string(d.work.join(format!("pbs.sh.o{seq}"))).unwrap();
    assert_eq!(
        sorted_lines(&out, ""),
        [
            format!("0: {seq} 3 0 at 0"),
            format!("1: {seq} 3 1 at 1"),
            format!("2: {seq} 3 2 at 2"),
        ],
        "{out}"
    );
    // -o with %t: one file per task, its standard error in it too.
    for rank in ["0", "1"] {
        let file = d.work.join(format!("o-{seq}-{rank}.txt"));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        assert_eq!(
            sorted_lines(&text, ""),
            [format!("err {rank}"), format!("out {rank}")]
        );
    }
}

/// `-K`: the first task to fail ends the others, which would otherwise
/// run on (rank 1 sleeps for a minute): the signal goes down each task's
/// stream to its agent.
#[test]
fn kill_on_bad_exit_ends_the_other_tasks() {
    let d = Daemon::start();
    let out = d.run(
        "srun",
        &[
            "-n",
            "2",
            "-K",
            "sh",
            "-c",
            "if [ \"$SLURM_PROCID\" = 0 ]; then exit 2; fi; exec sleep 60",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(137), "{err}\n{}", d.log());
    assert!(err.contains(": task 0: Exited with exit code 2"), "{err}");
    assert!(err.contains(": task 1: Exited with exit code 137"), "{err}");
}
