//! sbatch to the same daemon as qsub: `#SBATCH` lines and the command
//! line, the output file Slurm names (`slurm-%j.out` in the submission
//! directory, `%x-%j.out` and arrays' `%A_%a`), the `SLURM_*` variables the
//! job sees, `--parsable`, `--wrap`, `-W` and its exit status, a
//! dependency, and the job in qstat under its partition.

use crate::harness::{Daemon, stderr};

/// Prints the job's Slurm variables, sorted.
const ENV_DUMP: &str = "#!/bin/bash\n#SBATCH -J envdump\n#SBATCH --time=5 -N 2 --ntasks-per-node=2 -c 1\n#SBATCH --mem=100\nenv | grep ^SLURM_ | sort\n";

fn lines_of(d: &Daemon, file: &str) -> Vec<String> {
    std::fs::read_to_string(d.work.join(file))
        .unwrap_or_else(|e| panic!("{file}: {e}\n{}", d.log()))
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn a_slurm_script_runs_with_slurms_output_file_and_variables() {
    let d = Daemon::start();
    d.script("env.sh", ENV_DUMP);
    let out = d.ok("sbatch", &["env.sh"]);
    let id = out
        .trim()
        .strip_prefix("Submitted batch job ")
        .unwrap_or_else(|| panic!("sbatch said {out:?}"))
        .to_string();
    // The same job in qstat, under the default queue, named by -J.
    let full = d.full_id(&id);
    let job = d.job_json(&full);
    assert_eq!(job["Job_Name"], "envdump", "{job:#}");
    assert_eq!(d.wait_job(&full).exit_status, Some(0), "{}", d.log());
    let vars = lines_of(&d, &format!("slurm-{id}.out"));
    let get = |name: &str| {
        vars.iter()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} missing: {vars:?}"))
            .to_string()
    };
    assert_eq!(get("SLURM_JOB_ID"), id);
    assert_eq!(get("SLURM_JOB_NAME"), "envdump");
    assert_eq!(get("SLURM_JOB_NUM_NODES"), "2");
    assert_eq!(get("SLURM_NTASKS"), "4");
    assert_eq!(get("SLURM_TASKS_PER_NODE"), "2(x2)");
    assert_eq!(get("SLURM_CPUS_PER_TASK"), "1");
    assert_eq!(get("SLURM_MEM_PER_NODE"), "100");
    assert_eq!(get("SLURM_SUBMIT_DIR"), d.work.display().to_string());
    let nodelist = get("SLURM_JOB_NODELIST");
    assert!(
        nodelist.contains('[') || nodelist.contains(','),
        "{nodelist}"
    );
}

