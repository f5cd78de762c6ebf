//! A private Slurm 22.05 on this host, for the tests that hold qmesh's
//! Slurm commands against the real ones: its own munged, its own MariaDB
//! and slurmdbd (so that `sacct` answers as at a site), one slurmctld and
//! one slurmd serving node `n1` with this machine's CPUs and memory, all
//! real processes of the distribution's packages, in a temporary
//! directory of their own, on loopback ports of their own. Nothing of the
//! system's is read or written: no /etc/slurm, no /etc/munge, no service.
//!
//! One Slurm serves the whole test binary ([`slurm()`]), started by the
//! first test that asks and shared by the others; its commands run
//! through [`Slurm::cmd`], which points them at the private slurm.conf.
//!
//! A small shell started first (the reaper) waits for its standard input
//! to close, which happens when the test binary exits however it exits,
//! then kills every process whose environment carries this rig's mark
//! (`QMESH_SLURM_RIG=<dir>`: the daemons and the jobs) or whose working
//! directory is in the rig's (the daemons and slurmstepd, which clears
//! its environment but keeps slurmd's directory), and removes the
//! directory. `QMESH_SLURM_KEEP=1` keeps the directory.
//!
//! The binaries are the ones on PATH, /usr/sbin and /usr/bin: Debian's
//! slurm-wlm, slurmdbd, munge, mariadb-server-core and
//! mariadb-client-core (`.ci/run` installs them when missing). Without
//! them, or when Slurm does not come up, every test fails with why and
//! the daemons' logs; `QMESH_SKIP_SLURM=1` skips them, saying so.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The cluster's name (ClusterName): short, so that sacctmgr's and
/// sacct's 10-wide columns show it whole.
pub const CLUSTER: &str = "oracle";
/// The one node's name (slurmd -N), whatever the host is called.
pub const NODE: &str = "n1";
/// The one partition, the default.
pub const PARTITION: &str = "debug";
/// How long the daemons have to come up, each.
const START_WITHIN: Duration = Duration::from_secs(60);

/// What the rig needs, by the Debian package that brings it.
const BINARIES: [(&str, &str); 13] = [
    ("munged", "munge"),
    ("mariadb-install-db", "mariadb-server-core"),
    ("mariadbd", "mariadb-server-core"),
    ("my_print_defaults", "mariadb-client-core"),
    ("mariadb", "mariadb-client-core"),
    ("slurmdbd", "slurmdbd"),
    ("slurmctld", "slurmctld (slurm-wlm)"),
    ("slurmd", "slurmd (slurm-wlm)"),
    ("sacctmgr", "slurm-client (slurm-wlm)"),
    ("sbatch", "slurm-client (slurm-wlm)"),
    ("squeue", "slurm-client (slurm-wlm)"),
    ("sinfo", "slurm-client (slurm-wlm)"),
    ("sacct", "slurm-client (slurm-wlm)"),
];

/// Environment variables of the test's own environment that would change
/// what Slurm's commands do or print (a test run inside a Slurm job, a
/// user's SQUEUE_FORMAT): removed from every command the rig runs.
const FOREIGN_PREFIXES: [&str; 9] = [
    "SLURM_",
    "SBATCH_",
    "SQUEUE_",
    "SINFO_",
    "SACCT_",
    "SCONTROL_",
    "SALLOC_",
    "SRUN_",
    "SACCTMGR_",
];

/// Whether the Slurm tests are to be skipped (`QMESH_SKIP_SLURM=1`),
/// said on stderr.
pub fn skipped() -> bool {
    let skip = std::env::var_os("QMESH_SKIP_SLURM").is_some_and(|v| v == "1");
    if skip {
        eprintln!("skipped: QMESH_SKIP_SLURM=1");
    }
    skip
}

/// The test binary's Slurm, started at the first call; a panic with the
/// daemons' logs if it cannot start (every test that asks gets it).
pub fn slurm() -> &'static Slurm {
    static SLURM: OnceLock<Result<Slurm, String>> = OnceLock::new();
    match SLURM.get_or_init(Slurm::start) {
        Ok(slurm) => slurm,
        Err(why) => panic!("the private Slurm did not start: {why}"),
    }
}

