//! Job arrays end to end: real scripts that use their index, a throttle
//! watched from inside the jobs, a range deleted before it ran, a job that
//! waits for a whole array, and an array half run when qmeshd and its
//! agent are killed.

use std::collections::BTreeMap;

use crate::harness::{Daemon, stderr};

const MACHINE: &str = r#"
[agents]
local = true
local_host = "localhost"

[server]
default_queue = "batch"

[[queue]]
name = "batch"
default_walltime = "1:00:00"

[[node_set]]
name = "cpu"
topology = "flat"
count = 6
prefix = "cpu"
host = "localhost"
"#;

/// The array's sequence number: `12` of `12[].host`.
fn seq(id: &str) -> &str {
    id.split('[').next().unwrap_or(id)
}

/// Each line of `file`, counted.
fn counted(d: &Daemon, file: &str) -> BTreeMap<String, u32> {
    let text = std::fs::read_to_string(d.work.join(file)).unwrap_or_default();
    let mut seen = BTreeMap::new();
    for line in text.lines() {
        *seen.entry(line.to_string()).or_default() += 1;
    }
    seen
}

#[test]
fn a_throttled_array_never_runs_more_than_its_limit() {
    let d = Daemon::start_with(Some(MACHINE));
    // Each sub-job marks itself running, counts the marks, and leaves.
    d.script(
        "sweep.sh",
        "#!/bin/sh\n#PBS -J 0-11%2\ncd \"$PBS_O_WORKDIR\"\n\
         touch running.$PBS_ARRAY_INDEX\n\
         ls running.* | wc -l >> counts\n\
         sleep 0.3\n\
         ls running.* | wc -l >> counts\n\
         rm running.$PBS_ARRAY_INDEX\n\
         echo \"$PBS_ARRAY_INDEX $PBS_ARRAY_ID $PBS_JOBID\" >> ran\n",
    );
    let id = d.qsub(&["sweep.sh"]);
    // Six nodes are free, yet the throttle holds the rest back, saying so.
    let json = d.ok("qstat", &["-f", "-F", "json", &id]);
    assert!(json.contains("max_run_subjobs"), "{json}");
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{}", d.log());
    let counts = counted(&d, "counts");
    let most: u32 = counts
        .keys()
        .map(|k| k.trim().parse().unwrap())
        .max()
        .unwrap();
    assert!(most <= 2, "more than 2 ran at once: {counts:?}");
    let ran = counted(&d, "ran");
    assert_eq!(ran.len(), 12, "{ran:?}");
    let s = seq(&id);
    for line in ran.keys() {
        let mut words = line.split(' ');
        let index = words.next().unwrap();
        assert_eq!(words.next(), Some(id.as_str()), "PBS_ARRAY_ID: {line}");
        assert_eq!(
            words
                .next()
                .map(|j| j.split('.').next().unwrap().to_string()),
            Some(format!("{s}[{index}]")),
            "PBS_JOBID: {line}"
        );
    }
    assert!(ran.values().all(|&n| n == 1), "{ran:?}");
    // qstat -x -t: the array and its twelve sub-jobs, each finished.
    let out = d.ok("qstat", &["-x", "-t", "-F", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let jobs = doc["Jobs"].as_object().unwrap();
    assert_eq!(jobs.len(), 13, "{out}");
    let sub = &jobs[&format!("{s}[3].{}", id.split_once('.').unwrap().1)];
    assert_eq!(sub["job_state"], "F");
    assert_eq!(sub["array_index"], 3);
    assert_eq!(sub["Exit_status"], 0);
}

#[test]
fn qstat_shows_an_array_as_one_line_and_expands_it_with_t() {
    let d = Daemon::start_with(Some(MACHINE));
    d.script("w.sh", "#!/bin/sh\nexit 0\n");
    let id = d.qsub(&["-h", "-t", "1,4,9-12", "w.sh"]);
    let plain = d.ok("qstat", &[]);
    assert_eq!(
        plain.lines().filter(|l| l.contains(seq(&id))).count(),
        1,
        "{plain}"
    );
    let all = d.ok("qstat", &["-t"]);
    for index in [1, 4, 9, 10, 11, 12] {
        assert!(all.contains(&format!("{}[{index}]", seq(&id))), "{all}");
    }
    assert!(!all.contains(&format!("{}[2]", seq(&id))), "{all}");
    // One sub-job, by its id, unquoted and quoted as shells pass them.
    let one = d.ok("qstat", &["-f", &format!("{}[9]", seq(&id))]);
    assert!(one.contains("array_index = 9"), "{one}");
    assert!(one.contains(&format!("array_id = {id}")), "{one}");
    let array = d.ok("qstat", &["-f", &id]);
    assert!(
        array.contains("array_indices_submitted = 1,4,9-12"),
        "{array}"
    );
    assert!(array.contains("array = True"), "{array}");
    // -J lists arrays only.
    d.script("plain.sh", "#!/bin/sh\nexit 0\n");
    let plain_id = d.qsub(&["-h", "plain.sh"]);
    let arrays = d.ok("qstat", &["-J"]);
    assert!(
        arrays.contains(seq(&id)) && !arrays.contains(seq(&plain_id)),
        "{arrays}"
    );
    // spq and spwhen say what is left of it.
    let when = d.ok("spwhen", &[&id]);
    assert!(when.contains("6 of 6 left, 0 running"), "{when}");
    let when = d.ok("spwhen", &[&format!("{}[9]", seq(&id))]);
    assert!(
        when.contains("6 of 6 left"),
        "a sub-job left to start: {when}"
    );
    let spq = d.ok("spq", &[]);
    assert!(spq.contains("(array: 6 of 6 left"), "{spq}");
    // qselect: -J the arrays, -T jobs and sub-jobs, not arrays.
    let arrays = d.ok("qselect", &["-J"]);
    assert_eq!(arrays.trim(), id, "{arrays}");
    let jobs = d.ok("qselect", &["-T"]);
    assert_eq!(
        jobs.lines().count(),
        7,
        "six sub-jobs and the plain job: {jobs}"
    );
    assert!(!jobs.lines().any(|l| l.trim() == id), "{jobs}");
    // A sub-job that is not one of the array's is no such job.
    let out = d.run("qstat", &[&format!("{}[2]", seq(&id))]);
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_range_deleted_before_it_starts_never_runs() {
    let d = Daemon::start_with(Some(MACHINE));
    d.script(
        "r.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho $PBS_ARRAYID >> ran\n",
    );
    let id = d.qsub(&["-h", "-t", "1-10", "r.sh"]);
    let range = format!("{}[5-9]", seq(&id));
    let out = d.run("qdel", &[&range]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The range is gone from qstat -t.
    let all = d.ok("qstat", &["-t"]);
    assert!(!all.contains(&format!("{}[7]", seq(&id))), "{all}");
    d.ok("qrls", &[&id]);
    let info = d.wait_job(&id);
    // PBS Pro: 2 when sub-jobs were deleted.
    assert_eq!(info.exit_status, Some(2), "{info:?}");
    let ran: Vec<String> = counted(&d, "ran").into_keys().collect();
    let mut ran: Vec<u32> = ran.iter().map(|s| s.parse().unwrap()).collect();
    ran.sort();
    assert_eq!(ran, [1, 2, 3, 4, 10]);
    // Deleting it again names what is wrong.
    let out = d.run("qdel", &[&range]);
    assert!(!out.status.success());
}

#[test]
fn a_job_that_depends_on_an_array_waits_for_all_of_it() {
    let d = Daemon::start_with(Some(MACHINE));
    let gate = d.fifo("gate");
    // Sub-job 3 waits for the test's word; the others end at once.
    d.script(
        "part.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\n\
         if [ \"$PBS_ARRAY_INDEX\" = 3 ]; then read x < gate; fi\n\
         echo $PBS_ARRAY_INDEX >> parts\n",
    );
    d.script(
        "sum.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\nwc -l < parts > summed\n",
    );
    let id = d.qsub(&["-J", "1-5", "part.sh"]);
    let after = d.qsub(&["-W", &format!("depend=afterok:{id}"), "sum.sh"]);
    // Sub-job-level dependencies are refused, as PBS Pro does.
    let out = d.run(
        "qsub",
        &["-W", &format!("depend=afterok:{}[2]", seq(&id)), "sum.sh"],
    );
    assert!(
        !out.status.success() && stderr(&out).contains("whole array"),
        "{}",
        stderr(&out)
    );
    let job = d.job_json(&after);
    assert_eq!(job["job_state"], "H", "{job}");
    d.write_fifo(&gate, "go\n");
    assert_eq!(d.wait_job(&after).exit_status, Some(0), "{}", d.log());
    let summed = std::fs::read_to_string(d.work.join("summed")).unwrap();
    assert_eq!(summed.trim(), "5");
}

/// Kills this daemon's qmesh-agent (not its zygote, shepherds or jobs):
/// the process the daemon's log says it started last.
fn kill_agent(d: &Daemon) {
    crate::harness::signal(d.local_agent_pid(), nix::sys::signal::Signal::SIGKILL);
}

#[test]
fn an_array_half_run_survives_kill_9_of_qmeshd_and_its_agent() {
    let mut d = Daemon::start_with(Some(MACHINE));
    let started = [d.fifo("started.1"), d.fifo("started.2")];
    // The first two wait, running, while the daemon and agent are killed.
    d.script(
        "half.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\n\
         echo $PBS_ARRAY_INDEX >> ran\n\
         if [ \"$PBS_ARRAY_INDEX\" -le 2 ]; then\n\
           echo up > started.$PBS_ARRAY_INDEX\n\
           while [ ! -e gate ]; do sleep 0.1; done\n\
         fi\n",
    );
    let id = d.qsub(&["-J", "1-8%2", "half.sh"]);
    for fifo in &started {
        d.read_fifo(fifo);
    }
    d.kill9();
    kill_agent(&d);
    d.spawn();
    std::fs::write(d.work.join("gate"), "").unwrap();
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{}", d.log());
    let ran = counted(&d, "ran");
    assert_eq!(ran.len(), 8, "{ran:?}");
    assert!(
        ran.values().all(|&n| n == 1),
        "a sub-job ran twice: {ran:?}"
    );
}

#[test]
fn commands_take_an_array_a_sub_job_and_a_range() {
    let d = Daemon::start_with(Some(MACHINE));
    let up = [d.fifo("up.0"), d.fifo("up.1")];
    // 0 and 1 run and wait for a signal; the rest end at once.
    d.script(
        "cmd.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\n\
         if [ \"$PBS_ARRAY_INDEX\" -le 1 ]; then\n\
           trap 'echo usr1 >> got.$PBS_ARRAY_INDEX; exit 0' USR1\n\
           echo up > up.$PBS_ARRAY_INDEX\n\
           while :; do sleep 0.1; done\n\
         fi\n\
         echo \"$PBS_ARRAY_INDEX $PBS_WALLTIME\" >> ran\n",
    );
    // Two at once: 0 and 1 hold the throttle until they are signalled.
    let id = d.qsub(&["-J", "0-5%2", "-h", "cmd.sh"]);
    let s = seq(&id).to_string();
    // A range's wall time changed before it starts, while its array is
    // held: 3 and 4 get records of their own, held with the array, and
    // released with it.
    d.ok("qalter", &["-l", "walltime=0:20:00", &format!("{s}[3-4]")]);
    let server = id.split_once('.').unwrap().1;
    let sub3 = d.job_json(&format!("{s}[3].{server}"));
    assert_eq!(sub3["job_state"], "H", "held with its array: {sub3}");
    d.ok("qrls", &[&id]);
    for fifo in &up {
        d.read_fifo(fifo);
    }
    // One sub-job held alone while the others run.
    d.ok("qhold", &[&format!("{s}[5]")]);
    // spq and spwhen speak of the array while sub-job 5 waits.
    let spq = d.ok("spq", &[]);
    assert!(spq.contains(&format!("{s}[5]")), "{spq}");
    // qsig on the array reaches each running sub-job.
    d.ok("qsig", &["-s", "USR1", &id]);
    let sub5 = format!("{s}[5].{server}");
    let job = d.job_json(&sub5);
    assert_eq!(job["job_state"], "H", "{job}");
    d.ok("qrls", &[&sub5]);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{}", d.log());
    for i in 0..=1 {
        let got = std::fs::read_to_string(d.work.join(format!("got.{i}"))).unwrap();
        assert_eq!(got.trim(), "usr1");
    }
    let ran = counted(&d, "ran");
    let walltime = |i: u32| {
        ran.keys()
            .find(|l| l.starts_with(&format!("{i} ")))
            .map(|l| l.split(' ').nth(1).unwrap().to_string())
            .unwrap_or_default()
    };
    assert_eq!(walltime(3), "1200", "{ran:?}");
    assert_eq!(walltime(2), "3600", "{ran:?}");
    assert!(!walltime(5).is_empty(), "{ran:?}");
}

#[test]
fn qrerun_requeues_the_running_sub_jobs_of_an_array() {
    let d = Daemon::start_with(Some(MACHINE));
    let up = [d.fifo("up.0"), d.fifo("up.1")];
    // A first run says so and waits; a second one ends at once.
    d.script(
        "rr.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\n\
         echo $PBS_ARRAY_INDEX >> runs\n\
         if [ ! -e seen.$PBS_ARRAY_INDEX ]; then\n\
           touch seen.$PBS_ARRAY_INDEX\n\
           echo up > up.$PBS_ARRAY_INDEX\n\
           while :; do sleep 0.1; done\n\
         fi\n",
    );
    let id = d.qsub(&["-J", "0-1", "rr.sh"]);
    for fifo in &up {
        d.read_fifo(fifo);
    }
    d.ok("qrerun", &[&id]);
    assert_eq!(d.wait_job(&id).exit_status, Some(0), "{}", d.log());
    let runs = counted(&d, "runs");
    assert_eq!(runs.get("0"), Some(&2), "{runs:?}");
    assert_eq!(runs.get("1"), Some(&2), "{runs:?}");
    let server = id.split_once('.').unwrap().1;
    let sub = d.job_json(&format!("{}[1].{server}", seq(&id)));
    assert_eq!(sub["run_count"], 2, "{sub}");
}

#[test]
fn qstat_t_lists_a_large_array_past_grpcs_default_message_size() {
    let d = Daemon::start_with(Some(MACHINE));
    d.script("big.sh", "#!/bin/sh\nexit 0\n");
    // 20,000 sub-jobs: their listing is some 6 MB, past tonic's 4 MiB.
    let id = d.qsub(&["-h", "-J", "0-19999", "big.sh"]);
    let out = d.ok("qstat", &["-t"]);
    let subs = out
        .lines()
        .filter(|l| l.starts_with(&format!("{}[", seq(&id))))
        .count();
    assert_eq!(subs, 20_001, "the array and its sub-jobs");
}

#[test]
fn qdel_of_an_array_kills_what_runs_once_and_drops_the_rest() {
    let d = Daemon::start_with(Some(MACHINE));
    let up = [d.fifo("up.0"), d.fifo("up.1")];
    d.script(
        "del.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\n\
         echo $PBS_ARRAY_INDEX >> ran\n\
         echo up > up.$PBS_ARRAY_INDEX\n\
         while :; do sleep 0.1; done\n",
    );
    let id = d.qsub(&["-J", "0-9%2", "del.sh"]);
    for fifo in &up {
        d.read_fifo(fifo);
    }
    d.ok("qdel", &[&id]);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(2), "deleted: {info:?}");
    let ran: Vec<String> = counted(&d, "ran").into_keys().collect();
    assert_eq!(ran, ["0", "1"], "nothing else started");
    let server = id.split_once('.').unwrap().1;
    for i in 0..=1 {
        let sub = format!("{}[{i}].{server}", seq(&id));
        let kinds: Vec<String> = crate::tracejob::records(&d, &sub)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(kinds, ["S", "D", "E"], "{sub}: one deletion each");
    }
}
