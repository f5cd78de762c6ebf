//! A private qmeshd for a measurement: its own directory, socket and log,
//! ready when it says READY=1 on a notify socket we own.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

pub fn find_qmeshd(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let exe = std::env::current_exe().context("find qmesh-bench's own path")?;
    let sibling = exe.with_file_name("qmeshd");
    if sibling.is_file() {
        return Ok(sibling);
    }
    bail!(
        "cannot find qmeshd next to qmesh-bench ({}); build the workspace (cargo build --release --workspace) or pass --qmeshd",
        sibling.display()
    )
}

/// A run's own directory, `PREFIX*` with `mode`, under `dir` (default:
/// the temporary directory); removed when dropped.
pub fn run_dir(prefix: &str, mode: u32, dir: Option<&Path>) -> anyhow::Result<tempfile::TempDir> {
    let mut root = tempfile::Builder::new();
    root.prefix(prefix)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(mode));
    match dir {
        Some(d) => root.tempdir_in(d),
        None => root.tempdir(),
    }
    .context("make the run's directory")
}

/// A TCP port on the loopback free a moment ago, for a daemon's agents to
/// connect to (the daemon binds it when it starts).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("find a free port")?;
    Ok(listener.local_addr()?.port())
}

pub struct Daemon {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    child: Option<Child>,
}

impl Daemon {
    pub fn state_dir(dir: &Path) -> PathBuf {
        dir.join("state")
    }

    /// Where qmeshd keeps its store under `dir` (see qmeshd's lib.rs).
    pub fn store_dir(dir: &Path) -> PathBuf {
        Daemon::state_dir(dir).join("store")
    }

    /// Starts qmeshd in `dir` (made by the caller) and returns how long it
    /// took to be ready.
    pub fn start(qmeshd: &Path, dir: tempfile::TempDir) -> anyhow::Result<(Daemon, Duration)> {
        Daemon::start_configured(qmeshd, dir, None, "warn")
    }

    /// [`Daemon::start`] with a configuration file and a log level.
    pub fn start_configured(
        qmeshd: &Path,
        dir: tempfile::TempDir,
        config: Option<&Path>,
        log_level: &str,
    ) -> anyhow::Result<(Daemon, Duration)> {
        let socket = dir.path().join("qmeshd.sock");
        Daemon::start_configured_at(qmeshd, dir, config, log_level, &socket)
    }

    /// [`Daemon::start_configured`] serving commands on `socket`.
    pub fn start_configured_at(
        qmeshd: &Path,
        dir: tempfile::TempDir,
        config: Option<&Path>,
        log_level: &str,
        socket: &Path,
    ) -> anyhow::Result<(Daemon, Duration)> {
        let mut daemon = Daemon {
            dir,
            socket: socket.to_path_buf(),
            child: None,
        };
        let ready = daemon.spawn(qmeshd, config, log_level)?;
        Ok((daemon, ready))
    }

    /// Starts qmeshd again on the same directory, store and socket (after
    /// [`Daemon::kill9`] or [`Daemon::stop`]); how long it took to be ready.
    pub fn start_again(
        &mut self,
        qmeshd: &Path,
        config: Option<&Path>,
        log_level: &str,
    ) -> anyhow::Result<Duration> {
        self.stop();
        self.spawn(qmeshd, config, log_level)
    }

    fn spawn(
        &mut self,
        qmeshd: &Path,
        config: Option<&Path>,
        log_level: &str,
    ) -> anyhow::Result<Duration> {
        let notify = self.dir.path().join("notify.sock");
        let _ = std::fs::remove_file(&notify);
        let listener = UnixDatagram::bind(&notify).context("bind the notify socket")?;
        // Short waits, so a daemon that exits at once is seen at once.
        listener.set_read_timeout(Some(Duration::from_millis(200)))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("qmeshd.log"))?;
        let started = Instant::now();
        let mut cmd = Command::new(qmeshd);
        if let Some(config) = config {
            cmd.arg("--config").arg(config);
        }
        let child = cmd
            .arg("--state-dir")
            .arg(Daemon::state_dir(self.dir.path()))
            .arg("--socket")
            .arg(&self.socket)
            .arg("--log-level")
            .arg(log_level)
            .env("NOTIFY_SOCKET", &notify)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("start {}", qmeshd.display()))?;
        self.child = Some(child);
        let mut buf = [0u8; 256];
        loop {
            let n = match listener.recv(&mut buf) {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    self.check_alive()?;
                    if started.elapsed() > Duration::from_secs(120) {
                        bail!("qmeshd did not say READY within 120 s");
                    }
                    continue;
                }
                Err(e) => return Err(e).context("read qmeshd's READY"),
            };
            if String::from_utf8_lossy(&buf[..n])
                .lines()
                .any(|l| l == "READY=1")
            {
                break;
            }
        }
        let ready = started.elapsed();
        self.check_alive()?;
        Ok(ready)
    }

    fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(child) = &mut self.child
            && let Some(status) = child.try_wait()?
        {
            bail!(
                "qmeshd exited early ({status}); see its log in {}",
                self.dir.path().display()
            );
        }
        Ok(())
    }

    /// The daemon's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// SIGKILL and wait: no chance to say goodbye.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM and wait.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            let _ = child.wait();
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What a directory takes on disk: the length of its files, and the blocks
/// allocated to them (sled preallocates, so the two differ).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirSize {
    pub bytes: u64,
    pub allocated: u64,
}

impl DirSize {
    /// Everything under `dir`; what cannot be read counts nothing.
    pub fn of(dir: &Path) -> DirSize {
        use std::os::unix::fs::MetadataExt;
        let mut total = DirSize::default();
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                match e.metadata() {
                    Ok(m) if m.is_dir() => {
                        let inner = DirSize::of(&e.path());
                        total.bytes += inner.bytes;
                        total.allocated += inner.allocated;
                    }
                    Ok(m) => {
                        total.bytes += m.len();
                        total.allocated += m.blocks() * 512;
                    }
                    Err(_) => {}
                }
            }
        }
        total
    }

    /// Growth from `before` to `self` (negative if it shrank).
    pub fn since(self, before: DirSize) -> (i64, i64) {
        let diff = |a: u64, b: u64| a as i64 - b as i64;
        (
            diff(self.bytes, before.bytes),
            diff(self.allocated, before.allocated),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_counts_its_files_and_subdirectories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), [0u8; 1000]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b"), [0u8; 24]).unwrap();
        let size = DirSize::of(dir.path());
        assert_eq!(size.bytes, 1024);
        assert_eq!(size.since(DirSize::default()).0, 1024);
        assert_eq!(DirSize::of(&dir.path().join("missing")), DirSize::default());
    }
}
