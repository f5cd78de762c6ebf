//! A cluster: one daemon, several agents, each a separate process serving
//! its own host name over TLS, enrolled with the daemon's cluster CA by
//! the cluster key. Run as root on Linux,
//! each agent lives in its own network namespace with its own address
//! (10.X.N.2, reaching the daemon at 10.X.N.1 over a veth pair), as on
//! separate machines; elsewhere they share 127.0.0.1.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::agents::free_port;
use crate::harness::{Daemon, bin, is_root};

/// A network namespace with one veth pair to the test's own namespace.
struct NetNs {
    name: String,
    /// The daemon's address as the agent inside sees it.
    gateway: String,
}

static NEXT_NS: AtomicU32 = AtomicU32::new(0);

impl NetNs {
    /// `None` where namespaces cannot be made (not root, no `ip`).
    fn create() -> Option<NetNs> {
        if !is_root() {
            return None;
        }
        let n = NEXT_NS.fetch_add(1, Ordering::SeqCst);
        let tag = format!("{}{n}", std::process::id() % 100_000);
        let name = format!("qmt{tag}");
        let (host_if, ns_if) = (format!("qh{tag}"), format!("qa{tag}"));
        // A /24 per namespace, from the pid and a counter.
        let net = format!("10.{}.{}", 100 + (std::process::id() % 100), n % 250);
        let ip = |args: &[&str]| {
            Command::new("ip")
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !ip(&["netns", "add", &name]) {
            return None;
        }
        let ns = NetNs {
            name: name.clone(),
            gateway: format!("{net}.1"),
        };
        let ok = ip(&[
            "link", "add", &host_if, "type", "veth", "peer", "name", &ns_if,
        ]) && ip(&["link", "set", &ns_if, "netns", &name])
            && ip(&["addr", "add", &format!("{net}.1/24"), "dev", &host_if])
            && ip(&["link", "set", &host_if, "up"])
            && ip(&[
                "netns",
                "exec",
                &name,
                "ip",
                "addr",
                "add",
                &format!("{net}.2/24"),
                "dev",
                &ns_if,
            ])
            && ip(&["netns", "exec", &name, "ip", "link", "set", &ns_if, "up"])
            && ip(&["netns", "exec", &name, "ip", "link", "set", "lo", "up"]);
        ok.then_some(ns)
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        // The veth pair goes with the namespace.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// Writes a prologue and an epilogue (their texts) for a daemon.
type WriteHooks = dyn Fn(&Daemon) -> (String, String);

/// One host's agent.
pub(crate) struct Agent {
    pub host: String,
    child: Option<Child>,
    ns: Option<NetNs>,
}

impl Agent {
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the agent runs").id()
    }

    /// Freezes (SIGSTOP) or thaws (SIGCONT) the agent: it stays connected
    /// but says nothing, like a host that hangs.
    pub fn freeze(&self, frozen: bool) {
        let sig = if frozen {
            nix::sys::signal::Signal::SIGSTOP
        } else {
            nix::sys::signal::Signal::SIGCONT
        };
        let pid = nix::unistd::Pid::from_raw(self.pid() as i32);
        nix::sys::signal::kill(pid, sig).expect("signal the agent");
    }

    /// SIGKILL: no goodbye.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A clean stop (SIGTERM, thawed first), in which the agent removes
    /// its level of the cgroup hierarchy; SIGKILL after 5 s.
    fn stop(&mut self) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        crate::harness::signal(child.id(), nix::sys::signal::Signal::SIGCONT);
        crate::harness::signal(child.id(), nix::sys::signal::Signal::SIGTERM);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        // Polled: std has no wait with a time limit.
        while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill9();
    }
}

/// A daemon on TCP and an agent per host.
pub(crate) struct Cluster {
    pub agents: Vec<Agent>,
    /// Submit-only agents (login nodes).
    pub logins: Vec<Agent>,
    pub d: Daemon,
    pub port: u16,
    key: PathBuf,
    hooks: bool,
}

impl Cluster {
    /// `hosts` hosts of `per_host` nodes each (`h1a`, `h1b`, ... on `h1`),
    /// one flat set `c` and its queue `c`. With `hooks`, every agent runs
    /// the prologue and epilogue it writes (into the work directory).
    pub fn start(
        hosts: usize,
        per_host: usize,
        lost_after: u32,
        hooks: Option<&WriteHooks>,
    ) -> Cluster {
        Cluster::start_networked(hosts, per_host, lost_after, hooks, true)
    }

