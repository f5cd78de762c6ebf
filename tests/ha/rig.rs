//! A queue kept in a real 3-member etcd, served by two qmeshd (one leads,
//! one stands by), one compute host's agent and one login node's relay
//! that know both, all real processes on loopback ports of their own.
//!
//! One etcd cluster serves the whole file (`etcd()`), each test under a
//! prefix and server name of its own; the tests take turns (`serial()`),
//! since one of them stops etcd members.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use qmesh_etcd::testing::Cluster;

pub fn bin(name: &str) -> &'static str {
    match name {
        "qmeshd" => env!("CARGO_BIN_EXE_qmeshd"),
        "qmesh-agent" => env!("CARGO_BIN_EXE_qmesh-agent"),
        "qsub" => env!("CARGO_BIN_EXE_qsub"),
        "qstat" => env!("CARGO_BIN_EXE_qstat"),
        "qdel" => env!("CARGO_BIN_EXE_qdel"),
        "qrls" => env!("CARGO_BIN_EXE_qrls"),
        "spwait" => env!("CARGO_BIN_EXE_spwait"),
        "tracejob" => env!("CARGO_BIN_EXE_tracejob"),
        other => panic!("no binary {other}"),
    }
}

/// The file's etcd: started at the first test, killed when the tests end.
pub struct Etcd {
    pub cluster: Mutex<Cluster>,
    pub endpoints: Vec<String>,
    _dir: tempfile::TempDir,
    _runtime: tokio::runtime::Runtime,
}

pub fn etcd() -> Option<&'static Etcd> {
    static ETCD: OnceLock<Option<Etcd>> = OnceLock::new();
    ETCD.get_or_init(|| {
        if Cluster::skipped() {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("qmesh-ha-etcd-")
            .tempdir()
            .unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let cluster = {
            let _in = runtime.enter();
            Cluster::start(dir.path(), 3).unwrap_or_else(|e| panic!("{e}"))
        };
        Some(Etcd {
            endpoints: cluster.endpoints(),
            cluster: Mutex::new(cluster),
            _dir: dir,
            _runtime: runtime,
        })
    })
    .as_ref()
}

