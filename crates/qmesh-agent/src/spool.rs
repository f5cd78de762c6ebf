//! The spool's directories: the agent's only memory, so that a restarted
//! agent (or one whose daemon restarted) knows what runs and what ended.
//! One directory per job, `SPOOL/jobs/SEQ`; what its files hold is
//! [`crate::record`]'s.
//!
//! A job directory is built under a dot name and renamed into place, so
//! `jobs/SEQ` either holds a complete launch or does not exist; `result.json`
//! and the pid files are written to a temporary name and renamed too. A job
//! is *finished* exactly when `result.json` exists; the directory goes away
//! when the daemon acknowledges the finish.

use std::fs::{self, DirBuilder};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use qmesh_proto::v1::JobFinished;

use crate::error::{AgentError, Result};
use crate::record::{
    GPU_FILE, LAUNCH_FILE, Launch, NODE_FILE, RESULT_FILE, SCRIPT_FILE, SIGNALS_DIR, gpu_file_text,
    node_file_text, result_from_json, result_to_json, write_atomic, write_new,
};

/// The spool root. Its path is absolute (shepherds are recognised by it).
#[derive(Clone, Debug)]
pub struct Spool {
    root: PathBuf,
}

impl Spool {
    /// Opens the spool at `root`, creating it (0755) and `jobs/` if missing.
    pub fn open(root: &Path) -> Result<Spool> {
        if !root.exists() {
            DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(root)
                .map_err(|e| AgentError::io("create spool directory", root, e))?;
        }
        let root = root
            .canonicalize()
            .map_err(|e| AgentError::io("resolve spool directory", root, e))?;
        let jobs = root.join("jobs");
        if !jobs.exists() {
            DirBuilder::new()
                .mode(0o755)
                .create(&jobs)
                .map_err(|e| AgentError::io("create spool directory", &jobs, e))?;
        }
        Ok(Spool { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn jobs_dir(&self) -> PathBuf {
        self.root.join("jobs")
    }

    pub fn job(&self, seq: u64) -> JobDir {
        JobDir {
            seq,
            path: self.jobs_dir().join(seq.to_string()),
        }
    }

    /// Writes a launch and its script into `jobs/SEQ`. `Ok(None)` when the
    /// job is already in the spool (a repeated launch is ignored).
    pub fn prepare(&self, launch: &Launch, script: &[u8]) -> Result<Option<JobDir>> {
        let seq = launch.order.job;
        let dir = self.job(seq);
        if dir.path.exists() {
            return Ok(None);
        }
        let tmp = self.jobs_dir().join(format!(".{seq}.new"));
        if tmp.exists() {
            fs::remove_dir_all(&tmp)
                .map_err(|e| AgentError::io("remove partial job directory", &tmp, e))?;
        }
        DirBuilder::new()
            .mode(0o711)
            .create(&tmp)
            .map_err(|e| AgentError::io("create job directory", &tmp, e))?;
        // Traversable by the job user, whatever the umask.
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o711))
            .map_err(|e| AgentError::io("set permissions of", &tmp, e))?;
        let json = launch.to_json().map_err(|e| AgentError::Json {
            path: tmp.join(LAUNCH_FILE),
            source: e,
        })?;
        write_new(&tmp.join(LAUNCH_FILE), &json, 0o600)?;
        write_new(&tmp.join(SCRIPT_FILE), script, 0o700)?;
        let nodes = node_file_text(launch);
        write_new(&tmp.join(NODE_FILE), nodes.as_bytes(), 0o644)?;
        let added = &launch.added;
        if !added.gpus.is_empty() {
            let text = gpu_file_text(&added.host, &added.gpus);
            write_new(&tmp.join(GPU_FILE), text.as_bytes(), 0o644)?;
        }
        // Signal requests for the job (crate::signals): the agent's only.
        let signals = tmp.join(SIGNALS_DIR);
        DirBuilder::new()
            .mode(0o700)
            .create(&signals)
            .map_err(|e| AgentError::io("create", &signals, e))?;
        fs::rename(&tmp, &dir.path)
            .map_err(|e| AgentError::io("move job directory into place", &dir.path, e))?;
        Ok(Some(dir))
    }

    /// All job directories, in sequence order.
    pub fn scan(&self) -> Result<Vec<JobDir>> {
        let jobs = self.jobs_dir();
        let entries =
            fs::read_dir(&jobs).map_err(|e| AgentError::io("read spool directory", &jobs, e))?;
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| AgentError::io("read spool directory", &jobs, e))?;
            let name = entry.file_name();
            let Some(seq) = name.to_str().and_then(|n| n.parse::<u64>().ok()) else {
                continue;
            };
            found.push(JobDir {
                seq,
                path: entry.path(),
            });
        }
        found.sort_by_key(|d| d.seq);
        Ok(found)
    }

    /// Removes launches that were being written when an agent stopped.
    pub fn remove_partial(&self) -> Result<()> {
        let jobs = self.jobs_dir();
        let entries =
            fs::read_dir(&jobs).map_err(|e| AgentError::io("read spool directory", &jobs, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_str().is_some_and(|n| n.starts_with('.')) {
                let path = entry.path();
                fs::remove_dir_all(&path)
                    .map_err(|e| AgentError::io("remove partial job directory", &path, e))?;
            }
        }
        Ok(())
    }
}