    /// [`Cluster::start`], with the agents in the test's own network
    /// (`namespaces` false): for programs whose processes on different
    /// hosts talk to each other directly (MPI).
    pub fn start_networked(
        hosts: usize,
        per_host: usize,
        lost_after: u32,
        hooks: Option<&WriteHooks>,
        namespaces: bool,
    ) -> Cluster {
        let port = free_port();
        let keydir = tempfile::tempdir().unwrap();
        let key = keydir.path().join("cluster.key");
        std::fs::write(&key, "e2e-cluster-key\n").unwrap();
        let mut nodes = Vec::new();
        for h in 1..=hosts {
            for n in 0..per_host {
                let letter = (b'a' + n as u8) as char;
                nodes.push(format!("{{ name = \"h{h}{letter}\", host = \"h{h}\" }}"));
            }
        }
        let config = format!(
            r#"
[agents]
listen = "0.0.0.0:{port}"
heartbeat_secs = 1
lost_after_secs = {lost_after}
cluster_key_file = "{key}"

[server]
default_queue = "c"

[[queue]]
name = "c"
node_sets = ["c"]

[[node_set]]
name = "c"
nodes = [{nodes}]
"#,
            key = key.display(),
            nodes = nodes.join(", ")
        );
        let d = Daemon::start_with(Some(&config));
        // The key must outlive the agents that read it: keep it in the
        // daemon's directory.
        let kept = d.root.path().join("cluster.key");
        std::fs::copy(&key, &kept).unwrap();
        if let Some(write) = hooks {
            let (prologue, epilogue) = write(&d);
            d.script("prologue", &prologue);
            d.script("epilogue", &epilogue);
        }
        let hooks = hooks.is_some();
        let mut cluster = Cluster {
            agents: Vec::new(),
            logins: Vec::new(),
            d,
            port,
            key: kept,
            hooks,
        };
        for h in 1..=hosts {
            let mut agent = Agent {
                host: format!("h{h}"),
                child: None,
                ns: if namespaces { NetNs::create() } else { None },
            };
            cluster.spawn(&mut agent);
            cluster.agents.push(agent);
        }
        cluster
    }

    /// Whether the agents run in network namespaces of their own.
    pub fn namespaced(&self) -> bool {
        self.agents.iter().all(|a| a.ns.is_some())
    }

    /// Starts a login node's agent (`--submit-only`) for `host`, in a
    /// network namespace of its own where it can be made; returns its
    /// relay socket once it serves.
    pub fn start_login(&mut self, host: &str) -> PathBuf {
        let mut agent = Agent {
            host: host.to_string(),
            child: None,
            ns: NetNs::create(),
        };
        self.spawn_with(&mut agent, &["--submit-only"]);
        self.logins.push(agent);
        let socket = self.relay_socket(host);
        for _ in 0..600 {
            if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
                return socket;
            }
            // The agent has no event to await but its socket appearing.
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "the login agent of {host} does not serve {}",
            socket.display()
        );
    }

    fn spawn(&self, agent: &mut Agent) {
        self.spawn_with(agent, &[]);
    }

