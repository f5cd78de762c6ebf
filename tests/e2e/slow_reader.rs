//! Load: clients that stop reading their answers, and many callers at
//! once. The scheduler task builds every answer and hands it to the
//! caller's connection without waiting; a caller that never reads holds
//! only its own connection. Here a qsub'd job still runs to its end and
//! qstat still answers while listings sit unread, and 200 callers with 4
//! submitters at once are all answered. (Speed under load is measured by
//! `qmesh-bench load`, docs/PERFORMANCE.md, not asserted here.)

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use qmesh_proto::v1;
use qmesh_proto::v1::jobs_client::JobsClient;

use crate::harness::Daemon;

/// `qstat -x`'s Status request, encoded by hand (include_finished = 3,
/// report_refused = 7).
const EVERY_JOB: &[u8] = &[0x18, 0x01, 0x38, 0x01];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

async fn client(socket: &Path) -> JobsClient<tonic::transport::Channel> {
    let channel = qmesh_proto::endpoint::connect_unix(socket)
        .await
        .expect("connect to the daemon");
    JobsClient::new(channel).max_decoding_message_size(1 << 30)
}

fn held_job(work: &Path, n: usize) -> v1::SubmitRequest {
    v1::SubmitRequest {
        script: format!("#!/bin/sh\n# job {n}\ntrue\n").into_bytes(),
        script_name: "held.sh".into(),
        name: format!("held-with-a-longer-name-{n}"),
        hold: true,
        workdir: work.display().to_string(),
        submit_host: "e2e".into(),
        ..Default::default()
    }
}

/// `n` held jobs, from 4 connections at once; their ids.
async fn submit_held(socket: &Path, work: &Path, n: usize) -> Vec<String> {
    let mut tasks = Vec::new();
    for k in 0..4 {
        let mut c = client(socket).await;
        let work = work.to_path_buf();
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in (k..n).step_by(4) {
                let reply = c.submit(held_job(&work, i)).await.expect("submit");
                ids.push(reply.into_inner().job_id);
            }
            ids
        }));
    }
    let mut ids = Vec::new();
    for t in tasks {
        ids.extend(t.await.expect("submitter"));
    }
    ids
}