/// One job's directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobDir {
    pub seq: u64,
    pub path: PathBuf,
}

impl JobDir {
    /// The directory a shepherd was given; the sequence number is its name.
    pub fn from_path(path: &Path) -> Option<JobDir> {
        let seq = path.file_name()?.to_str()?.parse().ok()?;
        Some(JobDir {
            seq,
            path: path.to_path_buf(),
        })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn exists(&self) -> bool {
        self.path.is_dir()
    }

    /// The launch, of whichever version its agent wrote.
    pub fn read_launch(&self) -> Result<Launch> {
        let path = self.file(LAUNCH_FILE);
        let bytes = fs::read(&path).map_err(|e| AgentError::io("read", &path, e))?;
        Launch::from_json(&bytes).map_err(|e| AgentError::Json { path, source: e })
    }

    /// The result, if the job has ended.
    pub fn read_result(&self) -> Result<Option<JobFinished>> {
        let path = self.file(RESULT_FILE);
        match fs::read(&path) {
            Ok(bytes) => result_from_json(&bytes)
                .map(Some)
                .map_err(|e| AgentError::Json { path, source: e }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(AgentError::io("read", &path, e)),
        }
    }

    pub fn has_result(&self) -> bool {
        self.file(RESULT_FILE).exists()
    }

    pub fn write_result(&self, result: &JobFinished) -> Result<()> {
        let path = self.file(RESULT_FILE);
        let json = result_to_json(result).map_err(|e| AgentError::Json {
            path: path.clone(),
            source: e,
        })?;
        write_atomic(&path, &json, 0o644)
    }

    /// A pid file's content; `None` when it is missing or unreadable.
    pub fn read_pid(&self, name: &str) -> Option<i32> {
        let text = fs::read_to_string(self.file(name)).ok()?;
        text.trim().parse().ok().filter(|p| *p > 0)
    }

    pub fn write_pid(&self, name: &str, pid: i32) -> Result<()> {
        write_atomic(&self.file(name), format!("{pid}\n").as_bytes(), 0o644)
    }

    /// When a file was last written, in Unix seconds (0 when unknown).
    pub fn mtime(&self, name: &str) -> i64 {
        fs::metadata(self.file(name))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs() as i64)
    }

    pub fn remove(&self) -> Result<()> {
        fs::remove_dir_all(&self.path)
            .map_err(|e| AgentError::io("remove job directory", &self.path, e))
    }
}

/// For tests: [`Spool::prepare`] of an order as it came, script and all.
#[cfg(test)]
impl Spool {
    pub(crate) fn prepare_order(
        &self,
        mut order: qmesh_proto::v1::LaunchJob,
        added: crate::record::Additions,
    ) -> Result<Option<JobDir>> {
        let script = std::mem::take(&mut order.script);
        self.prepare(&Launch::new(order, added), &script)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Additions, JOB_PID_FILE};
    use qmesh_proto::v1;

    fn launch(seq: u64) -> v1::LaunchJob {
        v1::LaunchJob {
            job: seq,
            job_id: format!("{seq}.server"),
            name: "run.sh".into(),
            script: b"#!/bin/sh\necho hi\n".to_vec(),
            user: "alice".into(),
            uid: 1000,
            gid: 1000,
            env: vec![v1::EnvVar {
                name: "A".into(),
                value: "1".into(),
            }],
            nodes: vec!["n1".into(), "n2".into()],
            walltime: 60,
            kill_grace: 5,
            ..Default::default()
        }
    }

    #[test]
    fn prepare_writes_a_complete_directory_once() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(&tmp.path().join("spool")).unwrap();
        let dir = spool
            .prepare_order(launch(7), Additions::default())
            .unwrap()
            .unwrap();
        assert_eq!(dir.path, spool.jobs_dir().join("7"));
        let kept = dir.read_launch().unwrap();
        let order = v1::LaunchJob {
            script: Vec::new(),
            ..launch(7)
        };
        assert_eq!(kept, Launch::new(order, Additions::default()));
        assert_eq!(fs::read(dir.file(SCRIPT_FILE)).unwrap(), launch(7).script);
        assert_eq!(fs::read_to_string(dir.file(NODE_FILE)).unwrap(), "n1\nn2\n");
        let mode = fs::metadata(dir.file(SCRIPT_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        assert!(dir.file(SIGNALS_DIR).is_dir());
        // A repeated launch is ignored.
        assert!(
            spool
                .prepare_order(launch(7), Additions::default())
                .unwrap()
                .is_none()
        );
        assert_eq!(spool.scan().unwrap(), vec![dir]);
    }

    #[test]
    fn result_round_trips_and_marks_the_job_finished() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let dir = spool
            .prepare_order(launch(3), Additions::default())
            .unwrap()
            .unwrap();
        assert_eq!(dir.read_result().unwrap(), None);
        assert!(!dir.has_result());
        let result = JobFinished {
            job: 3,
            exit_code: None,
            signal: Some(15),
            cause: v1::FinishCause::Walltime as i32,
            message: "over".into(),
            start_time: 10,
            end_time: 20,
            cput: Some(3),
            max_rss: Some(4096),
            vmem: None,
        };
        dir.write_result(&result).unwrap();
        assert!(dir.has_result());
        assert_eq!(dir.read_result().unwrap(), Some(result));
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(&dir.path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }

    #[test]
    fn scan_skips_partial_launches_and_remove_partial_cleans_them() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        spool
            .prepare_order(launch(2), Additions::default())
            .unwrap();
        spool
            .prepare_order(launch(10), Additions::default())
            .unwrap();
        fs::create_dir(spool.jobs_dir().join(".5.new")).unwrap();
        let seqs: Vec<u64> = spool.scan().unwrap().iter().map(|d| d.seq).collect();
        assert_eq!(seqs, vec![2, 10]);
        spool.remove_partial().unwrap();
        assert!(!spool.jobs_dir().join(".5.new").exists());
    }

