//! The job's environment: what qsub captured (-v, -V), then the user's
//! identity from the passwd entry of the execution host, then the variables
//! a batch job expects (the QMESH_ names and their PBS_ twins, so scripts
//! written for PBS run unchanged). Nothing of the agent's own environment
//! leaks in.

use std::collections::BTreeMap;
use std::path::Path;

use crate::spool::LaunchSpec;

/// PATH when the job's environment does not set one.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The job user as the execution host's passwd knows them.
#[derive(Clone, Debug)]
pub struct Identity<'a> {
    pub user: &'a str,
    pub home: &'a Path,
    pub shell: &'a Path,
}

/// The environment, and the names of job variables that were dropped
/// because no process environment can hold them (empty, '=' or NUL).
pub fn job_environment(
    spec: &LaunchSpec,
    who: &Identity<'_>,
    nodefile: &Path,
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut env = BTreeMap::new();
    let mut dropped = Vec::new();
    for (name, value) in &spec.env {
        if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
            dropped.push(name.clone());
            continue;
        }
        env.insert(name.clone(), value.clone());
    }

    let mut set = |name: &str, value: String| {
        env.insert(name.to_string(), value);
    };
    set("HOME", who.home.display().to_string());
    set("USER", who.user.to_string());
    set("LOGNAME", who.user.to_string());
    let shell = if who.shell.as_os_str().is_empty() {
        "/bin/sh".to_string()
    } else {
        who.shell.display().to_string()
    };
    set("SHELL", shell);

    let nodefile = nodefile.display().to_string();
    let nnodes = spec.nodes.len().to_string();
    for (qmesh, pbs, value) in [
        ("QMESH_JOBID", "PBS_JOBID", &spec.job_id),
        ("QMESH_JOBNAME", "PBS_JOBNAME", &spec.name),
        ("QMESH_NODEFILE", "PBS_NODEFILE", &nodefile),
        ("QMESH_NNODES", "PBS_NUM_NODES", &nnodes),
        ("QMESH_QUEUE", "PBS_QUEUE", &spec.queue),
        ("QMESH_O_WORKDIR", "PBS_O_WORKDIR", &spec.workdir),
        ("QMESH_O_HOST", "PBS_O_HOST", &spec.submit_host),
    ] {
        set(qmesh, value.clone());
        set(pbs, value.clone());
    }
    set("PBS_O_QUEUE", spec.queue.clone());
    set("PBS_ENVIRONMENT", "PBS_BATCH".to_string());
    if !spec.account.is_empty() {
        set("QMESH_ACCOUNT", spec.account.clone());
        set("PBS_ACCOUNT", spec.account.clone());
    }
    env.entry("PATH".to_string())
        .or_insert_with(|| DEFAULT_PATH.to_string());
    (env, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> LaunchSpec {
        LaunchSpec {
            job: 17,
            job_id: "17.server".into(),
            name: "run.sh".into(),
            queue: "batch".into(),
            workdir: "/home/alice/w".into(),
            submit_host: "login1".into(),
            nodes: vec!["n1".into(), "n2".into(), "n3".into()],
            env: vec![
                ("FOO".into(), "bar".into()),
                ("HOME".into(), "/somewhere/else".into()),
                ("QMESH_JOBID".into(), "forged".into()),
                ("BAD=NAME".into(), "x".into()),
                ("".into(), "x".into()),
            ],
            ..Default::default()
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
        let (env, dropped) = job_environment(&spec(), &alice(), Path::new("/sp/jobs/17/nodefile"));
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
        assert_eq!(dropped, vec!["BAD=NAME".to_string(), String::new()]);
    }

    #[test]
    fn the_jobs_own_path_is_kept() {
        let mut s = spec();
        s.env.push(("PATH".into(), "/opt/x/bin:/usr/bin".into()));
        let (env, _) = job_environment(&s, &alice(), Path::new("/n"));
        assert_eq!(env["PATH"], "/opt/x/bin:/usr/bin");
    }

    #[test]
    fn an_empty_login_shell_means_bin_sh() {
        let who = Identity {
            shell: Path::new(""),
            ..alice()
        };
        let (env, _) = job_environment(&spec(), &who, Path::new("/n"));
        assert_eq!(env["SHELL"], "/bin/sh");
    }
}
