//! How the churn driver knows a run is over.
//!
//! By default it lists the jobs every 50 ms until none is left, as it
//! always has. That listing is not free: with 10,000 plain jobs queued,
//! each poll has the daemon describe every one (a pending job's reason and
//! expected start included), while an array is listed as one line, its
//! `array_state_count` saying how many sub-jobs are left. The two forms
//! would then not be compared on equal terms, so with `Watch::Log` the
//! driver counts the "job ended" lines of the daemon's log instead (one per
//! job or sub-job), and lists the jobs only once they have all ended, to
//! confirm none is left: the same small cost for both.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use qmesh_proto::v1;

use super::Timing;
use super::figures::log_event;
use crate::cpu::CpuTimes;

/// What the driver watches for the ends.
pub(super) enum Watch {
    /// The job listing, every 50 ms.
    Status,
    /// The daemon's log, at this path.
    Log(PathBuf),
}

/// How the wait for the last end went.
pub(super) struct Waited {
    done: DateTime<Utc>,
    polls: usize,
    poll_s: f64,
}

impl Waited {
    pub(super) fn timing(self, go: DateTime<Utc>, daemon_at_go: CpuTimes, submit_s: f64) -> Timing {
        Timing {
            go,
            done: self.done,
            submit_s,
            polls: self.polls,
            poll_s: self.poll_s,
            daemon_at_go,
        }
    }
}

/// Until no job is left; an error after 60 s without an end or 600 s in all.
pub(super) async fn wait_all_ended(
    client: &mut v1::jobs_client::JobsClient<tonic::transport::Channel>,
    go: DateTime<Utc>,
    watch: &Watch,
    jobs: usize,
) -> anyhow::Result<Waited> {
    let mut tail = match watch {
        Watch::Log(path) => Some(LogTail::new(path.clone())),
        Watch::Status => None,
    };
    let (mut left, mut progress) = (usize::MAX, Instant::now());
    let (mut polls, mut polling) = (0, Duration::ZERO);
    loop {
        let mut now_left = match &mut tail {
            Some(tail) => jobs.saturating_sub(tail.ended()?),
            None => usize::MAX,
        };
        let mut listed = Vec::new();
        // The log only says when to look; the listing says it is over.
        if tail.is_none() || now_left == 0 {
            let asked = Instant::now();
            let reply = client
                .status(v1::StatusRequest::default())
                .await?
                .into_inner();
            polls += 1;
            polling += asked.elapsed();
            if reply.jobs.is_empty() {
                break;
            }
            if tail.is_none() {
                now_left = jobs_left(&reply.jobs);
            }
            listed = reply.jobs;
        }
        if now_left < left {
            (left, progress) = (now_left, Instant::now());
        }
        if progress.elapsed() > Duration::from_secs(60) {
            let ids: Vec<&str> = listed.iter().take(10).map(|j| j.id.as_str()).collect();
            bail!(
                "{now_left} jobs still unfinished and none ended for 60 s: {}",
                ids.join(" ")
            );
        }
        if Utc::now() - go > chrono::Duration::seconds(600) {
            bail!("{now_left} jobs still unfinished after 600 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(Waited {
        done: Utc::now(),
        polls,
        poll_s: polling.as_secs_f64(),
    })
}

/// Jobs not yet ended in a listing: one per plain job, and for an array
/// (listed alone, its sub-jobs not) those its `array_state_count` says are
/// queued, running or exiting.
fn jobs_left(jobs: &[v1::JobInfo]) -> usize {
    jobs.iter()
        .map(|j| {
            if !j.array {
                return 1;
            }
            j.array_state_count
                .split_whitespace()
                .filter_map(|kv| kv.split_once(':'))
                .filter(|(k, _)| *k != "Expired")
                .filter_map(|(_, n)| n.parse::<usize>().ok())
                .sum::<usize>()
                // An array listed is not finished, whatever its count says.
                .max(1)
        })
        .sum()
}

/// The daemon's log, read on from where the last look stopped, counting
/// the "job ended" lines (a line still being written waits for the next).
struct LogTail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
    ended: usize,
}

impl LogTail {
    fn new(path: PathBuf) -> LogTail {
        LogTail {
            path,
            offset: 0,
            partial: Vec::new(),
            ended: 0,
        }
    }

    /// Ends logged so far.
    fn ended(&mut self) -> anyhow::Result<usize> {
        let mut file = std::fs::File::open(&self.path)
            .with_context(|| format!("read the daemon's log {}", self.path.display()))?;
        file.seek(SeekFrom::Start(self.offset))?;
        let read = file.read_to_end(&mut self.partial)?;
        self.offset += read as u64;
        if let Some(last) = self.partial.iter().rposition(|&b| b == b'\n') {
            let lines = String::from_utf8_lossy(&self.partial[..=last]);
            self.ended += lines
                .lines()
                .filter(|l| log_event(l, "job ended").is_some())
                .count();
            self.partial.drain(..=last);
        }
        Ok(self.ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_counts_its_sub_jobs_not_ended() {
        let plain = v1::JobInfo::default();
        let array = v1::JobInfo {
            array: true,
            array_state_count: "Queued:5 Running:3 Exiting:0 Expired:92 ".into(),
            ..Default::default()
        };
        assert_eq!(jobs_left(&[plain.clone(), plain.clone()]), 2);
        assert_eq!(jobs_left(&[array, plain]), 9);
        let garbled = v1::JobInfo {
            array: true,
            array_state_count: "nonsense".into(),
            ..Default::default()
        };
        assert_eq!(jobs_left(&[garbled]), 1);
    }

    #[test]
    fn the_log_is_read_on_and_a_half_written_line_waits() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("qmeshd.log");
        let end = |job: &str| {
            format!(
                "2026-11-23T08:30:45.591300Z  INFO qmeshd::task: job ended job={job} outcome=Finished\n"
            )
        };
        let mut log = std::fs::File::create(&path).unwrap();
        write!(log, "{}{}", end("1[0]"), end("1[1]")).unwrap();
        writeln!(
            log,
            "2026-11-23T08:30:45.6Z  INFO qmeshd::task: starting job=1[2]"
        )
        .unwrap();
        let half = end("1[2]");
        let (first, rest) = half.split_at(30);
        write!(log, "{first}").unwrap();
        let mut tail = LogTail::new(path.clone());
        assert_eq!(tail.ended().unwrap(), 2);
        write!(log, "{rest}").unwrap();
        assert_eq!(tail.ended().unwrap(), 3);
        assert_eq!(tail.ended().unwrap(), 3);
        assert!(LogTail::new(dir.path().join("none")).ended().is_err());
    }
}
