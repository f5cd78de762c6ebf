//! A job's processes besides its script: what pbsdsh starts on the job's
//! nodes, and the terminal of an interactive job (qsub -I).
//!
//! The daemon sends a StartTask with a token; the agent opens
//! `Agent.Attach` on its own authenticated channel, names the token, and
//! wires the process to it: output out as frames, input (and window
//! sizes, signals) in. A pbsdsh task runs as the job's owner in a session
//! of its own, registered under the job, so it is signalled with the job
//! (qsig) and killed when the job ends or leaves this host (qdel, wall
//! clock). An interactive job's shell is the job itself (the
//! `pty-bridge` its script execs): the agent only connects to the
//! bridge's socket, after checking that the job's owner serves it.

use std::collections::HashMap;
use std::ffi::CString;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::{Gid, Pid, Uid, User};
use qmesh_proto::v1;
use qmesh_proto::v1::agent_client::AgentClient;
use qmesh_proto::v1::task_frame::Kind;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::pty_bridge::frame;

/// How long an interactive job's bridge may take to come up.
const BRIDGE_WAIT: Duration = Duration::from_secs(30);

/// Between SIGTERM and SIGKILL for a task whose job ended.
const TASK_KILL_GRACE: Duration = Duration::from_secs(5);

/// The abstract socket an interactive job's bridge serves: named after
/// the job and this agent's spool, so two agents on one network namespace
/// (tests, a host serving two names) never share one, and an agent
/// restarted on the same spool finds its jobs' terminals again.
pub fn bridge_name(spool_root: &std::path::Path, job: u64) -> String {
    // FNV-1a: short, stable across restarts and builds.
    let tag = spool_root
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("qmesh-pty-{tag:016x}-{job}")
}

/// The script of an interactive job: the bridge, as the job.
pub fn interactive_script(spool_root: &std::path::Path, job: u64) -> Vec<u8> {
    let agent = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "qmesh-agent".into());
    let uid = nix::unistd::geteuid().as_raw();
    format!(
        "#!/bin/sh\nexec '{agent}' pty-bridge '{}' --agent-uid {uid}\n",
        bridge_name(spool_root, job)
    )
    .into_bytes()
}

/// The pbsdsh tasks running on this host, by job: their session ids.
#[derive(Clone)]
pub struct Tasks {
    running: Arc<Mutex<HashMap<u64, Vec<Pid>>>>,
    /// This agent's spool, which interactive jobs' bridges are named by.
    spool_root: Arc<std::path::Path>,
    /// Where jobs' cgroups are: a task joins its job's.
    cgroups: Option<crate::record::Cgroups>,
}

impl Tasks {
    pub fn new(spool_root: &std::path::Path) -> Tasks {
        Tasks {
            running: Arc::default(),
            spool_root: spool_root.into(),
            cgroups: None,
        }
    }

    /// Tasks join their job's cgroup under `cgroups`.
    pub fn with_cgroups(mut self, cgroups: Option<crate::record::Cgroups>) -> Tasks {
        self.cgroups = cgroups;
        self
    }