/// How a hand-made HTTP/2 client stops reading.
#[derive(Clone, Copy, PartialEq)]
enum Stall {
    /// The default window (64 KiB), never updated: the rest of the answer
    /// stays in the daemon.
    FlowControl,
    /// The largest window, and the socket never read: the daemon's writes
    /// fill the socket and its connection waits to write.
    Socket,
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A header as an HPACK literal without indexing (names and values are
/// all shorter than 127 bytes here).
fn literal(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(&[0, name.len() as u8]);
    out.extend_from_slice(name.as_bytes());
    out.push(value.len() as u8);
    out.extend_from_slice(value.as_bytes());
}

/// A Status call for every job over its own connection, written by hand
/// (tonic's connection task would read on our behalf), that is never read
/// after the server's first SETTINGS.
fn stalled_listing(socket: &Path, stall: Stall) -> UnixStream {
    let mut s = UnixStream::connect(socket).expect("connect to the daemon");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut settings = Vec::new();
    if stall == Stall::Socket {
        settings.extend_from_slice(&[0, 4]); // SETTINGS_INITIAL_WINDOW_SIZE
        settings.extend_from_slice(&((1u32 << 31) - 1).to_be_bytes());
    }
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    s.write_all(&frame(4, 0, 0, &settings)).unwrap();
    if stall == Stall::Socket {
        let more = (1u32 << 31) - 1 - 65_535;
        s.write_all(&frame(8, 0, 0, &more.to_be_bytes())).unwrap();
    }
    loop {
        let mut head = [0u8; 9];
        s.read_exact(&mut head).expect("the daemon's first frames");
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0; len];
        s.read_exact(&mut payload).unwrap();
        if head[3] == 4 && head[4] & 1 == 0 {
            break; // the server's SETTINGS
        }
    }
    s.write_all(&frame(4, 1, 0, &[])).unwrap();
    let mut headers = Vec::new();
    literal(&mut headers, ":method", "POST");
    literal(&mut headers, ":scheme", "http");
    literal(&mut headers, ":path", "/qmesh.v1.Jobs/Status");
    literal(&mut headers, ":authority", "localhost");
    literal(&mut headers, "content-type", "application/grpc");
    literal(&mut headers, "te", "trailers");
    s.write_all(&frame(1, 4, 1, &headers)).unwrap();
    let mut body = vec![0];
    body.extend_from_slice(&(EVERY_JOB.len() as u32).to_be_bytes());
    body.extend_from_slice(EVERY_JOB);
    s.write_all(&frame(0, 1, 1, &body)).unwrap();
    s
}

/// Waits (by polling the socket, not by sleeping a guess) until the
/// daemon has sent the stalled reader at least `bytes` it does not read:
/// its answer was built and handed to the connection.
fn await_unread(s: &UnixStream, bytes: usize) {
    use nix::sys::socket::{MsgFlags, recv};
    use std::os::fd::AsRawFd;
    let mut buf = vec![0u8; bytes];
    for _ in 0..600 {
        match recv(
            s.as_raw_fd(),
            &mut buf,
            MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
        ) {
            Ok(n) if n >= bytes => return,
            Ok(0) => panic!("the daemon closed a stalled reader's connection"),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    panic!("the daemon did not answer a stalled reader in 60 s");
}

#[test]
fn clients_that_stop_reading_stall_neither_the_scheduler_nor_other_callers() {
    let d = Daemon::start();
    let rt = runtime();
    // A listing of some 0.5 MB: more than HTTP/2's window and a Unix
    // socket's buffer, so a reader that stops leaves most of it unsent.
    let held = rt.block_on(submit_held(&d.socket, &d.work, 1500));
    // More stalled listings than the daemon queues at once
    // (`service::LISTINGS_QUEUED`, 4): a stalled caller must not keep its
    // turn once its answer is built.
    let stalled: Vec<UnixStream> = (0..16)
        .map(|i| {
            let stall = if i % 2 == 0 {
                Stall::FlowControl
            } else {
                Stall::Socket
            };
            stalled_listing(&d.socket, stall)
        })
        .collect();
    for s in &stalled {
        // More than the frame's head: the listing itself has begun.
        await_unread(s, 16 * 1024);
    }

    // The scheduler still goes round: a job is submitted, scheduled,
    // launched by the agent, and its end recorded.
    d.script("quick.sh", "#!/bin/sh\necho ran\n");
    let id = d.qsub(&["quick.sh"]);
    let info = d.wait_job(&id);
    assert_eq!(info.state_letter, "F", "{info:?}");
    assert_eq!(info.exit_status, Some(0), "{info:?}");
    // qstat answers, every job in it.
    let listing = d.ok("qstat", &["-x"]);
    for job in held.iter().take(3).chain([&id]) {
        let seq = job.split('.').next().unwrap();
        assert!(
            listing.lines().any(|l| l.starts_with(&format!("{seq}."))),
            "{job} missing from qstat -x"
        );
    }
    // The stalled connections are still there, their answers unread.
    for s in &stalled {
        await_unread(s, 16 * 1024);
    }
    drop(stalled);
    // And once they have gone, the daemon answers as before.
    let jobs = rt.block_on(async {
        let mut c = client(&d.socket).await;
        c.status(v1::StatusRequest::default())
            .await
            .expect("Status after the stalled readers left")
            .into_inner()
            .jobs
            .len()
    });
    assert_eq!(
        jobs,
        held.len(),
        "the held jobs are listed (the quick one ended)"
    );
}

#[test]
fn two_hundred_qstat_callers_and_four_submitters_are_all_answered() {
    let d = Daemon::start();
    let rt = runtime();
    let preloaded = rt.block_on(submit_held(&d.socket, &d.work, 200));
    let (listings, submitted) = rt.block_on(async {
        // Each caller on its own connection, as each qstat process is,
        // all connected before any asks.
        let mut callers = Vec::new();
        for _ in 0..200 {
            callers.push(client(&d.socket).await);
        }
        let mut qstat = Vec::new();
        for mut c in callers {
            qstat.push(tokio::spawn(async move {
                let mut listed = Vec::new();
                for _ in 0..3 {
                    // Plain qstat's request (qmesh-cli's qstat/fetch.rs).
                    let request = v1::StatusRequest {
                        report_refused: true,
                        ..Default::default()
                    };
                    let reply = c.status(request).await.map_err(|s| s.to_string())?;
                    listed.push(reply.into_inner().jobs.len());
                }
                Ok::<_, String>(listed)
            }));
        }
        let mut submitters = Vec::new();
        for k in 0..4 {
            let mut c = client(&d.socket).await;
            let work = d.work.clone();
            submitters.push(tokio::spawn(async move {
                let mut ids = Vec::new();
                for i in 0..50 {
                    let reply = c
                        .submit(held_job(&work, 1000 + 100 * k + i))
                        .await
                        .map_err(|s| s.to_string())?;
                    ids.push(reply.into_inner().job_id);
                }
                Ok::<_, String>(ids)
            }));
        }
        let mut listings = Vec::new();
        for t in qstat {
            listings.extend(
                t.await
                    .expect("qstat caller")
                    .expect("a Status call failed"),
            );
        }
        let mut submitted = Vec::new();
        for t in submitters {
            submitted.extend(t.await.expect("submitter").expect("a Submit call failed"));
        }
        (listings, submitted)
    });
    assert_eq!(listings.len(), 600, "every Status call answered");
    assert!(
        listings.iter().all(|n| (200..=400).contains(n)),
        "every listing holds the preloaded jobs and no more than were submitted"
    );
    assert_eq!(submitted.len(), 200, "every submission acknowledged");
    // Every acknowledged job is there.
    let listing = d.ok("qstat", &[]);
    let ids: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for job in preloaded.iter().chain(&submitted) {
        let seq = job.split('.').next().unwrap();
        assert!(
            ids.iter().any(|l| l.split('.').next() == Some(seq)),
            "{job} missing from qstat"
        );
    }
}