/// One test at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// Waits for `what` to hold, up to `within`, checking every 50 ms;
/// false if it did not.
pub fn holds_within(within: Duration, mut holds: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while !holds() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// A TCP forwarder whose line can be cut: while cut, bytes stop in both
/// directions and nothing is reset, as in a network partition (new
/// connections are taken and hang). Its threads end with the test binary.
pub struct Line {
    pub port: u16,
    open: Arc<AtomicBool>,
}

impl Line {
    pub fn to(target: String) -> Line {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(AtomicBool::new(true));
        let gate = open.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let Ok(far) = std::net::TcpStream::connect(&target) else {
                    continue;
                };
                for (mut from, mut to) in [
                    (conn.try_clone().unwrap(), far.try_clone().unwrap()),
                    (far, conn),
                ] {
                    let gate = gate.clone();
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16384];
                        loop {
                            let n = match from.read(&mut buf) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            while !gate.load(Ordering::SeqCst) {
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            if to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(std::net::Shutdown::Write);
                    });
                }
            }
        });
        Line { port, open }
    }

    pub fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
    }

    pub fn mend(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

/// One qmeshd of the queue.
pub struct Head {
    pub name: &'static str,
    pub dir: PathBuf,
    pub socket: PathBuf,
    pub port: u16,
    pub child: Option<Child>,
}

impl Head {
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("qmeshd.log")).unwrap_or_default()
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// Whether it serves commands (it leads); a stopped one does not
    /// answer, so the question has 2 s.
    pub fn leads(&self) -> bool {
        let Ok(mut child) = Command::new(bin("qstat"))
            .env("QMESH_SOCKET", &self.socket)
            .arg("-B")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        else {
            return false;
        };
        let answered = holds_within(Duration::from_secs(2), || {
            matches!(child.try_wait(), Ok(Some(_)))
        });
        if !answered {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
        child.wait().is_ok_and(|s| s.success())
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Waits for the process to end by itself, up to `within`.
    pub fn exits_within(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The queue: its heads, its compute host and its login node.
pub struct Queue {
    pub root: tempfile::TempDir,
    pub heads: Vec<Head>,
    pub work: PathBuf,
    pub login_socket: PathBuf,
    agents: Vec<Child>,
    config: PathBuf,
    /// Head a's configuration (its etcd through `lines`, when cut off).
    config_a: PathBuf,
    /// The lines between head a and each etcd member, when it has them.
    pub lines: Vec<Line>,
}

impl Queue {
    /// Two heads on the file's etcd under a prefix named for `test`, the
    /// first started first (it leads), an agent serving host `n1` with 4
    /// nodes and a login node `login1`, both knowing both heads.
    pub fn start(test: &str) -> Option<Queue> {
        Queue::start_with(test, false, 2)
    }

    /// [`Queue::start`]; with `lines`, head a reaches etcd through lines
    /// the test can cut ([`Queue::lines`]); the election lease lasts
    /// `lease_ttl` seconds.
    pub fn start_with(test: &str, lines: bool, lease_ttl: u32) -> Option<Queue> {
        let etcd = etcd()?;
        let root = tempfile::Builder::new()
            .prefix("qmesh-ha-")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let work = root.path().join("work");
        std::fs::create_dir(&work).unwrap();
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let key = root.path().join("cluster.key");
        std::fs::write(&key, "ha-test-key\n").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let logs = root.path().join("logs");
        std::fs::create_dir(root.path().join("tmp")).unwrap();
        let lines: Vec<Line> = if lines {
            etcd.endpoints
                .iter()
                .map(|e| Line::to(e.trim_start_matches("http://").to_string()))
                .collect()
        } else {
            Vec::new()
        };
        let quoted = |eps: Vec<String>| {
            eps.iter()
                .map(|e| format!("\"{e}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let direct = quoted(etcd.endpoints.clone());
        let through_lines = if lines.is_empty() {
            direct.clone()
        } else {
            quoted(
                lines
                    .iter()
                    .map(|l| format!("http://127.0.0.1:{}", l.port))
                    .collect(),
            )
        };
        let write_config = |path: &Path, endpoints: &str| {
            std::fs::write(
                path,
                format!(
                    r#"
[daemon]
job_logs_dir = "{logs}"
pass_interval_ms = 20

[store]
backend = "etcd"
endpoints = [{endpoints}]
prefix = "/qmesh-ha/{test}/"
lease_ttl = {lease_ttl}
request_timeout = 2

[agents]
cluster_key_file = "{key}"
heartbeat_secs = 1
lost_after_secs = 60

[server]
name = "{test}"
submit_hosts = ["login1"]

[[node_set]]
name = "n"
nodes = ["n1-0", "n1-1", "n1-2", "n1-3"]
host = "n1"

[[queue]]
name = "batch"
"#,
                    logs = logs.display(),
                    key = key.display(),
                ),
            )
            .unwrap();
        };
        let config = root.path().join("qmesh.toml");
        write_config(&config, &direct);
        let config_a = root.path().join("qmesh-a.toml");
        write_config(&config_a, &through_lines);
        let mut queue = Queue {
            heads: Vec::new(),
            work,
            login_socket: root.path().join("login1.sock"),
            agents: Vec::new(),
            config,
            config_a,
            lines,
            root,
        };
        for name in ["a", "b"] {
            let dir = queue.root.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            queue.heads.push(Head {
                name,
                socket: dir.join("qmeshd.sock"),
                dir,
                port: free_port(),
                child: None,
            });
        }
        queue.spawn(0);
        queue.await_that(Duration::from_secs(30), "head a leading", |q| {
            q.heads[0].leads()
        });
        queue.spawn(1);
        queue.start_agent(&key, "n1", false);
        queue.start_agent(&key, "login1", true);
        Some(queue)
    }

    /// The servers' list agents and relays get.
    pub fn servers(&self) -> String {
        self.heads
            .iter()
            .map(Head::url)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Starts head `i` (again) and waits for its READY=1 (it serves,
    /// leading or standing by).
    pub fn spawn(&mut self, i: usize) {
        let head = &self.heads[i];
        let notify = head.dir.join("notify.sock");
        let _ = std::fs::remove_file(&notify);
        let listener = std::os::unix::net::UnixDatagram::bind(&notify).unwrap();
        listener
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(head.dir.join("qmeshd.log"))
            .unwrap();
        let config = if i == 0 { &self.config_a } else { &self.config };
        let child = Command::new(bin("qmeshd"))
            .arg("--config")
            .arg(config)
            .arg("--state-dir")
            .arg(head.dir.join("state"))
            .arg("--socket")
            .arg(&head.socket)
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", head.port))
            .arg("--log-level")
            .arg("info")
            .env("NOTIFY_SOCKET", &notify)
            .env_remove("QMESH_SOCKET")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.heads[i].child = Some(child);
        let mut buf = [0u8; 256];
        loop {
            let n = listener.recv(&mut buf).unwrap_or_else(|e| {
                panic!(
                    "qmeshd {} did not say READY ({e}):\n{}",
                    self.heads[i].name,
                    self.heads[i].log()
                )
            });
            if String::from_utf8_lossy(&buf[..n]).contains("READY=1") {
                break;
            }
        }
    }

    fn start_agent(&mut self, key: &Path, host: &str, submit_only: bool) {
        let log =
            std::fs::File::create(self.root.path().join(format!("agent-{host}.log"))).unwrap();
        let mut cmd = Command::new(bin("qmesh-agent"));
        cmd.arg("--server")
            .arg(self.servers())
            .arg("--host")
            .arg(host)
            .arg("--spool")
            .arg(self.root.path().join(format!("spool-{host}")))
            .arg("--tmpdir-base")
            .arg(self.root.path().join("tmp"))
            .arg("--cluster-key-file")
            .arg(key)
            .arg("--log-level")
            .arg("debug");
        if submit_only {
            cmd.arg("--submit-only")
                .arg("--relay-socket")
                .arg(&self.login_socket);
        } else {
            cmd.arg("--relay-socket")
                .arg(self.root.path().join(format!("relay-{host}.sock")));
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.agents.push(child);
        if submit_only {
            self.await_that(Duration::from_secs(30), "the login node's relay", |q| {
                q.login_socket.exists()
            });
        }
    }

    /// Waits for `what` to hold, up to `within`; fails with every log.
    pub fn await_that(&self, within: Duration, what: &str, mut holds: impl FnMut(&Queue) -> bool) {
        if !holds_within(within, || holds(self)) {
            panic!("{what} did not happen within {within:?}\n{}", self.logs());
        }
    }

    /// The index of the head that leads now, waiting up to `within` for one.
    pub fn leader(&self, within: Duration) -> usize {
        let mut found = None;
        self.await_that(within, "a head leading", |q| {
            found = q.heads.iter().position(|h| h.child.is_some() && h.leads());
            found.is_some()
        });
        found.unwrap_or(0)
    }

    /// A command on the login node, as root.
    pub fn on_login(&self, name: &str, args: &[&str]) -> Output {
        Command::new(bin(name))
            .env("QMESH_SOCKET", &self.login_socket)
            .env("QMESH_SUBMIT_RETRY_SECS", "60")
            .current_dir(&self.work)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// A command on head `i`'s host.
    pub fn on_head(&self, i: usize, name: &str, args: &[&str]) -> Output {
        Command::new(bin(name))
            .env("QMESH_SOCKET", &self.heads[i].socket)
            .current_dir(&self.work)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    pub fn script(&self, name: &str, text: &str) -> PathBuf {
        let path = self.work.join(name);
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(text.as_bytes()).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// Every job id the leader lists (finished ones too).
    pub fn job_ids(&self) -> Vec<String> {
        let out = self.on_login("qstat", &["-x", "-F", "json"]);
        assert!(
            out.status.success(),
            "qstat: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["Jobs"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Every log, for a failure's message.
    pub fn logs(&self) -> String {
        let mut text = String::new();
        for head in &self.heads {
            text.push_str(&format!("--- qmeshd {} ---\n{}\n", head.name, head.log()));
        }
        if let Ok(entries) = std::fs::read_dir(self.root.path()) {
            for e in entries.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "log") {
                    text.push_str(&format!(
                        "--- {} ---\n{}\n",
                        p.display(),
                        std::fs::read_to_string(&p).unwrap_or_default()
                    ));
                }
            }
        }
        text
    }

    /// The accounting log's lines (the shared job logs directory).
    pub fn accounting(&self) -> Vec<String> {
        let dir = self.root.path().join("logs/server_priv/accounting");
        let mut lines = Vec::new();
        if let Ok(entries) = std::fs::read_dir(dir) {
            let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            files.sort();
            for f in files {
                lines.extend(
                    std::fs::read_to_string(f)
                        .unwrap_or_default()
                        .lines()
                        .map(str::to_string),
                );
            }
        }
        lines
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        for head in &mut self.heads {
            if let Some(c) = &head.child {
                // A stopped head must be woken to die.
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(c.id() as i32),
                    nix::sys::signal::Signal::SIGCONT,
                );
            }
            head.kill9();
        }
        for agent in &mut self.agents {
            let _ = agent.kill();
            let _ = agent.wait();
        }
        // The jobs' shepherds outlive a killed agent: end what runs here.
        let root = self.root.path().display().to_string();
        let _ = Command::new("pkill").args(["-9", "-f", &root]).status();
        // The cgroups the agents made, once what ran in them is gone.
        for _ in 0..100 {
            if qmesh_agent::cgroup::remove_levels_under(self.root.path()) == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
