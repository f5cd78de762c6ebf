//! qmesh's sbatch beside the real one: the same script, with the same
//! directives, through both; what the user reads back is compared. The
//! words sbatch prints, the output file its pattern names, and the names
//! of the `SLURM_*` variables the job sees must be Slurm's, less the few
//! that belong to Slurm's own daemons (docs/SLURM.md says which).

use std::collections::BTreeSet;
use std::time::Duration;

use crate::harness::Daemon;
use crate::rig::{skipped, slurm};

/// Variables of Slurm's daemons themselves, which qmesh does not set.
const NOT_PROVIDED: &[&str] = &["SLURM_CONF", "SLURM_TASK_PID", "SLURM_WORKING_CLUSTER"];

const SCRIPT: &str = "#!/bin/sh\n#SBATCH -J twin\n#SBATCH -o %x-%j.out\n#SBATCH -t 2\nenv | grep ^SLURM_ | sort > env-$SLURM_JOB_ID.txt\necho done\n";

fn names(env: &str) -> BTreeSet<String> {
    env.lines()
        .filter_map(|l| l.split_once('=').map(|(n, _)| n.to_string()))
        .collect()
}

#[test]
fn the_same_script_prints_names_files_and_variables_as_slurm_does() {
    if skipped() {
        return;
    }
    // Slurm.
    let s = slurm();
    let dir = s.workdir("twin");
    std::fs::write(dir.join("twin.sh"), SCRIPT).unwrap();
    let out = s
        .cmd("sbatch")
        .arg("twin.sh")
        .current_dir(&dir)
        .output()
        .expect("run sbatch");
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    let id = said
        .strip_prefix("Submitted batch job ")
        .and_then(|r| r.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("Slurm's sbatch said {said:?}"))
        .to_string();
    s.await_state(&id, "COMPLETED", Duration::from_secs(60));
    let slurm_out = std::fs::read_to_string(dir.join(format!("twin-{id}.out"))).unwrap();
    let slurm_env = std::fs::read_to_string(dir.join(format!("env-{id}.txt"))).unwrap();

    // qmesh.
    let d = Daemon::start();
    d.script("twin.sh", SCRIPT);
    let ours = d.ok("sbatch", &["twin.sh"]);
    let number = ours
        .strip_prefix("Submitted batch job ")
        .and_then(|r| r.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("qmesh's sbatch said {ours:?}"))
        .to_string();
    assert_eq!(
        d.wait_job(&d.full_id(&number)).exit_status,
        Some(0),
        "{}",
        d.log()
    );
    let our_out = std::fs::read_to_string(d.work.join(format!("twin-{number}.out")))
        .unwrap_or_else(|e| panic!("twin-{number}.out: {e}\n{}", d.log()));
    let our_env = std::fs::read_to_string(d.work.join(format!("env-{number}.txt"))).unwrap();

    assert_eq!(our_out, slurm_out, "the job's output, in the file -o names");
    let theirs: BTreeSet<String> = names(&slurm_env)
        .into_iter()
        .filter(|n| !NOT_PROVIDED.contains(&n.as_str()))
        .collect();
    let ours = names(&our_env);
    assert_eq!(
        ours,
        theirs,
        "SLURM_* names: qmesh has {:?} more, lacks {:?}",
        ours.difference(&theirs).collect::<Vec<_>>(),
        theirs.difference(&ours).collect::<Vec<_>>()
    );
    // The values that do not depend on the machine are Slurm's.
    let value = |env: &str, name: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .map(str::to_string)
    };
    for name in [
        "SLURM_JOB_NAME",
        "SLURM_JOB_NUM_NODES",
        "SLURM_NNODES",
        "SLURM_TASKS_PER_NODE",
        "SLURM_NODEID",
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "SLURM_GTIDS",
        "SLURM_PRIO_PROCESS",
        "SLURM_JOB_QOS",
        "SLURM_TOPOLOGY_ADDR_PATTERN",
        "SLURM_NODE_ALIASES",
    ] {
        assert_eq!(value(&our_env, name), value(&slurm_env, name), "{name}");
    }
}
