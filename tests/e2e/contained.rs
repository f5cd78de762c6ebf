//! Contained jobs: each job in its own cgroup on its host, held to the
//! memory it asked for and, on a shared node, to its CPUs; killed when it
//! goes over its memory, with a comment that says so and PBS's exit
//! status; everything it started (pbsdsh's tasks too, and what left its
//! session) measured and killed with it. Skipped where the host offers no
//! cgroup the agent can use (it says so at start).

use std::path::PathBuf;

use crate::harness::{Daemon, bin};

const SHARED: &str = "\
[agents]
local = true
local_host = \"localhost\"
heartbeat_secs = 1

[server]
default_queue = \"batch\"

[[queue]]
name = \"batch\"

[[node_set]]
name = \"shared\"
nodes = [\"s1\"]
host = \"localhost\"
jobs_per_node = 2
";

/// Where the local agent makes jobs' cgroups, as it said at start: the
/// hierarchy's version and the memory (v2: only) base, and v1's cpu base.
struct Bases {
    v2: bool,
    memory: PathBuf,
    cpu: Option<PathBuf>,
}

fn bases(d: &Daemon) -> Option<Bases> {
    // The agent logs this once it runs; the daemon is READY only after.
    let log = d.log();
    let line = log.lines().find(|l| l.contains("jobs run contained: "))?;
    let said = &line[line.find("jobs run contained: ")? + "jobs run contained: ".len()..];
    let word_after = |key: &str| -> Option<PathBuf> {
        let at = said.find(key)? + key.len();
        let rest = &said[at..];
        let end = rest.find(", ").unwrap_or(rest.len());
        Some(PathBuf::from(rest[..end].trim()))
    };
    if said.starts_with("cgroup v2") {
        let base = word_after(" under ")?;
        Some(Bases {
            v2: true,
            cpu: Some(base.clone()),
            memory: base,
        })
    } else {
        Some(Bases {
            v2: false,
            memory: word_after("memory under ")?,
            cpu: word_after("cpu under "),
        })
    }
}

fn contained() -> Option<Daemon> {
    let d = Daemon::start_with(Some(SHARED));
    // The agent starts with the daemon; wait for its word on cgroups.
    d.await_node_state("s1", "free");
    if bases(&d).is_none() {
        let log = d.log();
        let why = log
            .lines()
            .find(|l| l.contains("cannot be contained"))
            .unwrap_or("the agent said nothing of cgroups");
        eprintln!("no usable cgroups here: skipped ({why})");
        return None;
    }
    Some(d)
}

/// Whether `pid` runs: not gone, not a zombie (killed, not yet reaped
/// by init).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat[stat.rfind(')')? + 1..]
                .split_whitespace()
                .next()?
                .to_string();
            Some(state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .to_string()
}

#[test]
fn a_job_is_held_to_its_memory_and_its_cpus_on_a_shared_node_and_its_use_is_shown() {
    let Some(d) = contained() else { return };
    let b = bases(&d).unwrap();
    let started = d.fifo("started");
    let go = d.fifo("go");
    d.script(
        "held.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho up > started\nread x < go\n\
         i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done\n\
         head -c 8m /dev/zero | tail > /dev/null\nexit 0\n",
    );
    let id = d.qsub(&["-l", "mem=48mb", "-l", "ncpus=1", "held.sh"]);
    assert_eq!(d.read_fifo(&started).trim(), "up");
    let cgroup = b.memory.join(&id);
    if b.v2 {
        assert_eq!(read(cgroup.join("memory.max")), (48u64 << 20).to_string());
        assert_eq!(read(cgroup.join("memory.oom.group")), "1");
        if cgroup.join("cpu.max").exists() {
            assert_eq!(read(cgroup.join("cpu.max")), "100000 100000");
        }
    } else {
        assert_eq!(
            read(cgroup.join("memory.limit_in_bytes")),
            (48u64 << 20).to_string()
        );
        if let Some(cpu) = &b.cpu {
            assert_eq!(
                read(cpu.join(&id).join("cpu.cfs_quota_us")),
                "100000",
                "one CPU's time on a shared node"
            );
        }
    }
    // The job's processes are in it.
    let procs = read(cgroup.join("cgroup.procs"));
    assert!(!procs.is_empty(), "the job runs in its cgroup");
    // While it runs, qstat -f shows what it used so far (from its agent's
    // heartbeats: there is no event to await).
    let mut tries = 0;
    let so_far = loop {
        let job = d.job_json(&id);
        if job["resources_used"].get("mem").is_some() {
            break job;
        }
        tries += 1;
        assert!(tries < 300, "no resources_used.mem while it runs: {job}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(so_far["job_state"], "R");
    for key in ["cput", "cpupercent", "mem", "vmem", "walltime"] {
        assert!(
            so_far["resources_used"].get(key).is_some(),
            "resources_used.{key} while it runs: {so_far}"
        );
    }
    d.write_fifo(&go, "go\n");
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}\n{}", d.log());
    assert!(!cgroup.exists(), "its cgroup goes with it");
    let job = d.job_json(&id);
    let used = &job["resources_used"];
    for key in ["cput", "cpupercent", "mem", "vmem", "walltime"] {
        assert!(used.get(key).is_some(), "resources_used.{key}: {job}");
    }
    // A clean stop (the daemon's SIGTERM reaches its local agent) takes
    // the agent's level of the hierarchy with it.
    let mut d = d;
    d.stop();
    assert!(!b.memory.exists(), "{} is left", b.memory.display());
    if let Some(cpu) = &b.cpu {
        assert!(!cpu.exists(), "{} is left", cpu.display());
    }
    // tail held 8 MB at once: the cgroup's peak saw it.
    let kb = |v: &serde_json::Value| {
        v.as_str()
            .and_then(|s| s.strip_suffix("kb"))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("a size in kb: {v}"))
    };
    assert!(kb(&used["mem"]) >= 8 * 1024, "{used}");
    assert!(kb(&used["vmem"]) >= kb(&used["mem"]), "{used}");
    // The accounting record has them too.
    let records = crate::tracejob::records(&d, &id);
    let end = records
        .iter()
        .find(|(kind, _)| kind == "E")
        .map(|(_, text)| text.clone())
        .unwrap_or_else(|| panic!("no E record for {id}: {records:?}"));
    assert!(
        end.contains("resources_used.vmem=") && end.contains("resources_used.cpupercent="),
        "{end}"
    );
}

#[test]
fn a_job_over_its_memory_is_killed_with_a_comment_and_pbs_exit_status() {
    let Some(d) = contained() else { return };
    // tail keeps a line without end in memory: 300 MB against 32 MB.
    d.script(
        "greedy.sh",
        "#!/bin/sh\nhead -c 300m /dev/zero | tail > /dev/null\necho \"tail: $?\"\nsleep 120\n",
    );
    let id = d.qsub(&["-l", "mem=32mb", "greedy.sh"]);
    let info = d.wait_job(&id);
    let job = d.job_json(&id);
    assert_eq!(
        info.exit_status,
        Some(256 + 9),
        "PBS's status for a job killed by SIGKILL: {job}\n{}",
        d.log()
    );
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(
        comment.contains("job exceeded its memory limit")
            && comment.contains("it used more memory than it asked for (mem=32768kb on"),
        "{comment}"
    );
    assert!(
        comment.contains("ask for more with -l mem"),
        "says what to do: {comment}"
    );
    let seq = id.split('.').next().unwrap();
    let err = std::fs::read_to_string(d.work.join(format!("greedy.sh.e{seq}"))).unwrap();
    assert!(
        err.lines()
            .any(|l| l.starts_with("=>> PBS: job killed: mem ")
                && l.ends_with("kb exceeded limit 32768kb")),
        "PBS's line in the error file: {err}"
    );
}

#[test]
fn what_pbsdsh_started_is_measured_and_killed_with_the_job_even_out_of_its_session() {
    let Some(d) = contained() else { return };
    let pbsdsh = bin("pbsdsh");
    // A task that burns CPU for 3 s of wall time (at least a CPU second
    // even on a busy machine), and one that leaves its session and stays.
    d.script(
        "tasks.sh",
        &format!(
            "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\n\
             {pbsdsh} -- /bin/cat /proc/self/cgroup
             cat /proc/self/cgroup
             {pbsdsh} -- /bin/sh -c 'end=$(($(date +%s) + 3)); while [ $(date +%s) -lt $end ]; do :; done'\n\
             {pbsdsh} -- /bin/sh -c 'setsid sleep 1000 < /dev/null > /dev/null 2>&1 & echo $! > '\"$PWD\"'/escaped'\n\
             exit 0\n"
        ),
    );
    let id = d.qsub(&["tasks.sh"]);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}\n{}", d.log());
    let pid: i32 = std::fs::read_to_string(d.work.join("escaped"))
        .expect("the task wrote its escapee's pid")
        .trim()
        .parse()
        .unwrap();
    assert!(
        !running(pid),
        "the process that left the task's session died with the job: {}",
        std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default()
    );
    // The task's CPU time is the job's (the script only waited for it).
    let job = d.job_json(&id);
    let cput = job["resources_used"]["cput"].as_str().unwrap_or_default();
    assert_ne!(cput, "00:00:00", "{job}");
    assert!(!cput.is_empty(), "{job}");
}