/// Where a binary is: PATH first, then the system's directories (a
/// user's PATH often lacks /usr/sbin, where the daemons are).
pub fn binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Polls `holds` every 100 ms until it is true or `within` has passed.
pub fn holds_within(within: Duration, mut holds: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if holds() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The running Slurm.
pub struct Slurm {
    /// The rig's directory (removed by the reaper when the tests end).
    pub dir: PathBuf,
    /// The private slurm.conf; `SLURM_CONF` of every command.
    pub conf: PathBuf,
    /// The private munged's socket (`AuthInfo=socket=...`).
    pub munge_socket: PathBuf,
    /// Where tests make their working directories.
    pub work: PathBuf,
    /// Each daemon by name, while it runs.
    daemons: Mutex<Vec<(&'static str, Child)>>,
    /// Its standard input closes when the test binary exits (or the rig
    /// is dropped): it then kills the rig's processes.
    reaper: Mutex<Option<Child>>,
}

impl Slurm {
    fn start() -> Result<Slurm, String> {
        let missing: Vec<String> = BINARIES
            .iter()
            .filter(|(name, _)| binary(name).is_none())
            .map(|(name, package)| format!("{name} (Debian package {package})"))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "Slurm is not installed here; missing: {}. Install Debian's slurm-wlm, \
                 slurmdbd, munge, mariadb-server-core and mariadb-client-core (.ci/run does \
                 when they are missing); QMESH_SKIP_SLURM=1 skips these tests",
                missing.join(", ")
            ));
        }
        let dir = tempfile::Builder::new()
            .prefix("qmesh-slurm-")
            .tempdir()
            .map_err(|e| format!("a temporary directory: {e}"))?
            .keep();
        let slurm = Slurm {
            conf: dir.join("etc/slurm.conf"),
            munge_socket: dir.join("run/munge.socket"),
            work: dir.join("work"),
            daemons: Mutex::new(Vec::new()),
            reaper: Mutex::new(None),
            dir,
        };
        // From here on, a failure drops `slurm`, whose reaper then ends
        // whatever had started.
        slurm.start_reaper()?;
        let started = Instant::now();
        let steps = slurm
            .bring_up()
            .map_err(|why| format!("{why}\n{}", slurm.logs()))?;
        eprintln!(
            "slurm rig: up in {:.1} s ({steps}) in {}",
            started.elapsed().as_secs_f64(),
            slurm.dir.display()
        );
        Ok(slurm)
    }

    /// The reaper: `sh -c` waiting on its standard input, in a process
    /// group of its own (a ^C to the test run does not stop it first).
    fn start_reaper(&self) -> Result<(), String> {
        let keep = std::env::var_os("QMESH_SLURM_KEEP").is_some_and(|v| v == "1");
        let child = Command::new("sh")
            .arg("-c")
            .arg(
                r#"dir=$1; keep=$2
read -r _
for pass in 1 2 3; do
    for p in /proc/[0-9]*; do
        pid=${p#/proc/}
        [ "$pid" = "$$" ] && continue
        cwd=$(readlink "$p/cwd" 2>/dev/null) || cwd=
        case "$cwd/" in
        "$dir"/*) kill -9 "$pid" 2>/dev/null; continue ;;
        esac
        grep -qzxF "QMESH_SLURM_RIG=$dir" "$p/environ" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    done
done
[ "$keep" = keep ] || rm -rf "$dir""#,
            )
            .arg("qmesh-slurm-reaper")
            .arg(&self.dir)
            .arg(if keep { "keep" } else { "remove" })
            .env_remove("QMESH_SLURM_RIG")
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("start the reaper shell: {e}"))?;
        *self.reaper.lock().unwrap_or_else(|p| p.into_inner()) = Some(child);
        Ok(())
    }

    /// Starts the daemons in turn, each when the one before answers;
    /// how long each took.
    fn bring_up(&self) -> Result<String, String> {
        let d = &self.dir;
        let mut steps = Vec::new();
        let mut since = Instant::now();
        let mut step = |name: &str| {
            steps.push(format!("{name} {:.1} s", since.elapsed().as_secs_f64()));
            since = Instant::now();
        };
        for sub in ["etc", "run", "key", "state", "spool", "log", "db", "work"] {
            std::fs::create_dir_all(d.join(sub))
                .map_err(|e| format!("make {}: {e}", d.join(sub).display()))?;
        }
        // munged wants every directory above its socket searchable by all
        // and its key readable by its owner alone.
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m))
                .map_err(|e| format!("chmod {}: {e}", p.display()))
        };
        mode(d, 0o755)?;
        mode(&d.join("run"), 0o755)?;
        mode(&d.join("key"), 0o700)?;
        mode(&self.work, 0o1777)?;
        let key = d.join("key/munge.key");
        let mut bytes = vec![0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| format!("read /dev/urandom: {e}"))?;
        std::fs::write(&key, &bytes).map_err(|e| format!("write the munge key: {e}"))?;
        mode(&key, 0o400)?;

        // 1. munged, on its own socket and key.
        self.spawn(
            "munged",
            Command::new(bin("munged"))
                .arg("--foreground")
                .arg(format!("--socket={}", self.munge_socket.display()))
                .arg(format!("--key-file={}", key.display()))
                .arg(format!("--pid-file={}", d.join("run/munged.pid").display()))
                .arg(format!("--log-file={}", d.join("log/munged.log").display()))
                .arg(format!(
                    "--seed-file={}",
                    d.join("run/munged.seed").display()
                )),
        )?;
        self.await_up("munged answering on its socket", || {
            std::os::unix::net::UnixStream::connect(&self.munge_socket).is_ok()
        })?;
        step("munged");

        // 2. MariaDB for slurmdbd: a fresh data directory, loopback TCP.
        let db_port = free_port();
        let data = d.join("db/data");
        let db_socket = d.join("run/mariadb.sock");
        // Small InnoDB files: the default log alone is 96 MB.
        let innodb = [
            "--innodb-log-file-size=4M",
            "--innodb-buffer-pool-size=32M",
            "--innodb-flush-log-at-trx-commit=0",
            "--skip-log-bin",
        ];
        let installed = Command::new(bin("mariadb-install-db"))
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--user={}", user()))
            .arg("--auth-root-authentication-method=normal")
            .arg("--skip-test-db")
            .args(innodb)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("run mariadb-install-db: {e}"))?;
        std::fs::write(
            d.join("log/mariadb-install-db.log"),
            output_text(&installed),
        )
        .map_err(|e| e.to_string())?;
        if !installed.status.success() {
            return Err(format!("mariadb-install-db failed ({})", installed.status));
        }
        step("mariadb-install-db");
        self.spawn(
            "mariadbd",
            Command::new(bin("mariadbd"))
                .arg("--no-defaults")
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--socket={}", db_socket.display()))
                .arg(format!("--port={db_port}"))
                .arg("--bind-address=127.0.0.1")
                .arg(format!(
                    "--pid-file={}",
                    d.join("run/mariadbd.pid").display()
                ))
                .arg(format!("--user={}", user()))
                .arg("--skip-name-resolve")
                .arg(format!(
                    "--log-error={}",
                    d.join("log/mariadbd.log").display()
                ))
                .args(innodb),
        )?;
        self.await_up("MariaDB answering a query", || {
            Command::new(bin("mariadb"))
                .arg("--no-defaults")
                .arg(format!("--socket={}", db_socket.display()))
                .args(["-u", "root", "-e", "SELECT 1"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })?;
        step("mariadbd");

        // 3. The configuration, then slurmdbd.
        let dbd_port = free_port();
        std::fs::write(&self.conf, self.slurm_conf(dbd_port))
            .map_err(|e| format!("write {}: {e}", self.conf.display()))?;
        // slurmdbd reads slurmdbd.conf beside slurm.conf, and only if no
        // one but its owner can read it (it holds the database password).
        let dbd_conf = d.join("etc/slurmdbd.conf");
        std::fs::write(&dbd_conf, self.slurmdbd_conf(dbd_port, db_port))
            .map_err(|e| format!("write {}: {e}", dbd_conf.display()))?;
        mode(&dbd_conf, 0o600)?;
        self.spawn(
            "slurmdbd",
            Command::new(bin("slurmdbd")).arg("-D").arg("-v"),
        )?;
        self.await_up("slurmdbd answering sacctmgr", || {
            self.quiet("sacctmgr", &["-n", "list", "cluster"])
        })?;
        // The cluster must be known to the database before slurmctld
        // registers; the root account and its user come with it.
        let added = self.run("sacctmgr", &["-i", "add", "cluster", CLUSTER]);
        if !added.status.success() {
            return Err(format!(
                "sacctmgr add cluster {CLUSTER}: {}",
                output_text(&added)
            ));
        }
        step("slurmdbd");

        // 4. slurmctld, then slurmd serving node n1.
        self.spawn("slurmctld", Command::new(bin("slurmctld")).arg("-D"))?;
        self.await_up("slurmctld answering scontrol ping", || {
            self.run("scontrol", &["ping"])
                .stdout
                .windows(2)
                .any(|w| w == b"UP")
        })?;
        step("slurmctld");
        self.spawn(
            "slurmd",
            Command::new(bin("slurmd")).args(["-D", "-N", NODE]),
        )?;
        self.await_up(&format!("node {NODE} idle in sinfo"), || {
            let out = self.run("sinfo", &["-h", "-N", "-n", NODE, "-o", "%T"]);
            String::from_utf8_lossy(&out.stdout).trim() == "idle"
        })?;
        step("slurmd");
        Ok(steps.join(", "))
    }

    /// slurm.conf: one host, one node, one partition; plugins that need
    /// neither systemd nor cgroups; accounting to the private slurmdbd
    /// and job completions to a text file as well.
    fn slurm_conf(&self, dbd_port: u16) -> String {
        let d = self.dir.display();
        let user = user();
        format!(
            "# Written by qmesh's tests/slurm/rig.rs for a private test cluster.
ClusterName={CLUSTER}
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/linux
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort={dbd_port}
AccountingStoragePass=socket={munge}
JobCompType=jobcomp/filetxt
JobCompLoc={d}/log/jobcomp.txt
{node}
PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
",
            ctld_port = free_port(),
            slurmd_port = free_port(),
            munge = self.munge_socket.display(),
            node = node_line(),
        )
    }

    fn slurmdbd_conf(&self, dbd_port: u16, db_port: u16) -> String {
        let d = self.dir.display();
        format!(
            "# Written by qmesh's tests/slurm/rig.rs for a private test cluster.
DbdHost=localhost
DbdPort={dbd_port}
SlurmUser={user}
AuthType=auth/munge
AuthInfo=socket={munge}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser=root
StorageLoc=slurm_acct_db
LogFile={d}/log/slurmdbd.log
PidFile={d}/run/slurmdbd.pid
DebugLevel=info
",
            user = user(),
            munge = self.munge_socket.display(),
        )
    }

    /// Starts a daemon in the foreground, its output to log/NAME.stderr.
    fn spawn(&self, name: &'static str, cmd: &mut Command) -> Result<(), String> {
        let out = std::fs::File::create(self.dir.join(format!("log/{name}.stderr")))
            .map_err(|e| e.to_string())?;
        self.environ(cmd);
        let child = cmd
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone().map_err(|e| e.to_string())?)
            .stderr(out)
            .spawn()
            .map_err(|e| format!("start {name}: {e}"))?;
        self.daemons
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((name, child));
        Ok(())
    }

    /// The daemons that have exited, with how.
    fn exited(&self) -> Vec<String> {
        let mut daemons = self.daemons.lock().unwrap_or_else(|p| p.into_inner());
        daemons
            .iter_mut()
            .filter_map(|(name, child)| match child.try_wait() {
                Ok(Some(status)) => Some(format!("{name} exited ({status})")),
                _ => None,
            })
            .collect()
    }

    /// Waits for `what`, failing at once if a daemon exits meanwhile.
    fn await_up(&self, what: &str, mut holds: impl FnMut() -> bool) -> Result<(), String> {
        let mut dead = Vec::new();
        let up = holds_within(START_WITHIN, || {
            dead = self.exited();
            !dead.is_empty() || holds()
        });
        if !dead.is_empty() {
            return Err(format!("waiting for {what}: {}", dead.join(", ")));
        }
        if !up {
            return Err(format!("{what} did not happen within {START_WITHIN:?}"));
        }
        Ok(())
    }

    /// The environment every process of the rig gets: the private
    /// configuration, the rig's mark, nothing of a Slurm outside.
    fn environ<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if FOREIGN_PREFIXES.iter().any(|p| k.starts_with(p)) {
                cmd.env_remove(&key);
            }
        }
        cmd.env("SLURM_CONF", &self.conf)
            .env("QMESH_SLURM_RIG", &self.dir)
    }

    /// One of Slurm's commands (`sbatch`, `squeue`...) against this
    /// Slurm, run in the rig's work directory; the caller adds
    /// arguments and may change the directory.
    pub fn cmd(&self, name: &str) -> Command {
        let mut cmd = Command::new(bin(name));
        self.environ(&mut cmd)
            .current_dir(&self.work)
            .stdin(Stdio::null());
        cmd
    }

    /// Runs a command to its end.
    pub fn run(&self, name: &str, args: &[&str]) -> Output {
        self.cmd(name)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run {name}: {e}"))
    }

    /// Whether a command succeeds, its output dropped.
    fn quiet(&self, name: &str, args: &[&str]) -> bool {
        self.cmd(name)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Runs a command that must succeed; its stdout.
    pub fn ok(&self, name: &str, args: &[&str]) -> String {
        let out = self.run(name, args);
        assert!(
            out.status.success(),
            "{name} {args:?} failed ({}):\n{}\n{}",
            out.status,
            output_text(&out),
            self.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A fresh working directory for a test, under the rig's.
    pub fn workdir(&self, test: &str) -> PathBuf {
        let dir = self.work.join(test);
        std::fs::create_dir_all(&dir).expect("a test's working directory");
        dir
    }

    /// Waits for `what` to hold, up to `within`; fails with the logs.
    pub fn await_that(&self, within: Duration, what: &str, holds: impl FnMut() -> bool) {
        if !holds_within(within, holds) {
            panic!("{what} did not happen within {within:?}\n{}", self.logs());
        }
    }

    /// A job's state as squeue sees it (finished jobs stay for
    /// MinJobAge, 300 s); empty if unknown.
    pub fn job_state(&self, id: &str) -> String {
        let out = self.run("squeue", &["-h", "-t", "all", "-j", id, "-o", "%T"]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Waits for a job to reach `state` (e.g. RUNNING, COMPLETED).
    pub fn await_state(&self, id: &str, state: &str, within: Duration) {
        let mut last = String::new();
        if !holds_within(within, || {
            last = self.job_state(id);
            last == state
        }) {
            panic!(
                "job {id} did not reach {state} within {within:?} (last {last:?})\n{}",
                self.logs()
            );
        }
    }

    /// Every log of the rig, each cut to its last 200 lines.
    pub fn logs(&self) -> String {
        let mut text = String::new();
        let Ok(entries) = std::fs::read_dir(self.dir.join("log")) else {
            return text;
        };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            let content = std::fs::read_to_string(&f).unwrap_or_default();
            let lines: Vec<&str> = content.lines().collect();
            let from = lines.len().saturating_sub(200);
            text.push_str(&format!(
                "--- {} ({} lines{}) ---\n{}\n",
                f.display(),
                lines.len(),
                if from > 0 { ", the last 200" } else { "" },
                lines[from..].join("\n")
            ));
        }
        text
    }
}

impl Drop for Slurm {
    /// Only a rig that failed to start is dropped (the test binary's is
    /// in a static): the reaper ends its processes and is waited for.
    fn drop(&mut self) {
        let reaper = self.reaper.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(mut child) = reaper.take() {
            drop(child.stdin.take());
            let _ = child.wait();
        }
        for (_, child) in self.daemons.get_mut().unwrap_or_else(|p| p.into_inner()) {
            let _ = child.wait();
        }
    }
}

/// A binary's path; [`Slurm::start`] has checked they are all there.
fn bin(name: &str) -> PathBuf {
    binary(name).unwrap_or_else(|| PathBuf::from(name))
}

/// The user the daemons run as (SlurmUser): the one running the tests.
pub fn user() -> String {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| "root".into())
}

/// The node's line: this machine's CPUs, sockets, cores, threads and
/// memory as `slurmd -C` finds them, under the name [`NODE`] on
/// 127.0.0.1.
fn node_line() -> String {
    let found = Command::new(bin("slurmd"))
        .arg("-C")
        .env_remove("SLURM_CONF")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let hardware: Vec<&str> = found
        .lines()
        .find(|l| l.starts_with("NodeName="))
        .map(|l| {
            l.split_whitespace()
                .filter(|w| !w.starts_with("NodeName="))
                .collect()
        })
        .unwrap_or_default();
    let hardware = if hardware.is_empty() {
        // slurmd -C said nothing: what the system says.
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        format!("CPUs={cpus}")
    } else {
        hardware.join(" ")
    };
    format!("NodeName={NODE} NodeAddr=127.0.0.1 {hardware} State=UNKNOWN")
}

/// A command's stdout and stderr, for a message.
pub fn output_text(out: &Output) -> String {
    format!(
        "--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