    fn spawn_with(&self, agent: &mut Agent, extra: &[&str]) {
        let label = &agent.host;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.d.root.path().join(format!("agent-{label}.log")))
            .unwrap();
        let mut cmd = match &agent.ns {
            Some(ns) => {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", &ns.name])
                    .arg(bin("qmesh-agent"));
                cmd
            }
            None => Command::new(bin("qmesh-agent")),
        };
        let gateway = agent
            .ns
            .as_ref()
            .map_or("127.0.0.1", |ns| ns.gateway.as_str());
        cmd.arg("--server")
            .arg(format!("https://{gateway}:{}", self.port))
            .arg("--host")
            .arg(label)
            .arg("--spool")
            .arg(self.d.root.path().join(format!("spool-{label}")))
            .arg("--tmpdir-base")
            .arg(self.d.tmpdir_base())
            .arg("--cluster-key-file")
            .arg(&self.key)
            .arg("--relay-socket")
            .arg(self.relay_socket(label));
        cmd.args(extra);
        if self.hooks {
            cmd.arg("--prologue")
                .arg(self.d.work.join("prologue"))
                .arg("--epilogue")
                .arg(self.d.work.join("epilogue"));
            // A checkpoint program, where the hooks wrote one.
            let checkpoint = self.d.work.join("checkpoint");
            if checkpoint.is_file() {
                cmd.arg("--checkpoint").arg(checkpoint);
            }
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start qmesh-agent");
        agent.child = Some(child);
    }

    /// Where the agent of `host` relays that host's commands.
    pub fn relay_socket(&self, host: &str) -> PathBuf {
        self.d.root.path().join(format!("relay-{host}.sock"))
    }

    /// Starts the agent of host `i` (0-based) again, on its old spool.
    pub fn restart_agent(&mut self, i: usize) {
        let mut agent = std::mem::replace(
            &mut self.agents[i],
            Agent {
                host: String::new(),
                child: None,
                ns: None,
            },
        );
        agent.kill9();
        self.spawn(&mut agent);
        self.agents[i] = agent;
    }

    /// Waits until every node of `hosts` shows `state` in pbsnodes.
    pub fn await_nodes(&self, hosts: &[&str], state: &str) {
        for _ in 0..600 {
            let out = self.d.ok("pbsnodes", &["--json"]);
            let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
            let all = doc["nodes"]
                .as_object()
                .unwrap()
                .values()
                .all(|n| !hosts.contains(&n["host"].as_str().unwrap()) || n["state"] == state);
            if all {
                return;
            }
            // Polling the daemon's own view; it has no event to await.
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "the nodes of {hosts:?} are not {state} after 60 s:\n{}",
            self.d.log()
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.d.test_over();
        for agent in self.agents.iter_mut().chain(self.logins.iter_mut()) {
            agent.stop();
        }
    }
}

/// Reads `n` lines from a FIFO that several processes write at different
/// times (each open and close is one writer). The FIFO is held open for
/// writing too, so that it never reads as ended between two writers: a
/// reader that closed and opened again would lose what a writer wrote in
/// between.
pub(crate) fn read_lines(d: &Daemon, path: &Path, n: usize) -> Vec<String> {
    let path = path.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = Vec::new();
        if let Ok(fifo) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
        {
            let mut reader = std::io::BufReader::new(fifo);
            while lines.len() < n {
                let mut line = String::new();
                match std::io::BufRead::read_line(&mut reader, &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => lines.push(line.trim_end_matches('\n').to_string()),
                }
            }
        }
        let _ = tx.send(lines);
    });
    rx.recv_timeout(Duration::from_secs(120))
        .unwrap_or_else(|_| {
            panic!(
                "fewer than {n} lines came through the FIFO in 120 s:\n{}",
                d.log()
            )
        })
}