#[test]
fn a_job_over_its_cpu_time_is_killed_as_pbs_does() {
    let Some(d) = contained() else { return };
    // Two processes that spin: cput counts both (their cgroup's time).
    d.script(
        "spin.sh",
        "#!/bin/sh\n(while :; do :; done) &\nwhile :; do :; done\n",
    );
    let id = d.qsub(&["-l", "cput=2", "-l", "walltime=60", "spin.sh"]);
    let info = d.wait_job(&id);
    let job = d.job_json(&id);
    assert_eq!(
        info.exit_status,
        Some(256 + 15),
        "SIGTERM, as for its wall time: {job}"
    );
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(
        comment.contains("job exceeded its CPU time limit")
            && comment.contains("over the 2 s it asked for (-l cput)"),
        "{comment}"
    );
    let seq = id.split('.').next().unwrap();
    let err = std::fs::read_to_string(d.work.join(format!("spin.sh.e{seq}"))).unwrap();
    assert!(
        err.lines().any(
            |l| l.starts_with("=>> PBS: job killed: cput ") && l.ends_with(" exceeded limit 2")
        ),
        "{err}"
    );
    assert!(job["Resource_List"].get("cput").is_some(), "{job}");
    assert!(!comment.contains("not enforced"), "{comment}");
}