    #[test]
    fn the_node_file_has_each_node_once_per_process() {
        let mut l = launch(5);
        l.nodes = vec!["n1".into(), "n2".into(), "n3".into()];
        let share = |procs, gpus| v1::NodeShare {
            procs,
            cpus: 4,
            threads: 2,
            gpus,
            mem: None,
            shared: false,
        };
        l.shares = vec![share(2, 1), share(3, 0), share(0, 2)];
        l.local_nodes = vec!["n1".into(), "n3".into()];
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let additions = Additions {
            host: "h1".into(),
            gpus: vec![1, 3, 4],
            ..Additions::default()
        };
        let dir = spool.prepare_order(l, additions).unwrap().unwrap();
        assert_eq!(
            fs::read_to_string(dir.file(NODE_FILE)).unwrap(),
            "n1\nn1\nn2\nn2\nn2\n",
            "mpiprocs=0 gives a node no line"
        );
        assert_eq!(
            fs::read_to_string(dir.file(GPU_FILE)).unwrap(),
            "h1-gpu1\nh1-gpu3\nh1-gpu4\n"
        );
        let kept = dir.read_launch().unwrap();
        assert_eq!(kept.local_indices(), vec![0, 2]);
        assert_eq!(kept.local_gpus(), 3);
        assert_eq!(
            (kept.local_share().cpus, kept.local_share().threads),
            (4, 2)
        );
        assert_eq!(kept.added.gpus, vec![1, 3, 4]);
        assert_eq!(kept.added.host, "h1");
    }

    #[test]
    fn a_launch_without_shares_has_one_line_per_node() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let dir = spool
            .prepare_order(launch(6), Additions::default())
            .unwrap()
            .unwrap();
        assert_eq!(fs::read_to_string(dir.file(NODE_FILE)).unwrap(), "n1\nn2\n");
        assert!(!dir.file(GPU_FILE).exists());
        let kept = dir.read_launch().unwrap();
        assert_eq!(kept.local_share(), kept.share(0));
        assert_eq!(kept.share(1).procs, 1);
        assert_eq!(kept.first_queue(), kept.order.queue);
    }

    #[test]
    fn the_new_fields_round_trip_through_launch_json() {
        let mut l = launch(8);
        l.shell = "/bin/bash".into();
        l.umask = Some(0o27);
        l.start_dir = "/scratch/a".into();
        l.join_to_error = true;
        l.limits = Some(v1::ProcessLimits {
            cpu_secs: Some(30),
            address_space: Some(1 << 30),
            file_size: None,
            nice: Some(5),
            job_cpu_secs: Some(3600),
        });
        l.project = "p1".into();
        l.submit_queue = "route".into();
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let additions = Additions {
            tmpdir_base: Some("/var/tmp".into()),
            ..Additions::default()
        };
        let dir = spool.prepare_order(l, additions).unwrap().unwrap();
        let kept = dir.read_launch().unwrap();
        let order = &kept.order;
        assert_eq!(order.shell, "/bin/bash");
        assert_eq!(order.umask, Some(0o27));
        assert_eq!(order.start_dir, "/scratch/a");
        assert!(order.join_to_error);
        assert_eq!(kept.limits().cpu_secs, Some(30));
        assert_eq!(kept.limits().address_space, Some(1 << 30));
        assert_eq!(kept.limits().nice, Some(5));
        assert_eq!(kept.limits().job_cpu_secs, Some(3600));
        assert_eq!(order.project, "p1");
        assert_eq!(kept.first_queue(), "route");
        assert_eq!(
            kept.added.tmpdir_base.as_deref(),
            Some(Path::new("/var/tmp"))
        );
    }

    #[test]
    fn pid_files_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let dir = spool
            .prepare_order(launch(1), Additions::default())
            .unwrap()
            .unwrap();
        assert_eq!(dir.read_pid(JOB_PID_FILE), None);
        dir.write_pid(JOB_PID_FILE, 1234).unwrap();
        assert_eq!(dir.read_pid(JOB_PID_FILE), Some(1234));
        assert_eq!(JobDir::from_path(&dir.path), Some(dir));
    }
}
