//! A private etcd cluster for tests and benchmarks: N members of the
//! distribution's `etcd` on loopback ports of their own, each with its own
//! data directory under a directory the caller owns. Members can be killed
//! and started again. Nothing here is used by the daemon.
//!
//! The `etcd` binary is `$QMESH_ETCD`, or `etcd` on the PATH
//! (`.ci/run` installs the `etcd-server` package when it is missing).
//! Without it, a test fails with what to do, unless `QMESH_SKIP_ETCD=1`
//! says to skip ([`Cluster::skipped`]).
//!
//! Each member runs under a small shell that kills it when its standard
//! input closes: a test binary that keeps its cluster in a static (never
//! dropped) leaves no etcd behind when it exits, however it exits.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Client, Options};

/// One member: its ports and, while it runs, its process.
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

/// A running cluster; dropping it kills every member.
pub struct Cluster {
    dir: PathBuf,
    binary: PathBuf,
    members: Vec<Member>,
    initial: String,
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The etcd binary, or why there is none.
pub fn etcd_binary() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("QMESH_ETCD") {
        return Ok(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join("etcd");
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(
        "etcd is not installed: install the distribution's etcd-server package \
         (.ci/run does: apt-get install etcd-server) or point QMESH_ETCD at an etcd binary; \
         QMESH_SKIP_ETCD=1 skips these tests"
            .into(),
    )
}

impl Cluster {
    /// Whether the etcd tests are to be skipped (`QMESH_SKIP_ETCD=1`),
    /// said on stderr.
    pub fn skipped() -> bool {
        let skip = std::env::var_os("QMESH_SKIP_ETCD").is_some_and(|v| v == "1");
        if skip {
            eprintln!("skipped: QMESH_SKIP_ETCD=1");
        }
        skip
    }

    /// Starts `n` members under `dir` and waits until the cluster commits.
    pub fn start(dir: &Path, n: usize) -> Result<Cluster, String> {
        let binary = etcd_binary()?;
        std::fs::create_dir_all(dir).map_err(|e| format!("make {}: {e}", dir.display()))?;
        let mut members = Vec::new();
        for i in 0..n {
            members.push(Member {
                name: format!("m{i}"),
                client_port: free_port().map_err(|e| e.to_string())?,
                peer_port: free_port().map_err(|e| e.to_string())?,
                child: None,
            });
        }
        let initial = members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer_port))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = Cluster {
            dir: dir.to_path_buf(),
            binary,
            members,
            initial,
        };
        for i in 0..n {
            cluster.start_member(i)?;
        }
        cluster.wait_until_it_commits(Duration::from_secs(60))?;
        Ok(cluster)
    }

    /// Starts member `i` (again); one that runs is left alone.
    pub fn start_member(&mut self, i: usize) -> Result<(), String> {
        if self.members[i].child.is_some() {
            return Ok(());
        }
        let m = &self.members[i];
        let data = self.dir.join(&m.name);
        let log = std::fs::File::create(self.dir.join(format!("{}.log", m.name)))
            .map_err(|e| e.to_string())?;
        let client = format!("http://127.0.0.1:{}", m.client_port);
        let peer = format!("http://127.0.0.1:{}", m.peer_port);
        // `sh -c 'etcd ARGS & wait for a line or stdin to close; kill etcd'`.
        // Its data (a few hundred MB of preallocated log) goes with it unless
        // the line was "keep" (`kill_member`, to start it again): a cluster
        // kept in a static for a whole test binary is never dropped, and
        // its members die only when the binary's exit closes their input.
        let child = Command::new("sh")
            .arg("-c")
            .arg(
                "\"$0\" \"$@\" & pid=$!; read -r keep; kill -9 $pid; wait $pid; \
                 [ \"$keep\" = keep ] || rm -rf \"$QMESH_ETCD_DATA\"",
            )
            .env("QMESH_ETCD_DATA", &data)
            .arg(&self.binary)
            .arg("--name")
            .arg(&m.name)
            .arg("--data-dir")
            .arg(&data)
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &self.initial])
            .args(["--initial-cluster-token", "qmesh-test"])
            .args(["--initial-cluster-state", "new"])
            .args(["--logger", "zap", "--log-level", "warn"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("start {}: {e}", self.binary.display()))?;
        self.members[i].child = Some(child);
        Ok(())
    }

    /// Kills member `i` (SIGKILL) and waits for it to be gone.
    pub fn kill_member(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            // Its shell kills it, keeping its data for a restart.
            if let Some(mut input) = child.stdin.take() {
                let _ = std::io::Write::write_all(&mut input, b"keep\n");
            }
            let _ = child.wait();
        }
    }

    /// The number of members, running or not.
    pub fn members(&self) -> usize {
        self.members.len()
    }

    /// Which running member is etcd's raft leader now, if one says so
    /// (each is asked its status; one that does not answer within a
    /// second is left out). Tests kill it to make etcd elect again.
    pub fn raft_leader(&self) -> Option<usize> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        runtime.block_on(async {
            for (at, endpoint) in self.endpoints().into_iter().enumerate() {
                if self.members[at].child.is_none() {
                    continue;
                }
                let Ok(channel) = tonic::transport::Endpoint::from_shared(endpoint) else {
                    continue;
                };
                let Ok(Ok(channel)) =
                    tokio::time::timeout(Duration::from_secs(1), channel.connect()).await
                else {
                    continue;
                };
                let mut m = crate::pb::maintenance_client::MaintenanceClient::new(channel);
                let status = tokio::time::timeout(
                    Duration::from_secs(1),
                    m.status(crate::pb::StatusRequest {}),
                )
                .await;
                if let Ok(Ok(a)) = status {
                    let a = a.into_inner();
                    if a.header.is_some_and(|h| h.member_id == a.leader) {
                        return Some(at);
                    }
                }
            }
            None
        })
    }

    /// The client URLs of every member, running or not.
    pub fn endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("http://127.0.0.1:{}", m.client_port))
            .collect()
    }

    /// A client of the whole cluster (in a tokio runtime).
    pub fn client(&self) -> Client {
        match Client::new(Options::new(self.endpoints())) {
            Ok(c) => c,
            // Only an empty list fails, and a cluster has members.
            Err(e) => panic!("{e}"),
        }
    }

    /// Waits until a write commits (a majority runs and has a leader).
    pub fn wait_until_it_commits(&self, within: Duration) -> Result<(), String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let deadline = Instant::now() + within;
        runtime.block_on(async {
            let client = self.client();
            loop {
                let put = crate::pb::TxnRequest {
                    success: vec![crate::pb::RequestOp {
                        request: Some(crate::pb::request_op::Request::RequestPut(
                            crate::pb::PutRequest {
                                key: b"/qmesh-test/ready".to_vec(),
                                value: b"1".to_vec(),
                                ..Default::default()
                            },
                        )),
                    }],
                    ..Default::default()
                };
                match client.txn(put).await {
                    Ok(_) => return Ok(()),
                    Err(e) if Instant::now() > deadline => {
                        return Err(format!(
                            "etcd did not commit within {} s: {e}; see the members' logs in {}",
                            within.as_secs(),
                            self.dir.display()
                        ));
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill_member(i);
        }
    }
}
