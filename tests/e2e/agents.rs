//! Agents on other hosts: they enrol with the daemon's cluster CA by
//! proving the cluster key, connect over TLS, and their nodes take jobs.

use std::process::{Child, Command, Stdio};

use crate::harness::{Daemon, bin};

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A qmesh-agent for `host`; `label` names its spool and log.
/// A clean stop of an agent (SIGTERM), in which it removes its level of
/// the cgroup hierarchy; SIGKILL after 5 s.
pub(crate) fn stop_agent(child: &mut Child) {
    crate::harness::signal(child.id(), nix::sys::signal::Signal::SIGTERM);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    // Polled: std has no wait with a time limit.
    while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

pub(crate) fn agent(
    d: &Daemon,
    port: u16,
    host: &str,
    key_file: &std::path::Path,
    label: &str,
) -> Child {
    agent_with(d, port, host, key_file, label, &[])
}

/// [`agent`] with more options.
pub(crate) fn agent_with(
    d: &Daemon,
    port: u16,
    host: &str,
    key_file: &std::path::Path,
    label: &str,
    extra: &[&str],
) -> Child {
    let server = format!("https://127.0.0.1:{port}");
    agent_at(d, &server, host, key_file, label, extra)
}

/// [`agent_with`] reaching the daemon at `server` (a URL).
pub(crate) fn agent_at(
    d: &Daemon,
    server: &str,
    host: &str,
    key_file: &std::path::Path,
    label: &str,
    extra: &[&str],
) -> Child {
    let log = std::fs::File::create(d.root.path().join(format!("agent-{label}.log"))).unwrap();
    let mut cmd = Command::new(bin("qmesh-agent"));
    // Its own relay socket: never the system's, which a test must not take.
    if !extra
        .iter()
        .any(|a| *a == "--relay-socket" || *a == "--no-relay")
    {
        cmd.arg("--relay-socket")
            .arg(d.root.path().join(format!("relay-{label}.sock")));
    }
    cmd.arg("--server")
        .arg(server)
        .arg("--host")
        .arg(host)
        .arg("--spool")
        .arg(d.root.path().join(format!("spool-{label}")))
        .arg("--tmpdir-base")
        .arg(d.tmpdir_base())
        .arg("--cluster-key-file")
        .arg(key_file)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start qmesh-agent")
}

/// A daemon's configuration with agents on TCP at `port` presenting the
/// key in `key`, `agents` more lines of its [agents], and one queue
/// `remote` over the set `r`: nodes r00 and r01 on host remote1.
pub(crate) fn remote_config(port: u16, key: &std::path::Path, agents: &str) -> String {
    format!(
        r#"
[agents]
listen = "127.0.0.1:{port}"
heartbeat_secs = 1
cluster_key_file = "{key}"
{agents}
[server]
default_queue = "remote"

[[queue]]
name = "remote"
node_sets = ["r"]

[[node_set]]
name = "r"
count = 2
host = "remote1"
"#,
        key = key.display()
    )
}

#[test]
fn a_remote_agent_with_the_cluster_key_runs_jobs_on_its_nodes() {
    let port = free_port();
    // The key file must exist before the daemon reads its configuration.
    let keydir = tempfile::tempdir().unwrap();
    let key = keydir.path().join("cluster.key");
    std::fs::write(&key, "s3cret-key\n").unwrap();
    let config = remote_config(port, &key, "");
    let mut d = Daemon::start_with(Some(&config));
    d.allowed_errors.push("cluster key".into());

    let wrong = keydir.path().join("wrong.key");
    std::fs::write(&wrong, "guess").unwrap();
    let mut impostor = agent(&d, port, "remote1", &wrong, "impostor");

    d.script("where.sh", "#!/bin/sh\ncat $PBS_NODEFILE\n");
    let id = d.qsub(&["-lP", "2", "where.sh"]);
    let job = d.job_json(&id);
    assert_eq!(job["job_state"], "Q", "no agent yet: {job}");
    assert_eq!(job["reason"], "NodesDown", "{job}");

    let mut real = agent(&d, port, "remote1", &key, "real");
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}");
    let seq = id.split('.').next().unwrap();
    let nodes = std::fs::read_to_string(d.work.join(format!("where.sh.o{seq}"))).unwrap();
    assert_eq!(nodes, "r00\nr01\n");
    let log = d.log();
    assert!(
        log.contains("wrong cluster key"),
        "the impostor was not refused:\n{log}"
    );

    for child in [&mut impostor, &mut real] {
        stop_agent(child);
    }
    d.stop();
}

#[test]
fn a_feature_an_agent_reports_takes_the_jobs_that_ask_for_it() {
    let port = free_port();
    let keydir = tempfile::tempdir().unwrap();
    let key = keydir.path().join("cluster.key");
    std::fs::write(&key, "k\n").unwrap();
    let config = format!(
        r#"
[agents]
listen = "127.0.0.1:{port}"
heartbeat_secs = 1
cluster_key_file = "{key}"

[server]
default_queue = "remote"

[[queue]]
name = "remote"
node_sets = ["plain", "licensed"]

[[node_set]]
name = "plain"
nodes = ["p1"]
host = "hp"

[[node_set]]
name = "licensed"
nodes = ["l1"]
host = "hl"
"#,
        key = key.display()
    );
    let mut d = Daemon::start_with(Some(&config));
    let mut plain = agent(&d, port, "hp", &key, "plain");
    let mut licensed = agent_with(
        &d,
        port,
        "hl",
        &key,
        "licensed",
        &["--features", "imsl,nag"],
    );
    d.await_node_state("p1", "free");
    d.await_node_state("l1", "free");

    d.script("where.sh", "#!/bin/sh\ncat $PBS_NODEFILE\n");
    let id = d.qsub(&["-l", "feature=imsl", "where.sh"]);
    assert_eq!(d.wait_job(&id).exit_status, Some(0));
    assert_eq!(
        d.exec_nodes(&id),
        vec!["l1"],
        "the node of the host that has it"
    );
    let out = d.run("qsub", &["-l", "feature=matlab", "where.sh"]);
    assert!(!out.status.success(), "no host has matlab");
    let said = crate::harness::stderr(&out);
    assert!(said.contains("matlab"), "{said}");
    let node = d.ok("pbsnodes", &["l1"]);
    assert!(node.contains("properties = imsl,nag"), "{node}");

    for child in [&mut plain, &mut licensed] {
        stop_agent(child);
    }
    d.stop();
}