/// A job's cgroup that no job owns any more (its shepherd was killed with
/// SIGKILL, or the host went down under it) is removed when the agent
/// starts again; a running job's is kept, and the job goes on.
#[test]
fn cgroups_left_behind_go_when_the_agent_starts_again_and_a_running_jobs_stays() {
    let Some(d) = contained() else { return };
    let b = bases(&d).unwrap();
    let started = d.fifo("started");
    d.script(
        "long.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho up > started\nsleep 300\n",
    );
    let id = d.qsub(&["long.sh"]);
    assert_eq!(d.read_fifo(&started).trim(), "up");
    let mut left: Vec<PathBuf> = vec![b.memory.join("999.gone")];
    if let Some(cpu) = b.cpu.as_ref().filter(|cpu| **cpu != b.memory) {
        left.push(cpu.join("999.gone"));
    }
    for dir in &left {
        std::fs::create_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
    // The agent killed outright: the daemon starts another.
    crate::harness::signal(d.local_agent_pid(), nix::sys::signal::Signal::SIGKILL);
    d.await_in_log(
        &d.state_dir.join("agent.log"),
        "removed the cgroups of jobs this agent no longer has",
        1,
    );
    for dir in &left {
        assert!(!dir.exists(), "{} is left", dir.display());
    }
    assert!(
        b.memory.join(&id).exists(),
        "the running job's cgroup is kept\n{}",
        d.log()
    );
    d.ok("qdel", &[&id]);
    d.wait_job(&id);
}