#[test]
fn a_job_spanning_three_hosts_runs_once_with_every_node_in_its_node_file() {
    let write = |d: &Daemon| {
        let hooks = d.work.join("hooks.log");
        let epilogues = d.work.join("epilogues");
        (
            format!(
                "#!/bin/sh\necho \"pro $1 $QMESH_NODES\" >> {}\n",
                hooks.display()
            ),
            format!(
                "#!/bin/sh\necho \"epi $1 $QMESH_NODES\" > {}\n",
                epilogues.display()
            ),
        )
    };
    let c = Cluster::start(3, 2, 30, Some(&write));
    let d = &c.d;
    let hooks = d.work.join("hooks.log");
    let epilogues = d.fifo("epilogues");
    c.await_nodes(&["h1", "h2", "h3"], "free");
    d.script(
        "span.sh",
        &format!(
            "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho job >> {hooks}\necho $QMESH_JOBID >> runs.log\ncat $QMESH_NODEFILE\n\
             grep -o 'qa[0-9]*' /proc/self/net/dev || echo shared-network\n",
            hooks = hooks.display()
        ),
    );
    let id = d.qsub(&["-lP", "6", "span.sh"]);
    // The epilogues write to a FIFO: read them first, since the launching
    // host's runs before the job's end is reported (PBS: the job stays in
    // E until its epilogue is done).
    let mut epi = read_lines(d, &epilogues, 3);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}\n{}", d.log());
    let seq = id.split('.').next().unwrap();
    let out = std::fs::read_to_string(d.work.join(format!("span.sh.o{seq}"))).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..6],
        ["h1a", "h1b", "h2a", "h2b", "h3a", "h3b"],
        "{out}"
    );
    if c.namespaced() {
        // The script ran in the first host's namespace, not the test's.
        assert!(lines[6].starts_with("qa"), "{out}");
    }
    let runs = std::fs::read_to_string(d.work.join("runs.log")).unwrap();
    assert_eq!(runs.lines().collect::<Vec<_>>(), [id.as_str()], "ran once");
    // Every host ran the prologue before the job, once, with its own
    // nodes; the launching host's shepherd ran it last, just before the
    // script. Every host ran the epilogue after.
    epi.sort();
    assert_eq!(
        epi,
        [
            format!("epi {id} h1a,h1b"),
            format!("epi {id} h2a,h2b"),
            format!("epi {id} h3a,h3b")
        ]
    );
    let order = std::fs::read_to_string(&hooks).unwrap();
    let order: Vec<&str> = order.lines().collect();
    assert_eq!(order.len(), 4, "{order:?}");
    assert_eq!(
        order[2..],
        [format!("pro {id} h1a,h1b").as_str(), "job"],
        "{order:?}"
    );
    let mut pro = order[..2].to_vec();
    pro.sort();
    assert_eq!(
        pro,
        [format!("pro {id} h2a,h2b"), format!("pro {id} h3a,h3b")]
    );
}

#[test]
fn a_failing_prologue_fails_the_job_with_its_words_and_the_nodes_stay_up() {
    let write = |_: &Daemon| {
        (
            "#!/bin/sh\necho 'scratch is not mounted' >&2\nexit 1\n".to_string(),
            "#!/bin/sh\nexit 0\n".to_string(),
        )
    };
    let c = Cluster::start(2, 1, 30, Some(&write));
    let d = &c.d;
    c.await_nodes(&["h1", "h2"], "free");
    d.script(
        "never.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho ran > ran\n",
    );
    let id = d.qsub(&["-lP", "2", "-r", "n", "never.sh"]);
    let info = d.wait_job(&id);
    assert!(
        info.comment.contains("the prologue on h2 failed")
            && info.comment.contains("scratch is not mounted"),
        "{info:?}"
    );
    assert!(!d.work.join("ran").exists(), "the script must not run");
    // One job's failure does not take the nodes out.
    let listed = d.ok("pbsnodes", &["-l"]);
    assert_eq!(listed, "", "{listed}");
}