    /// `cgroup.procs` of the job's cgroup here, if it has one, for a task
    /// to join (so that it is held, measured and killed with the job).
    fn cgroup_procs(&self, job_id: &str) -> Vec<std::os::fd::OwnedFd> {
        let Some(cgroups) = &self.cgroups else {
            return Vec::new();
        };
        let cgroup = crate::cgroup::job::JobCgroup::of(cgroups, job_id);
        if !cgroup.exists() {
            return Vec::new();
        }
        cgroup.procs_files().unwrap_or_else(|e| {
            warn!("the task runs outside its job's cgroup: {e}");
            Vec::new()
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Vec<Pid>>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn add(&self, job: u64, pid: Pid) {
        self.lock().entry(job).or_default().push(pid);
    }

    fn remove(&self, job: u64, pid: Pid) {
        let mut running = self.lock();
        if let Some(pids) = running.get_mut(&job) {
            pids.retain(|p| *p != pid);
            if pids.is_empty() {
                running.remove(&job);
            }
        }
    }

    /// Signals every task of `job` here (qsig).
    pub fn signal_job(&self, job: u64, sig: Signal) {
        for pid in self.lock().get(&job).cloned().unwrap_or_default() {
            let _ = killpg(pid, sig);
        }
    }

    /// The job ended or left this host: its tasks go too, SIGTERM first,
    /// then SIGKILL to what is left.
    pub fn end_job(&self, job: u64) {
        let Some(pids) = self.lock().remove(&job) else {
            return;
        };
        info!(job, tasks = pids.len(), "the job ended: killing its tasks");
        for &pid in &pids {
            let _ = killpg(pid, Signal::SIGTERM);
            let _ = killpg(pid, Signal::SIGCONT);
        }
        tokio::spawn(async move {
            tokio::time::sleep(TASK_KILL_GRACE).await;
            for pid in pids {
                let _ = killpg(pid, Signal::SIGKILL);
            }
        });
    }

    /// Starts the task the daemon ordered, in the background.
    pub fn start(&self, order: v1::StartTask, channel: Channel) {
        let tasks = self.clone();
        let spool_root = self.spool_root.clone();
        let span = info_span!("task", job = order.job, task = order.task_number);
        tokio::spawn(
            async move {
                let (tx, rx) = mpsc::channel(64);
                let _ = tx.send(frame_of(Kind::Token(order.token.clone()))).await;
                let mut client = AgentClient::new(channel);
                let mut inbound = match client.attach(ReceiverStream::new(rx)).await {
                    Ok(response) => response.into_inner(),
                    Err(status) => {
                        warn!(error = %status, "the daemon refused the task's stream");
                        return;
                    }
                };
                let outcome = if order.interactive {
                    attach_terminal(&spool_root, &order, &mut inbound, &tx).await
                } else {
                    run_command(&tasks, &order, &mut inbound, &tx).await
                };
                if let Err(why) = outcome {
                    warn!("{why}");
                    let _ = tx.send(frame_of(Kind::Error(why))).await;
                }
                // Our side ends cleanly; the daemon's ends once it has
                // passed on the last frame. Dropping the call before that
                // would reset the stream and lose what is still in flight.
                drop(tx);
                let drained = async { while let Ok(Some(_)) = inbound.message().await {} };
                let _ = tokio::time::timeout(Duration::from_secs(10), drained).await;
            }
            .instrument(span),
        );
    }
}

fn frame_of(kind: Kind) -> v1::TaskFrame {
    v1::TaskFrame { kind: Some(kind) }
}

/// Forwards what `pipe` says as frames made by `make`.
async fn pump_output(
    mut pipe: impl AsyncRead + Unpin,
    tx: mpsc::Sender<v1::TaskFrame>,
    make: fn(Vec<u8>) -> Kind,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if tx.send(frame_of(make(buf[..n].to_vec()))).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// A pbsdsh task: the command as the job's owner, its output to the
/// caller, its exit status last.
async fn run_command(
    tasks: &Tasks,
    order: &v1::StartTask,
    inbound: &mut tonic::Streaming<v1::TaskFrame>,
    tx: &mpsc::Sender<v1::TaskFrame>,
) -> Result<(), String> {
    let Some(program) = order.argv.first() else {
        return Err("pbsdsh gave no command to run".into());
    };
    let user = User::from_uid(Uid::from_raw(order.uid))
        .ok()
        .flatten()
        .ok_or_else(|| {
            format!(
                "user {} (uid {}) does not exist on this host; the job's owner needs an account on every node",
                order.user, order.uid
            )
        })?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(&order.argv[1..])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    for e in &order.env {
        if !e.name.is_empty() && !e.name.contains(['=', '\0']) && !e.value.contains('\0') {
            cmd.env(&e.name, &e.value);
        }
    }
    let node_index = order.node_index.to_string();
    cmd.env("HOME", &user.dir)
        .env("USER", &user.name)
        .env("LOGNAME", &user.name)
        .env("PBS_JOBID", &order.job_id)
        .env("QMESH_JOBID", &order.job_id)
        .env("PBS_NODENUM", &node_index)
        .env("PBS_VNODENUM", &node_index)
        .env("PBS_TASKNUM", order.task_number.to_string())
        .env("PBS_O_WORKDIR", &order.workdir);
    if !order.env.iter().any(|e| e.name == "PATH") {
        cmd.env("PATH", crate::env::DEFAULT_PATH);
    }
    let workdir = std::path::Path::new(if order.cwd.is_empty() {
        &order.workdir
    } else {
        &order.cwd
    });
    cmd.current_dir(if workdir.is_dir() {
        workdir
    } else {
        user.dir.as_path()
    });
    let name = CString::new(user.name.clone()).map_err(|_| "a user name with NUL".to_string())?;
    let (uid, gid) = (Uid::from_raw(order.uid), Gid::from_raw(order.gid));
    let cgroup_procs = tasks.cgroup_procs(&order.job_id);
    let join = crate::cgroup::job::raw(&cgroup_procs);
    // SAFETY: between fork and exec only async-signal-safe calls: write
    // (to join the cgroup), setsid, initgroups, setgid, setuid (the
    // CString and the descriptors were made before the fork).
    unsafe {
        cmd.pre_exec(move || {
            crate::cgroup::job::join(&join)?;
            nix::unistd::setsid()?;
            nix::unistd::initgroups(&name, gid)?;
            nix::unistd::setgid(gid)?;
            nix::unistd::setuid(uid)?;
            Ok(())
        });
    }
    let spawned = cmd.spawn();
    drop(cgroup_procs);
    let mut child =
        spawned.map_err(|e| format!("cannot start {program} as {}: {e}", order.user))?;
    let pid = Pid::from_raw(child.id().unwrap_or_default() as i32);
    tasks.add(order.job, pid);
    info!(pid = pid.as_raw(), program, node = %order.node, "task started");
    let (out_tx, mut out_rx) = mpsc::channel(64);
    let stdout = child
        .stdout
        .take()
        .map(|p| tokio::spawn(pump_output(p, out_tx.clone(), Kind::Stdout)));
    let stderr = child
        .stderr
        .take()
        .map(|p| tokio::spawn(pump_output(p, out_tx.clone(), Kind::Stderr)));
    drop(out_tx);
    let mut output_open = true;
    let mut caller_open = true;
    let status = loop {
        tokio::select! {
            out = out_rx.recv(), if output_open => match out {
                Some(f) => { let _ = tx.send(f).await; }
                None => output_open = false,
            },
            from = inbound.message(), if caller_open => match from {
                Ok(Some(v1::TaskFrame { kind: Some(Kind::Signal(sig)) })) => {
                    if let Ok(sig) = Signal::try_from(sig) {
                        let _ = killpg(pid, sig);
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => caller_open = false,
            },
            status = child.wait(), if !output_open => break status,
        }
    };
    tasks.remove(order.job, pid);
    for pump in [stdout, stderr].into_iter().flatten() {
        let _ = pump.await;
    }
    let code = match status {
        Ok(s) => {
            use std::os::unix::process::ExitStatusExt;
            s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
        }
        Err(e) => return Err(format!("lost the task {program}: {e}")),
    };
    debug!(code, "task ended");
    let _ = tx.send(frame_of(Kind::Exit(code))).await;
    Ok(())
}

/// The interactive job's terminal: the bridge's socket, wired to the
/// caller frame by frame.
async fn attach_terminal(
    spool_root: &std::path::Path,
    order: &v1::StartTask,
    inbound: &mut tonic::Streaming<v1::TaskFrame>,
    tx: &mpsc::Sender<v1::TaskFrame>,
) -> Result<(), String> {
    let stream = connect_bridge(spool_root, order).await?;
    let (mut from_bridge, mut to_bridge) = stream.into_split();
    if let Some(w) = order.window {
        let _ = to_bridge.write_all(&window_frame(w)).await;
    }
    let mut decoder = frame::Decoder::default();
    let mut buf = vec![0u8; 16 * 1024];
    let mut caller_open = true;
    loop {
        tokio::select! {
            read = from_bridge.read(&mut buf) => {
                let n = match read {
                    Ok(0) | Err(_) => return Err(format!(
                        "the terminal of job {} closed without an exit status", order.job_id
                    )),
                    Ok(n) => n,
                };
                decoder.push(&buf[..n]);
                loop {
                    match decoder.next() {
                        Ok(Some((frame::DATA, bytes))) => {
                            let _ = tx.send(frame_of(Kind::Stdout(bytes))).await;
                        }
                        Ok(Some((frame::EXIT, bytes))) => {
                            let code = frame::parse_i32(&bytes).unwrap_or(0);
                            let _ = tx.send(frame_of(Kind::Exit(code))).await;
                            return Ok(());
                        }
                        Ok(Some(_)) => {}
                        Ok(None) => break,
                        Err(e) => return Err(format!("the terminal of job {} spoke nonsense: {e}", order.job_id)),
                    }
                }
            }
            from = inbound.message(), if caller_open => {
                let bytes = match from {
                    Ok(Some(v1::TaskFrame { kind: Some(Kind::Stdin(data)) })) => frame::encode(frame::DATA, &data),
                    Ok(Some(v1::TaskFrame { kind: Some(Kind::Window(w)) })) => window_frame(w),
                    Ok(Some(v1::TaskFrame { kind: Some(Kind::Signal(sig)) })) => frame::signal(sig),
                    Ok(Some(_)) => continue,
                    Ok(None) | Err(_) => {
                        // The caller left: the daemon deletes the job.
                        caller_open = false;
                        continue;
                    }
                };
                if to_bridge.write_all(&bytes).await.is_err() {
                    return Err(format!("the terminal of job {} has gone", order.job_id));
                }
            }
        }
    }
}

fn window_frame(w: v1::WindowSize) -> Vec<u8> {
    let clamp = |v: u32| u16::try_from(v).unwrap_or(u16::MAX);
    frame::window(clamp(w.rows), clamp(w.cols))
}

/// Connects to the job's bridge once it serves, and checks that the
/// job's owner is the one serving it (nobody else may catch a terminal).
async fn connect_bridge(
    spool_root: &std::path::Path,
    order: &v1::StartTask,
) -> Result<tokio::net::UnixStream, String> {
    use std::os::linux::net::SocketAddrExt;
    let name = bridge_name(spool_root, order.job);
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
        .map_err(|e| format!("bad terminal socket name {name}: {e}"))?;
    let deadline = tokio::time::Instant::now() + BRIDGE_WAIT;
    loop {
        match std::os::unix::net::UnixStream::connect_addr(&addr) {
            Ok(stream) => {
                stream
                    .set_nonblocking(true)
                    .map_err(|e| format!("terminal socket: {e}"))?;
                let stream = tokio::net::UnixStream::from_std(stream)
                    .map_err(|e| format!("terminal socket: {e}"))?;
                let cred = stream
                    .peer_cred()
                    .map_err(|e| format!("terminal socket credentials: {e}"))?;
                if cred.uid() != order.uid {
                    return Err(format!(
                        "the terminal socket of job {} is served by uid {}, not the job's owner {}; refused",
                        order.job_id,
                        cred.uid(),
                        order.uid
                    ));
                }
                return Ok(stream);
            }
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(format!(
                    "the terminal of job {} did not come up within {} s ({e}); see the job's error file",
                    order.job_id,
                    BRIDGE_WAIT.as_secs()
                ));
            }
            // The job is starting: its bridge binds in a moment.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn bridges_are_named_per_spool_and_job_and_fit_a_socket_name() {
        let a = bridge_name(Path::new("/var/spool/qmesh"), 12);
        assert_eq!(a, bridge_name(Path::new("/var/spool/qmesh"), 12));
        assert_ne!(a, bridge_name(Path::new("/var/spool/qmesh2"), 12));
        assert_ne!(a, bridge_name(Path::new("/var/spool/qmesh"), 13));
        assert!(a.len() < 107, "{a}");
        let script = String::from_utf8(interactive_script(Path::new("/s"), 7)).unwrap();
        assert!(
            script.contains(&bridge_name(Path::new("/s"), 7)),
            "{script}"
        );
    }
}