#[test]
fn patterns_parsable_wrap_wait_arrays_and_dependencies() {
    let d = Daemon::start();
    // --parsable prints the number alone; -o's pattern is filled in.
    let id = d
        .ok(
            "sbatch",
            &[
                "--parsable",
                "-J",
                "named",
                "-o",
                "%x-%j.log",
                "--wrap",
                "echo wrapped",
            ],
        )
        .trim()
        .to_string();
    assert!(id.chars().all(|c| c.is_ascii_digit()), "{id}");
    let full = d.full_id(&id);
    assert_eq!(d.wait_job(&full).exit_status, Some(0), "{}", d.log());
    assert_eq!(lines_of(&d, &format!("named-{id}.log")), ["wrapped"]);

    // -W waits and exits with the job's status; -e keeps stderr apart.
    let out = d.run(
        "sbatch",
        &["-W", "-e", "err-%j.txt", "--wrap", "echo oops >&2; exit 3"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    let waited = said
        .trim()
        .strip_prefix("Submitted batch job ")
        .unwrap()
        .to_string();
    assert_eq!(lines_of(&d, &format!("err-{waited}.txt")), ["oops"]);

    // An array: each task its own file, slurm-%A_%a.out.
    d.script(
        "task.sh",
        "#!/bin/sh\n#SBATCH --array=1-3%2\necho $SLURM_ARRAY_TASK_ID\n",
    );
    let array = d
        .ok("sbatch", &["--parsable", "task.sh"])
        .trim()
        .to_string();
    // A job that waits for the array to succeed.
    let after = d
        .ok(
            "sbatch",
            &[
                "--parsable",
                &format!("--dependency=afterok:{array}[]"),
                "--wrap",
                "true",
            ],
        )
        .trim()
        .to_string();
    assert_eq!(
        d.wait_job(&d.full_id(&after)).exit_status,
        Some(0),
        "{}",
        d.log()
    );
    for i in 1..=3 {
        assert_eq!(
            lines_of(&d, &format!("slurm-{array}_{i}.out")),
            [i.to_string()]
        );
    }

    // -w: on the nodes named, whichever the scheduler would have picked.
    let pinned = d
        .ok(
            "sbatch",
            &[
                "--parsable",
                "-w",
                "local[03,05]",
                "-o",
                "pinned.out",
                "--wrap",
                "echo $SLURM_JOB_NODELIST",
            ],
        )
        .trim()
        .to_string();
    assert_eq!(d.wait_job(&d.full_id(&pinned)).exit_status, Some(0));
    assert_eq!(d.exec_nodes(&d.full_id(&pinned)), ["local03", "local05"]);
    assert_eq!(lines_of(&d, "pinned.out"), ["local[03,05]"]);

    // -x: anywhere but the nodes named, which the scheduler would have
    // picked first.
    let avoiding = d
        .ok(
            "sbatch",
            &[
                "--parsable",
                "-N",
                "2",
                "-x",
                "local[01-02]",
                "--wrap",
                "true",
            ],
        )
        .trim()
        .to_string();
    assert_eq!(d.wait_job(&d.full_id(&avoiding)).exit_status, Some(0));
    let nodes = d.exec_nodes(&d.full_id(&avoiding));
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    assert!(
        !nodes.iter().any(|n| n == "local01" || n == "local02"),
        "{nodes:?}"
    );
    let shown = d.ok("scontrol", &["show", "job", &avoiding]);
    assert!(shown.contains("ExcNodeList=local[01-02]"), "{shown}");
    let out = d.run("sbatch", &["-x", "local[01-", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("sbatch: error: --exclude=local[01-:"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn scancel_ends_jobs_by_id_by_name_and_whole_arrays() {
    let d = Daemon::start();
    d.script("sleep.sh", "#!/bin/sh\n#SBATCH -J sleeper\nsleep 60\n");
    let one = d
        .ok("sbatch", &["--parsable", "sleep.sh"])
        .trim()
        .to_string();
    let two = d
        .ok("sbatch", &["--parsable", "-J", "other", "sleep.sh"])
        .trim()
        .to_string();
    let array = d
        .ok("sbatch", &["--parsable", "--array=1-4", "-H", "sleep.sh"])
        .trim()
        .to_string();
    // By id, as Slurm says nothing.
    assert_eq!(d.ok("scancel", &[&one]), "");
    assert_ne!(d.wait_job(&d.full_id(&one)).exit_status, Some(0));
    // By name: only that one.
    assert_eq!(d.ok("scancel", &["-n", "other"]), "");
    assert_ne!(d.wait_job(&d.full_id(&two)).exit_status, Some(0));
    // One task of an array, then the whole array by its number.
    assert_eq!(d.ok("scancel", &[&format!("{array}_2")]), "");
    let left = d.ok("squeue", &["-h", "-o", "%i"]);
    assert!(!left.contains(&format!("{array}_2")), "{left}");
    assert_eq!(d.ok("scancel", &[&array]), "", "{}", d.log());
    assert_eq!(d.ok("squeue", &["-h", "-o", "%i"]), "", "nothing left");
    // A job that is not there: Slurm's error line, exit 1.
    let out = d.run("scancel", &["999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("scancel: error: Kill job error on job id 999"),
        "{}",
        stderr(&out)
    );
}
