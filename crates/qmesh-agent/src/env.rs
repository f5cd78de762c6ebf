//! The job's environment, as PBS Pro's and Torque's MOMs make it: what
//! qsub captured (-v, -V, and the PBS_O_ variables of its own
//! environment), then the user's identity from the passwd entry of the
//! execution host, then the variables a batch job expects (PBS_ names and
//! their QMESH_ twins, so scripts written for PBS run unchanged): the job,
//! its nodes and its share of them, its directories and GPUs. Nothing of
//! the agent's own environment leaks in.

use std::collections::BTreeMap;
use std::path::Path;

use crate::record::Launch;

/// PATH when the job's environment does not set one.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The job user as the execution host's passwd knows them.
#[derive(Clone, Debug)]
pub struct Identity<'a> {
    pub user: &'a str,
    pub home: &'a Path,
    pub shell: &'a Path,
}

/// Where the job's files and directories are on this host.
#[derive(Clone, Copy, Debug)]
pub struct Places<'a> {
    /// PBS_NODEFILE.
    pub nodefile: &'a Path,
    /// Where the job starts (PBS_JOBDIR).
    pub start_dir: &'a Path,
    /// TMPDIR, when the agent makes one.
    pub tmpdir: Option<&'a Path>,
    /// PBS_GPUFILE, when the job has GPUs here.
    pub gpufile: Option<&'a Path>,
}

/// The environment, and the names of job variables that were dropped
/// because no process environment can hold them (empty, '=' or NUL).
pub fn job_environment(
    launch: &Launch,
    who: &Identity<'_>,
    places: &Places<'_>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let order = &launch.order;
    let mut env = BTreeMap::new();
    let mut dropped = Vec::new();
    for var in &order.env {
        let (name, value) = (&var.name, &var.value);
        if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
            dropped.push(name.clone());
            continue;
        }
        env.insert(name.clone(), value.clone());
    }
    // qsub sends the PBS_O_ variables of its environment; a qsub run
    // without HOME or LOGNAME (cron, a service) still gets the owner's.
    env.entry("PBS_O_LOGNAME".to_string())
        .or_insert_with(|| who.user.to_string());
    env.entry("PBS_O_HOME".to_string())
        .or_insert_with(|| who.home.display().to_string());
    // OpenMP threads are the job's own when it says so (-v, -V).
    let share = launch.local_share();
    if share.threads > 0 {
        env.entry("OMP_NUM_THREADS".to_string())
            .or_insert_with(|| share.threads.to_string());
    }

    let mut set = |name: &str, value: String| {
        env.insert(name.to_string(), value);
    };
    set("HOME", who.home.display().to_string());
    set("USER", who.user.to_string());
    set("LOGNAME", who.user.to_string());
    // An interactive job's login shell is qsub -S's when it names one.
    let shell = if order.interactive && !order.shell.is_empty() {
        order.shell.clone()
    } else if who.shell.as_os_str().is_empty() {
        "/bin/sh".to_string()
    } else {
        who.shell.display().to_string()
    };
    set("SHELL", shell);

    let nodefile = places.nodefile.display().to_string();
    let nnodes = order.nodes.len().to_string();
    for (qmesh, pbs, value) in [
        ("QMESH_JOBID", "PBS_JOBID", &order.job_id),
        ("QMESH_JOBNAME", "PBS_JOBNAME", &order.name),
        ("QMESH_NODEFILE", "PBS_NODEFILE", &nodefile),
        ("QMESH_NNODES", "PBS_NUM_NODES", &nnodes),
        ("QMESH_QUEUE", "PBS_QUEUE", &order.queue),
        ("QMESH_O_WORKDIR", "PBS_O_WORKDIR", &order.workdir),
        ("QMESH_O_HOST", "PBS_O_HOST", &order.submit_host),
    ] {
        set(qmesh, value.clone());
        set(pbs, value.clone());
    }
    set("PBS_O_QUEUE", launch.first_queue().to_string());
    // A job may submit jobs and watch them: its commands find the daemon.
    if let Some(socket) = &launch.added.commands_socket {
        set("QMESH_SOCKET", socket.display().to_string());
    }
    if let Some(index) = order.array_index {
        // PBS Pro's pair, and Torque's one; each style's scripts read its own.
        set("PBS_ARRAY_INDEX", index.to_string());
        set("PBS_ARRAY_ID", order.array_id.clone());
        set("PBS_ARRAYID", index.to_string());
        if order.array_torque {
            // Torque names a sub-job NAME-INDEX.
            set("PBS_JOBNAME", format!("{}-{index}", order.name));
        }
    }
    let environment = if order.interactive {
        "PBS_INTERACTIVE"
    } else {
        "PBS_BATCH"
    };
    set("PBS_ENVIRONMENT", environment.to_string());
    // Torque: the first node's processes, and the node file's lines.
    set("PBS_NUM_PPN", launch.share(0).procs.to_string());
    let np: u32 = (0..order.nodes.len()).map(|i| launch.share(i).procs).sum();
    set("PBS_NP", np.to_string());
    // PBS Pro: this host's first node's CPUs.
    if share.cpus > 0 {
        set("NCPUS", share.cpus.to_string());
    }
    // The job script is the first task on the first node.
    set("PBS_NODENUM", "0".to_string());
    set("PBS_TASKNUM", "1".to_string());
    set("PBS_VNODENUM", "0".to_string());
    set("PBS_JOBDIR", places.start_dir.display().to_string());
    if order.walltime > 0 {
        set("PBS_WALLTIME", order.walltime.to_string());
    }
    if let Some(tmpdir) = places.tmpdir {
        set("TMPDIR", tmpdir.display().to_string());
    }
    let gpus = &launch.added.gpus;
    if let Some(gpufile) = places.gpufile.filter(|_| !gpus.is_empty()) {
        set("PBS_GPUFILE", gpufile.display().to_string());
        set("CUDA_VISIBLE_DEVICES", visible_devices(gpus));
    }
    if !order.account.is_empty() {
        set("QMESH_ACCOUNT", order.account.clone());
        set("PBS_ACCOUNT", order.account.clone());
    }
    env.entry("PATH".to_string())
        .or_insert_with(|| DEFAULT_PATH.to_string());
    (env, dropped)
}

