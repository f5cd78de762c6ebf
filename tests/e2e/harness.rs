//! Runs the real binaries: a qmeshd (which starts its own qmesh-agent) in a
//! temporary directory, and the commands against its socket.
//!
//! Synchronisation is by events, never by sleeping: the daemon is ready when
//! it sends systemd's READY=1 on a notify socket the harness owns; a job has
//! ended when the daemon's Wait call answers; a job has started when its
//! script writes to a FIFO the test reads.
//!
//! Every process the test started (daemon, agents, shepherds, jobs) is found
//! by its command line, working directory or environment naming the test's
//! directory and killed at the end, and the logs are checked for unexpected ERROR lines.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use qmesh_proto::v1;

pub const QMESHD: &str = env!("CARGO_BIN_EXE_qmeshd");

/// Path of one of the command binaries (`qsub`, `qstat`, ...).
pub fn bin(name: &str) -> &'static str {
    match name {
        "qsub" => env!("CARGO_BIN_EXE_qsub"),
        "sbatch" => env!("CARGO_BIN_EXE_sbatch"),
        "squeue" => env!("CARGO_BIN_EXE_squeue"),
        "sacct" => env!("CARGO_BIN_EXE_sacct"),
        "scancel" => env!("CARGO_BIN_EXE_scancel"),
        "scontrol" => env!("CARGO_BIN_EXE_scontrol"),
        "sinfo" => env!("CARGO_BIN_EXE_sinfo"),
        "qstat" => env!("CARGO_BIN_EXE_qstat"),
        "qdel" => env!("CARGO_BIN_EXE_qdel"),
        "qhold" => env!("CARGO_BIN_EXE_qhold"),
        "qrls" => env!("CARGO_BIN_EXE_qrls"),
        "qmove" => env!("CARGO_BIN_EXE_qmove"),
        "qsig" => env!("CARGO_BIN_EXE_qsig"),
        "printjob" => env!("CARGO_BIN_EXE_printjob"),
        "qmsg" => env!("CARGO_BIN_EXE_qmsg"),
        "qmgr" => env!("CARGO_BIN_EXE_qmgr"),
        "spq" => env!("CARGO_BIN_EXE_spq"),
        "spwhen" => env!("CARGO_BIN_EXE_spwhen"),
        "spfree" => env!("CARGO_BIN_EXE_spfree"),
        "spwhat" => env!("CARGO_BIN_EXE_spwhat"),
        "sppause" => env!("CARGO_BIN_EXE_sppause"),
        "spunpause" => env!("CARGO_BIN_EXE_spunpause"),
        "spwait" => env!("CARGO_BIN_EXE_spwait"),
        "sprelease" => env!("CARGO_BIN_EXE_sprelease"),
        "sphelp" => env!("CARGO_BIN_EXE_sphelp"),
        "getjid" => env!("CARGO_BIN_EXE_getjid"),
        "pbsnodes" => env!("CARGO_BIN_EXE_pbsnodes"),
        "spusage" => env!("CARGO_BIN_EXE_spusage"),
        "qselect" => env!("CARGO_BIN_EXE_qselect"),
        "qrerun" => env!("CARGO_BIN_EXE_qrerun"),
        "qorder" => env!("CARGO_BIN_EXE_qorder"),
        "qrun" => env!("CARGO_BIN_EXE_qrun"),
        "tracejob" => env!("CARGO_BIN_EXE_tracejob"),
        "qenable" => env!("CARGO_BIN_EXE_qenable"),
        "qdisable" => env!("CARGO_BIN_EXE_qdisable"),
        "qstart" => env!("CARGO_BIN_EXE_qstart"),
        "qstop" => env!("CARGO_BIN_EXE_qstop"),
        "qalter" => env!("CARGO_BIN_EXE_qalter"),
        "pbsdsh" => env!("CARGO_BIN_EXE_pbsdsh"),
        "srun" => env!("CARGO_BIN_EXE_srun"),
        "salloc" => env!("CARGO_BIN_EXE_salloc"),
        "qreport" => env!("CARGO_BIN_EXE_qreport"),
        "pbs_tmrsh" => env!("CARGO_BIN_EXE_pbs_tmrsh"),
        "pbs_rsub" => env!("CARGO_BIN_EXE_pbs_rsub"),
        "pbs_rstat" => env!("CARGO_BIN_EXE_pbs_rstat"),
        "pbs_ralter" => env!("CARGO_BIN_EXE_pbs_ralter"),
        "pbs_rdel" => env!("CARGO_BIN_EXE_pbs_rdel"),
        "qmeshd" => QMESHD,
        "qmesh-agent" => env!("CARGO_BIN_EXE_qmesh-agent"),
        other => panic!("no binary {other}"),
    }
}