#[test]
fn a_killed_agent_takes_its_nodes_down_and_its_job_runs_again_elsewhere() {
    let mut c = Cluster::start(3, 2, 3, None);
    c.await_nodes(&["h1", "h2", "h3"], "free");
    let started = c.d.fifo("started");
    c.d.script(
        "again.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho \"$(head -1 $QMESH_NODEFILE) $(tail -1 $QMESH_NODEFILE)\" > started\nsleep 300\n",
    );
    // Four nodes: h1 launches it, h2 joins it.
    let id = c.d.qsub(&["-lP", "4", "again.sh"]);
    assert_eq!(c.d.read_fifo(&started).trim(), "h1a h2b");
    c.agents[1].kill9();
    // Three seconds later h2 is given up: the job is killed on h1 and
    // queued again; it runs on h1 and h3.
    assert_eq!(c.d.read_fifo(&started).trim(), "h1a h3b");
    let job = c.d.job_json(&id);
    assert_eq!(job["run_count"], 2, "{job}");
    let listed = c.d.ok("pbsnodes", &["-l"]);
    assert!(
        listed.contains("h2a") && listed.contains("down"),
        "{listed}"
    );
    let log = c.d.log();
    assert!(log.contains("host h2 was lost"), "{log}");
    c.d.ok("qdel", &[&id]);
    c.d.wait_job(&id);

    // Not rerunnable: it fails, and says why.
    let once = c.d.qsub(&["-lP", "4", "-r", "n", "again.sh"]);
    assert_eq!(c.d.read_fifo(&started).trim(), "h1a h3b");
    c.agents[2].kill9();
    let info = c.d.wait_job(&once);
    assert!(info.comment.contains("host h3 was lost"), "{info:?}");
    let job = c.d.job_json(&once);
    assert_eq!(job["run_count"], 1, "{job}");
}

/// A host given up while its job still ran there (its agent hung, not
/// died): the job is queued again, but its old run must end before the
/// host gets it again, and that old run's end must not end the new run.
#[test]
fn a_hung_host_s_old_run_ends_before_the_job_runs_there_again() {
    let c = Cluster::start(1, 1, 3, None);
    c.await_nodes(&["h1"], "free");
    let started = c.d.fifo("started");
    let go = c.d.fifo("go");
    c.d.script(
        "hang.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho up > started\nread x < go\nexit 0\n",
    );
    let id = c.d.qsub(&["-r", "y", "hang.sh"]);
    assert_eq!(c.d.read_fifo(&started).trim(), "up");
    c.agents[0].freeze(true);
    // Three missed heartbeats, then three seconds away: given up, queued.
    c.await_nodes(&["h1"], "down");
    for tries in 0.. {
        // The daemon's own view; there is no event to await.
        if c.d.job_json(&id)["job_state"] == "Q" {
            break;
        }
        assert!(tries < 600, "not queued again after 60 s:\n{}", c.d.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    c.agents[0].freeze(false);
    // The agent comes back still running the old run: it is killed, its
    // end ends nothing, and only then does the job run there again.
    assert_eq!(c.d.read_fifo(&started).trim(), "up");
    let log = c.d.log();
    assert!(log.contains("the old run's end is in"), "{log}");
    c.d.write_fifo(&go, "go\n");
    let info = c.d.wait_job(&id);
    assert_eq!(
        info.exit_status,
        Some(0),
        "the second run's own end: {info:?}"
    );
    let job = c.d.job_json(&id);
    assert_eq!(job["run_count"], 2, "{job}");
}

#[test]
fn an_agent_restarted_during_a_job_finds_it_again() {
    let mut c = Cluster::start(2, 1, 30, None);
    c.await_nodes(&["h1", "h2"], "free");
    let started = c.d.fifo("started");
    let go = c.d.fifo("go");
    c.d.script(
        "wait.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho up > started\nread x < go\nexit 5\n",
    );
    let id = c.d.qsub(&["-lP", "2", "wait.sh"]);
    c.d.read_fifo(&started);
    let before = c.agents[0].pid();
    c.restart_agent(0);
    c.restart_agent(1);
    assert_ne!(before, c.agents[0].pid());
    c.await_nodes(&["h1", "h2"], "job-busy");
    c.d.write_fifo(&go, "go\n");
    let info = c.d.wait_job(&id);
    assert_eq!(info.exit_status, Some(5), "{info:?}");
    let job = c.d.job_json(&id);
    assert_eq!(job["run_count"], 1, "not run again: {job}");
}