/// `CUDA_VISIBLE_DEVICES`: `0,2`.
pub fn visible_devices(gpus: &[u32]) -> String {
    gpus.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use qmesh_proto::v1::{self, EnvVar, NodeShare};

    fn var(name: &str, value: &str) -> EnvVar {
        EnvVar {
            name: name.into(),
            value: value.into(),
        }
    }

    fn spec() -> Launch {
        let order = v1::LaunchJob {
            job: 17,
            job_id: "17.server".into(),
            name: "run.sh".into(),
            queue: "batch".into(),
            workdir: "/home/alice/w".into(),
            submit_host: "login1".into(),
            nodes: vec!["n1".into(), "n2".into(), "n3".into()],
            env: vec![
                var("FOO", "bar"),
                var("HOME", "/somewhere/else"),
                var("QMESH_JOBID", "forged"),
                var("BAD=NAME", "x"),
                var("", "x"),
            ],
            ..Default::default()
        };
        Launch::new(order, Default::default())
    }

    fn places() -> Places<'static> {
        Places {
            nodefile: Path::new("/sp/jobs/17/nodefile"),
            start_dir: Path::new("/home/alice"),
            tmpdir: None,
            gpufile: None,
        }
    }

    fn alice() -> Identity<'static> {
        Identity {
            user: "alice",
            home: Path::new("/home/alice"),
            shell: Path::new("/bin/bash"),
        }
    }

    #[test]
    fn batch_variables_and_identity_win_over_the_job_env() {
        let (env, dropped) = job_environment(&spec(), &alice(), &places());
        assert_eq!(env["FOO"], "bar");
        assert_eq!(env["HOME"], "/home/alice");
        assert_eq!(env["USER"], "alice");
        assert_eq!(env["LOGNAME"], "alice");
        assert_eq!(env["SHELL"], "/bin/bash");
        assert_eq!(env["QMESH_JOBID"], "17.server");
        assert_eq!(env["PBS_JOBID"], "17.server");
        assert_eq!(env["QMESH_JOBNAME"], "run.sh");
        assert_eq!(env["PBS_JOBNAME"], "run.sh");
        assert_eq!(env["QMESH_NODEFILE"], "/sp/jobs/17/nodefile");
        assert_eq!(env["PBS_NODEFILE"], "/sp/jobs/17/nodefile");
        assert_eq!(env["QMESH_NNODES"], "3");
        assert_eq!(env["QMESH_QUEUE"], "batch");
        assert_eq!(env["PBS_QUEUE"], "batch");
        assert_eq!(env["QMESH_O_WORKDIR"], "/home/alice/w");
        assert_eq!(env["PBS_O_WORKDIR"], "/home/alice/w");
        assert_eq!(env["QMESH_O_HOST"], "login1");
        assert_eq!(env["PBS_O_HOST"], "login1");
        assert_eq!(env["PBS_ENVIRONMENT"], "PBS_BATCH");
        assert_eq!(env["PATH"], DEFAULT_PATH);
        assert!(!env.contains_key("QMESH_ACCOUNT"));
        assert!(!env.contains_key("TMPDIR") && !env.contains_key("CUDA_VISIBLE_DEVICES"));
        assert_eq!(dropped, vec!["BAD=NAME".to_string(), String::new()]);
        assert!(!env.contains_key("PBS_ARRAY_INDEX") && !env.contains_key("PBS_ARRAYID"));
    }

    #[test]
    fn a_sub_job_knows_its_index_in_both_styles() {
        let mut s = spec();
        s.order.job_id = "12[3].server".into();
        s.order.array_index = Some(3);
        s.order.array_id = "12[].server".into();
        let (env, _) = job_environment(&s, &alice(), &places());
        assert_eq!(env["PBS_ARRAY_INDEX"], "3");
        assert_eq!(env["PBS_ARRAY_ID"], "12[].server");
        assert_eq!(env["PBS_ARRAYID"], "3");
        assert_eq!(env["PBS_JOBID"], "12[3].server");
        assert_eq!(env["PBS_JOBNAME"], "run.sh");
        s.order.array_torque = true;
        let (env, _) = job_environment(&s, &alice(), &places());
        assert_eq!(env["PBS_JOBNAME"], "run.sh-3");
    }

    #[test]
    fn the_jobs_own_path_is_kept() {
        let mut s = spec();
        s.order.env.push(var("PATH", "/opt/x/bin:/usr/bin"));
        let (env, _) = job_environment(&s, &alice(), &places());
        assert_eq!(env["PATH"], "/opt/x/bin:/usr/bin");
    }

    #[test]
    fn an_empty_login_shell_means_bin_sh() {
        let who = Identity {
            shell: Path::new(""),
            ..alice()
        };
        let (env, _) = job_environment(&spec(), &who, &places());
        assert_eq!(env["SHELL"], "/bin/sh");
    }

    #[test]
    fn pbs_pro_and_torque_variables_describe_the_jobs_share() {
        let mut s = spec();
        let share = |procs, cpus, threads| NodeShare {
            procs,
            cpus,
            threads,
            gpus: 0,
            mem: None,
            shared: false,
        };
        s.order.shares = vec![share(3, 6, 2), share(3, 6, 2), share(1, 4, 4)];
        s.order.local_nodes = vec!["n2".into(), "n3".into()];
        s.order.submit_queue = "route".into();
        s.order.walltime = 600;
        s.order.account = "c1".into();
        s.added.gpus = vec![1, 3];
        let places = Places {
            tmpdir: Some(Path::new("/var/tmp/pbs.17.server")),
            gpufile: Some(Path::new("/sp/jobs/17/gpufile")),
            start_dir: Path::new("/scratch/alice"),
            ..places()
        };
        let (env, _) = job_environment(&s, &alice(), &places);
        assert_eq!(env["PBS_NUM_NODES"], "3");
        assert_eq!(env["PBS_NUM_PPN"], "3", "the first node's processes");
        assert_eq!(env["PBS_NP"], "7", "the node file's lines");
        assert_eq!(env["NCPUS"], "6", "this host's first node, n2");
        assert_eq!(env["OMP_NUM_THREADS"], "2");
        assert_eq!(env["PBS_O_QUEUE"], "route");
        assert_eq!(env["PBS_QUEUE"], "batch");
        assert_eq!(env["PBS_NODENUM"], "0");
        assert_eq!(env["PBS_TASKNUM"], "1");
        assert_eq!(env["PBS_VNODENUM"], "0");
        assert_eq!(env["PBS_JOBDIR"], "/scratch/alice");
        assert_eq!(env["PBS_WALLTIME"], "600");
        assert_eq!(env["TMPDIR"], "/var/tmp/pbs.17.server");
        assert_eq!(env["PBS_GPUFILE"], "/sp/jobs/17/gpufile");
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], "1,3");
        assert_eq!(env["PBS_ACCOUNT"], "c1");
    }

    #[test]
    fn the_jobs_own_settings_win_where_pbs_lets_them() {
        let mut s = spec();
        s.order.env.push(var("OMP_NUM_THREADS", "9"));
        s.order.env.push(var("PBS_O_HOME", "/home/alice-on-login"));
        s.order.env.push(var("TMPDIR", "/tmp/login-tmp"));
        let places = Places {
            tmpdir: Some(Path::new("/var/tmp/pbs.17.server")),
            ..places()
        };
        let (env, _) = job_environment(&s, &alice(), &places);
        assert_eq!(env["OMP_NUM_THREADS"], "9", "-v OMP_NUM_THREADS=9 wins");
        assert_eq!(env["PBS_O_HOME"], "/home/alice-on-login");
        assert_eq!(env["PBS_O_LOGNAME"], "alice", "filled in from the owner");
        assert_eq!(
            env["TMPDIR"], "/var/tmp/pbs.17.server",
            "the job's own TMPDIR"
        );
        assert_eq!(env["PBS_O_QUEUE"], "batch", "no submit queue: the queue");
        assert_eq!(env["NCPUS"], "1");
        assert_eq!(env["PBS_NP"], "3");
        assert!(!env.contains_key("PBS_WALLTIME"));
    }
}