/// The uid `nobody` has on Debian.
pub const NOBODY: u32 = 65534;

pub struct Daemon {
    pub root: tempfile::TempDir,
    pub state_dir: PathBuf,
    pub socket: PathBuf,
    /// Where the commands run; world-writable so other users may submit.
    pub work: PathBuf,
    pub config: Option<PathBuf>,
    child: Option<Child>,
    starts: u32,
    /// ERROR lines a test expects (e.g. after killing the daemon).
    pub allowed_errors: Vec<String>,
    /// The logs as the test left them, before the stop at its end.
    logs_at_end: Option<String>,
    /// The soft limit on open files qmeshd starts with (the test's own
    /// unless set).
    pub soft_open_files: Option<u64>,
}

impl Daemon {
    /// A daemon on its embedded default configuration.
    pub fn start() -> Daemon {
        Daemon::start_with(None)
    }

    /// A daemon on the given configuration file text.
    pub fn start_with(config: Option<&str>) -> Daemon {
        Daemon::start_prepared(config, |_| {})
    }

    /// A daemon on `config`, `prepare` called with its state directory
    /// (made, empty) before it starts: a test mounts a small file system
    /// there.
    pub fn start_prepared(config: Option<&str>, prepare: impl FnOnce(&Path)) -> Daemon {
        let mut daemon = Daemon::unstarted(config, prepare);
        daemon.spawn();
        daemon
    }

