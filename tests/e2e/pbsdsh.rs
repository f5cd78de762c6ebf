//! pbsdsh: a job runs a program on each of its nodes through the agents,
//! across hosts (network namespaces where the tests run as root), and
//! what it started there belongs to the job: qdel kills it on every host.

use std::time::{Duration, Instant};

use crate::cluster::{Cluster, read_lines};
use crate::harness::{alive, bin};

#[test]
fn pbsdsh_reaches_every_node_of_a_two_host_job_with_its_output() {
    let c = Cluster::start(2, 1, 30, None);
    c.await_nodes(&["h1", "h2"], "free");
    let d = &c.d;
    let pbsdsh = bin("pbsdsh");
    let tmrsh = bin("pbs_tmrsh");
    // pbs_tmrsh is what an MPI launcher calls in ssh's place.
    d.script(
        "each.sh",
        &format!(
            "#!/bin/sh\n{pbsdsh} -- /bin/sh -c 'echo \"node $PBS_NODENUM task $PBS_TASKNUM of $PBS_JOBID\"'\n\
             {pbsdsh} -n 1 -- /bin/sh -c 'exit 7'; echo \"one node: $?\"\n\
             {tmrsh} -n h2 /bin/sh -c 'echo \"rsh to node $PBS_NODENUM\"'\n"
        ),
    );
    let id = d.qsub(&["-lP", "2", "each.sh"]);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}\n{}", d.log());
    let seq = id.split('.').next().unwrap();
    let out = std::fs::read_to_string(d.work.join(format!("each.sh.o{seq}"))).unwrap();
    let mut lines: Vec<&str> = out.lines().filter(|l| l.starts_with("node ")).collect();
    lines.sort();
    assert_eq!(
        lines.len(),
        2,
        "{out}\n{}\n{}",
        std::fs::read_to_string(d.work.join(format!("each.sh.e{seq}"))).unwrap_or_default(),
        d.log()
    );
    assert!(
        lines[0].starts_with("node 0 task ") && lines[0].ends_with(&id),
        "{out}"
    );
    assert!(
        lines[1].starts_with("node 1 task ") && lines[1].ends_with(&id),
        "{out}"
    );
    assert_ne!(lines[0], lines[1]);
    assert!(
        out.contains("one node: 7"),
        "pbsdsh gives the task's status: {out}"
    );
}

#[test]
fn qsig_reaches_and_qdel_kills_what_pbsdsh_started_on_both_hosts() {
    let c = Cluster::start(2, 1, 30, None);
    c.await_nodes(&["h1", "h2"], "free");
    let d = &c.d;
    let started = d.fifo("tasks");
    let signalled = d.fifo("signalled");
    let pbsdsh = bin("pbsdsh");
    // The script itself ignores USR1; each task says it got it.
    d.script(
        "hold.sh",
        &format!(
            "#!/bin/sh\ntrap '' USR1\n{pbsdsh} -- /bin/sh -c 'trap \"echo usr1-$PBS_NODENUM > {sig}\" USR1; \
             echo \"$PBS_NODENUM $$\" > {fifo}; while :; do sleep 1; done'\n",
            fifo = started.display(),
            sig = signalled.display()
        ),
    );
    let id = d.qsub(&["-lP", "2", "hold.sh"]);
    let lines = read_lines(d, &started, 2);
    let pids: Vec<i32> = lines
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    let mut nodes: Vec<&str> = lines
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["0", "1"], "{lines:?}");
    assert!(pids.iter().all(|&p| alive(p)));
    d.ok("qsig", &["-s", "USR1", &id]);
    let mut got = read_lines(d, &signalled, 2);
    got.sort();
    assert_eq!(
        got,
        ["usr1-0", "usr1-1"],
        "qsig reaches the tasks on both hosts"
    );
    d.ok("qdel", &[&id]);
    d.wait_job(&id);
    // The agents kill the tasks as the job ends (SIGTERM; SIGKILL 5 s on).
    let deadline = Instant::now() + Duration::from_secs(30);
    while pids.iter().any(|&p| alive(p)) {
        assert!(
            Instant::now() < deadline,
            "tasks {pids:?} outlived their job by 30 s:\n{}",
            d.log()
        );
        // A process not ours to wait for: its end has no event to await.
        std::thread::sleep(Duration::from_millis(50));
    }
    c.await_nodes(&["h1", "h2"], "free");
}

/// A real MPI launcher (MPICH's Hydra, where installed) starts its
/// proxies on both hosts of a job through pbs_tmrsh instead of ssh.
#[test]
fn mpich_starts_its_ranks_on_both_hosts_through_pbs_tmrsh() {
    let Some(mpiexec) = ["/usr/bin/mpiexec.hydra", "/usr/local/bin/mpiexec.hydra"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        eprintln!("skipped: MPICH's mpiexec.hydra is not installed (apt-get install mpich)");
        return;
    };
    // Hydra's proxies call back to mpiexec: one network for all hosts.
    let c = Cluster::start_networked(2, 1, 30, None, false);
    c.await_nodes(&["h1", "h2"], "free");
    let d = &c.d;
    let tmrsh = bin("pbs_tmrsh");
    // Hydra hands its ranks mpiexec's environment: where a rank ran shows
    // in its parent's, the proxy that the node's agent started.
    let rank = d.script(
        "rank.sh",
        "#!/bin/sh\nnode=$(grep -z '^PBS_NODENUM=' /proc/$PPID/environ | tr -d '\\000')\n\
         echo \"rank $PMI_RANK under $node of $PBS_JOBID\"\n",
    );
    d.script(
        "mpi.sh",
        &format!(
            "#!/bin/sh\n{mpiexec} -launcher rsh -launcher-exec {tmrsh} -hosts h1,h2 -n 2 {}\n",
            rank.display()
        ),
    );
    let id = d.qsub(&["-lP", "2", "mpi.sh"]);
    let info = d.wait_job(&id);
    let seq = id.split('.').next().unwrap();
    let out = std::fs::read_to_string(d.work.join(format!("mpi.sh.o{seq}"))).unwrap_or_default();
    let err = std::fs::read_to_string(d.work.join(format!("mpi.sh.e{seq}"))).unwrap_or_default();
    assert_eq!(info.exit_status, Some(0), "{out}\n{err}\n{}", d.log());
    let mut lines: Vec<&str> = out.lines().filter(|l| l.starts_with("rank ")).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            format!("rank 0 under PBS_NODENUM=0 of {id}"),
            format!("rank 1 under PBS_NODENUM=1 of {id}")
        ],
        "{out}\n{err}"
    );
}

/// On the single-machine daemon, pbsdsh goes through its local agent.
#[test]
fn pbsdsh_on_a_single_machine() {
    let d = crate::harness::Daemon::start();
    let pbsdsh = bin("pbsdsh");
    d.script(
        "each.sh",
        &format!("#!/bin/sh\n{pbsdsh} -- /bin/sh -c 'echo \"node $PBS_NODENUM\"'\n"),
    );
    let id = d.qsub(&["-l", "nodes=3", "each.sh"]);
    assert_eq!(d.wait_job(&id).exit_status, Some(0), "{}", d.log());
    let seq = id.split('.').next().unwrap();
    let out = std::fs::read_to_string(d.work.join(format!("each.sh.o{seq}"))).unwrap();
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(lines, ["node 0", "node 1", "node 2"], "{out}");
}