    /// A daemon made ready to start as `start_prepared` does, not started:
    /// the test sets how it starts, then calls `spawn`.
    pub fn unstarted(config: Option<&str>, prepare: impl FnOnce(&Path)) -> Daemon {
        let root = tempfile::Builder::new()
            .prefix("qmesh-e2e-")
            .tempdir()
            .expect("temporary directory");
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755))
            .expect("open the test directory to other users");
        let work = root.path().join("work");
        std::fs::create_dir(&work).expect("work directory");
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o1777))
            .expect("open the work directory");
        let config = config.map(|text| {
            let path = root.path().join("qmesh.toml");
            std::fs::write(&path, text).expect("write the configuration");
            path
        });
        let daemon = Daemon {
            state_dir: root.path().join("state"),
            socket: root.path().join("run/qmeshd.sock"),
            work,
            root,
            config,
            child: None,
            starts: 0,
            allowed_errors: Vec::new(),
            logs_at_end: None,
            soft_open_files: None,
        };
        std::fs::create_dir_all(&daemon.state_dir).expect("state directory");
        prepare(&daemon.state_dir);
        daemon
    }

    /// qmeshd's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Where the daemon's own agent makes jobs' TMPDIRs (pbs.JOBID).
    pub fn tmpdir_base(&self) -> PathBuf {
        self.root.path().join("tmp")
    }

    pub fn log_path(&self) -> PathBuf {
        self.root.path().join("qmeshd.log")
    }

    /// Starts qmeshd and waits for its READY=1.
    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "the daemon already runs");
        self.starts += 1;
        let notify = self.root.path().join(format!("notify{}.sock", self.starts));
        let listener = UnixDatagram::bind(&notify).expect("notify socket");
        listener
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("notify timeout");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("daemon log");
        // Job ids repeat across tests: each test's jobs get their TMPDIRs
        // in its own directory (the local agent inherits this).
        let tmpdir_base = self.tmpdir_base();
        std::fs::create_dir_all(&tmpdir_base).expect("TMPDIR base");
        let mut cmd = Command::new(QMESHD);
        cmd.env("QMESH_AGENT_TMPDIR_BASE", &tmpdir_base)
            .arg("--state-dir")
            .arg(&self.state_dir)
            .arg("--socket")
            .arg(&self.socket)
            .arg("--log-level")
            .arg("info")
            .env("NOTIFY_SOCKET", &notify)
            .env_remove("QMESH_SOCKET")
            .env_remove("QMESH_CONFIG")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log);
        if let Some(config) = &self.config {
            cmd.arg("--config").arg(config);
        }
        if let Some(soft) = self.soft_open_files {
            let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("read RLIMIT_NOFILE");
            // SAFETY: setrlimit is async-signal-safe; nothing else runs
            // between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    setrlimit(Resource::RLIMIT_NOFILE, soft, hard).map_err(std::io::Error::from)
                });
            }
        }
        let child = cmd.spawn().expect("start qmeshd");
        self.child = Some(child);
        let mut buf = [0u8; 256];
        loop {
            let n = match listener.recv(&mut buf) {
                Ok(n) => n,
                // A signal to the test process is no answer: wait on.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => panic!(
                    "qmeshd did not say READY within 60 s ({e}); its log:\n{}",
                    self.log()
                ),
            };
            if String::from_utf8_lossy(&buf[..n])
                .lines()
                .any(|l| l == "READY=1")
            {
                break;
            }
        }
    }

    /// SIGKILL: no chance to flush or say goodbye.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, and SIGKILL if it has not exited within `limit` (a
    /// test's end: its daemon may be wedged by what the test did).
    fn stop_within(&mut self, limit: Duration) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        signal(child.id(), nix::sys::signal::Signal::SIGTERM);
        let deadline = std::time::Instant::now() + limit;
        // Polled: std has no wait with a time limit.
        while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// SIGTERM and wait for a clean exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(child.id(), nix::sys::signal::Signal::SIGTERM);
            let status = child.wait().expect("wait for qmeshd");
            assert!(status.success(), "qmeshd exited with {status}");
        }
    }

    /// The daemon's log, then every agent's.
    pub fn log(&self) -> String {
        let mut text = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let mut agents = vec![self.state_dir.join("agent.log")];
        if let Ok(entries) = std::fs::read_dir(self.root.path()) {
            agents.extend(
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.to_string_lossy().ends_with(".log") && *p != self.log_path()),
            );
        }
        for path in agents {
            if let Ok(agent) = std::fs::read_to_string(&path) {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                text.push_str(&format!("\n--- {name} ---\n{agent}"));
            }
        }
        text
    }

    /// A command against this daemon, run in the work directory.
    pub fn cmd(&self, name: &str) -> Command {
        let mut cmd = Command::new(bin(name));
        cmd.env("QMESH_SOCKET", &self.socket)
            .current_dir(&self.work)
            .stdin(Stdio::null());
        cmd
    }

    pub fn run(&self, name: &str, args: &[&str]) -> Output {
        self.cmd(name).args(args).output().expect("run a command")
    }

    /// Runs a command as another user.
    pub fn run_as(&self, uid: u32, name: &str, args: &[&str]) -> Output {
        self.cmd(name)
            .args(args)
            .uid(uid)
            .gid(uid)
            .env("HOME", "/")
            .output()
            .expect("run a command as another user")
    }

    /// Runs a command that must succeed; returns its stdout.
    pub fn ok(&self, name: &str, args: &[&str]) -> String {
        let out = self.run(name, args);
        assert!(
            out.status.success(),
            "{name} {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// Writes a script in the work directory.
    pub fn script(&self, name: &str, text: &str) -> PathBuf {
        let path = self.work.join(name);
        std::fs::write(&path, text).expect("write a script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("script mode");
        path
    }

    /// qsub; returns the job id.
    pub fn qsub(&self, args: &[&str]) -> String {
        self.ok("qsub", args).trim().to_string()
    }

    /// A FIFO in the work directory, for a job to say it started.
    pub fn fifo(&self, name: &str) -> PathBuf {
        let path = self.work.join(name);
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o666))
            .expect("mkfifo");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("fifo mode");
        path
    }

    /// Waits until a job writes a line to the FIFO; returns the line.
    pub fn read_fifo(&self, path: &Path) -> String {
        let path = path.to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            let result = std::fs::File::open(&path).and_then(|mut f| f.read_to_string(&mut text));
            let _ = tx.send(result.map(|_| text));
        });
        rx.recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("nothing came through the FIFO in 60 s:\n{}", self.log()))
            .expect("read the FIFO")
    }

    /// Writes to a FIFO a job is reading (to let it go on).
    pub fn write_fifo(&self, path: &Path, text: &str) {
        std::fs::write(path, text).expect("write the FIFO");
    }

    /// Waits for a job to finish (through the daemon's Wait call) and
    /// returns what qstat would show of it.
    pub fn wait_job(&self, id: &str) -> v1::JobInfo {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let socket = self.socket.clone();
        let id = id.to_string();
        runtime.block_on(async move {
            let wait = async {
                let channel = qmesh_proto::endpoint::connect_unix(&socket)
                    .await
                    .expect("connect to the daemon");
                let mut client = v1::jobs_client::JobsClient::new(channel);
                client
                    .wait(v1::WaitRequest { job_id: id.clone() })
                    .await
                    .expect("wait for the job")
                    .into_inner()
            };
            tokio::time::timeout(Duration::from_secs(90), wait)
                .await
                .unwrap_or_else(|_| panic!("job {id} did not finish in 90 s:\n{}", self.log()))
        })
    }

    /// Waits until pbsnodes shows `node` in `state` (the daemon's view of
    /// its agents; there is no event to await).
    pub fn await_node_state(&self, node: &str, state: &str) {
        for _ in 0..600 {
            let out = self.ok("pbsnodes", &["-F", "json", node]);
            let doc: serde_json::Value = serde_json::from_str(&out).expect("pbsnodes JSON");
            if doc["nodes"][node]["state"] == state {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("node {node} is not {state} after 60 s:\n{}", self.log());
    }

    /// Waits until qstat shows job `id` in `state` (a letter): a change
    /// the daemon makes when an agent reports, with no event to await.
    pub fn await_job_state(&self, id: &str, state: &str) {
        for _ in 0..600 {
            if self.job_json(id)["job_state"] == state {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("job {id} is not {state} after 60 s:\n{}", self.log());
    }

    /// Waits until the log at `path` says `needle` `count` times or more
    /// (polling: a log line has no event to await).
    pub fn await_in_log(&self, path: &Path, needle: &str, count: usize) {
        for _ in 0..600 {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            if text.matches(needle).count() >= count {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "{} does not say \"{needle}\" {count} times after 60 s:\n{}",
            path.display(),
            self.log()
        );
    }

    /// The pid of the qmesh-agent this daemon started last, as its log
    /// says.
    pub fn local_agent_pid(&self) -> u32 {
        self.log()
            .lines()
            .rev()
            .filter(|l| l.contains("local agent started"))
            .filter_map(|l| l.split("pid=").nth(1))
            .find_map(|p| p.split_whitespace().next()?.parse::<u32>().ok())
            .expect("the daemon logs its agent's pid")
    }

    /// `qstat -x -f --json ID` as a JSON value for the job.
    /// A job's full id (`12.server`, `13[].server`) from the number Slurm's
    /// commands print.
    pub fn full_id(&self, number: &str) -> String {
        let out = self.ok("qstat", &["-x", "-t", "--json"]);
        let doc: serde_json::Value = serde_json::from_str(&out).expect("qstat JSON");
        doc["Jobs"]
            .as_object()
            .and_then(|jobs| {
                jobs.keys()
                    .find(|k| k.split(['.', '[']).next() == Some(number))
                    .cloned()
            })
            .unwrap_or_else(|| panic!("no job {number} in qstat:\n{out}"))
    }

    pub fn job_json(&self, id: &str) -> serde_json::Value {
        let out = self.ok("qstat", &["-x", "-f", "--json", id]);
        let doc: serde_json::Value = serde_json::from_str(&out).expect("qstat JSON");
        doc["Jobs"][id].clone()
    }

    /// The nodes a job ran on, from its `exec_host` (PBS's `n1/0*8+n2/0*8`).
    pub fn exec_nodes(&self, id: &str) -> Vec<String> {
        self.job_json(id)["exec_host"]
            .as_str()
            .unwrap_or_default()
            .split('+')
            .filter(|part| !part.is_empty())
            .map(|part| part.split('/').next().unwrap_or(part).to_string())
            .collect()
    }

    /// Every job id the daemon knows, finished ones included.
    pub fn all_job_ids(&self) -> Vec<String> {
        let out = self.ok("qstat", &["-x", "--json"]);
        let doc: serde_json::Value = serde_json::from_str(&out).expect("qstat JSON");
        doc["Jobs"]
            .as_object()
            .map(|jobs| jobs.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Fails on ERROR lines in the logs that the test did not expect.
    /// The test is over: its logs are kept as they are for the check, so
    /// that what stopping its processes makes them say is not held
    /// against it.
    pub fn test_over(&mut self) {
        if self.logs_at_end.is_none() {
            self.logs_at_end = Some(self.log());
        }
    }

    fn check_logs(&self) {
        let log = self.logs_at_end.clone().unwrap_or_else(|| self.log());
        let unexpected: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(" ERROR "))
            .filter(|l| !self.allowed_errors.iter().any(|a| l.contains(a.as_str())))
            .collect();
        assert!(
            unexpected.is_empty(),
            "unexpected ERROR lines in the logs:\n{}",
            unexpected.join("\n")
        );
    }

    /// Kills every process that runs under the test's directory.
    fn kill_everything(&mut self) {
        // A clean stop first: the daemon stops its local agent, which
        // takes its cgroup level with it; what is left is killed.
        self.stop_within(Duration::from_secs(10));
        self.kill9();
        let root = self.root.path().to_string_lossy().to_string();
        let me = std::process::id();
        for _ in 0..3 {
            let Ok(entries) = std::fs::read_dir("/proc") else {
                return;
            };
            for entry in entries.flatten() {
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<u32>().ok())
                else {
                    continue;
                };
                if pid == me {
                    continue;
                }
                let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                let cwd = std::fs::read_link(entry.path().join("cwd")).unwrap_or_default();
                // Jobs start at home: their environment names the test's
                // directory (PBS_O_WORKDIR, PBS_NODEFILE).
                let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
                if String::from_utf8_lossy(&cmdline).contains(&root)
                    || cwd.to_string_lossy().starts_with(&root)
                    || String::from_utf8_lossy(&environ).contains(&root)
                {
                    signal(pid, nix::sys::signal::Signal::SIGKILL);
                }
            }
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.test_over();
        self.kill_everything();
        remove_cgroups_under(self.root.path());
        if !std::thread::panicking() {
            self.check_logs();
        }
    }
}

/// The cgroups the test's agents made (their levels and jobs' cgroups
/// left by processes killed with SIGKILL), once those processes are
/// gone: a whole suite left hundreds. Waits at most 5 s for the last to
/// exit.
pub fn remove_cgroups_under(root: &Path) {
    for _ in 0..100 {
        if qmesh_agent::cgroup::remove_levels_under(root) == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn signal(pid: u32, sig: nix::sys::signal::Signal) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
    }
}

/// Whether a process exists.
pub fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// Whether the tests run as root (then other users can be tried for real).
pub fn is_root() -> bool {
    nix::unistd::getuid().is_root()
}
