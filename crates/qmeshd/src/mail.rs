//! Mail about jobs, as PBS sends it (`qsub -m abe -M ...`): when a job
//! begins (`b`), ends (`e`) and is aborted (`a`, PBS's default), through
//! the site's sendmail (`[jobs] sendmail` in the configuration file).
//!
//! The message is composed here from the job as it stands, in PBS's words
//! (`PBS Job Id:`, `Begun execution`, `Execution terminated`, `Exit_status=`)
//! so that users' mail filters keep working. Sending runs sendmail as a
//! child of the daemon in the background: a slow or failing mailer never
//! holds the scheduler task up, and a failure is logged, not fatal.

use std::path::PathBuf;
use std::process::Stdio;

use qmesh_core::job::{ExitCause, Job};
use qmesh_core::time::format_hms;
use tokio::io::AsyncWriteExt;
use tracing::warn;

/// Which mail point an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MailEvent {
    Begin,
    End,
    Abort,
}

impl MailEvent {
    pub fn point(self) -> char {
        match self {
            MailEvent::Begin => 'b',
            MailEvent::End => 'e',
            MailEvent::Abort => 'a',
        }
    }

    /// The event a finished job's end is: an abort when the system ended
    /// it (wall time, deletion, a failed launch, a lost host), else an end.
    pub fn of_end(job: &Job) -> MailEvent {
        match job.exit.as_ref().map(|e| e.cause) {
            Some(ExitCause::Exited) => MailEvent::End,
            _ => MailEvent::Abort,
        }
    }
}

/// Who gets a job's mail: `-M`'s list, else its owner.
pub fn recipients(job: &Job) -> Vec<String> {
    if job.options.mail_users.is_empty() {
        vec![job.owner.user.clone()]
    } else {
        job.options.mail_users.clone()
    }
}

/// The message for `event`, headers included.
pub fn compose(
    job: &Job,
    full_id: &str,
    event: MailEvent,
    from: &str,
    now: qmesh_core::Time,
) -> String {
    let to = recipients(job).join(", ");
    let mut body = format!("PBS Job Id: {full_id}\nJob Name:   {}\n", job.name);
    let exec_host = job.exec_host();
    if !exec_host.is_empty() {
        body.push_str(&format!("Exec host:  {exec_host}\n"));
    }
    match event {
        MailEvent::Begin => body.push_str("Begun execution\n"),
        MailEvent::End | MailEvent::Abort => {
            if event == MailEvent::Abort {
                body.push_str("Aborted by PBS Server\n");
                if !job.comment.is_empty() {
                    body.push_str(&job.comment);
                    body.push('\n');
                }
            } else {
                body.push_str("Execution terminated\n");
            }
            if let Some(exit) = &job.exit {
                body.push_str(&format!("Exit_status={}\n", exit.exit_status()));
            }
            for (name, value) in job.resources_used(now) {
                body.push_str(&format!("resources_used.{name}={value}\n"));
            }
            if let Some(elapsed) = job.elapsed(now).filter(|_| job.stime.is_some()) {
                body.push_str(&format!("Elapsed: {}\n", format_hms(elapsed)));
            }
        }
    }
    format!("From: {from}\nTo: {to}\nSubject: PBS JOB {full_id}\n\n{body}")
}

/// Sends `message` to `to` with sendmail at `path`, in the background.
pub fn send(path: PathBuf, from: String, to: Vec<String>, message: String, job: String) {
    tokio::spawn(async move {
        let child = tokio::process::Command::new(&path)
            .arg("-f")
            .arg(&from)
            .args(&to)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        let mut child = match child {
            Ok(child) => child,
            Err(e) => {
                warn!(job = %job, sendmail = %path.display(), error = %e, "cannot run sendmail; the job's mail is not sent");
                return;
            }
        };
        if let Some(mut stdin) = child.stdin.take() {
            if let Err(e) = stdin.write_all(message.as_bytes()).await {
                warn!(job = %job, error = %e, "cannot give sendmail the job's mail");
            }
        }
        match child.wait_with_output().await {
            Ok(out) if out.status.success() => {}
            Ok(out) => warn!(
                job = %job,
                status = %out.status,
                stderr = %String::from_utf8_lossy(&out.stderr).trim(),
                "sendmail refused the job's mail"
            ),
            Err(e) => warn!(job = %job, error = %e, "sendmail did not finish"),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use qmesh_core::job::JobExit;
    use qmesh_core::{Caller, Config, JobId, Queue, Role, Submission};

    fn job() -> Job {
        let mut config = Config::default();
        config.queues.insert("batch".into(), Queue::open("batch"));
        let sub = Submission {
            script_name: "sim.sh".into(),
            workdir: "/home/alice".into(),
            mail_users: Some("alice@example.org,bob".into()),
            mail_points: Some("abe".into()),
            ..Submission::default()
        };
        let caller = Caller {
            uid: 1,
            gid: 1,
            user: "alice".into(),
            group: "g".into(),
            role: Role::User,
        };
        let now = chrono::DateTime::from_timestamp(1_000, 0).unwrap();
        sub.into_job(
            JobId(12),
            &caller,
            &config,
            |_, _| qmesh_core::submit::Reach {
                nodes: 4,
                sets: String::new(),
            },
            now,
        )
        .unwrap()
    }

    #[test]
    fn begin_and_end_read_as_pbs_writes_them() {
        let mut j = job();
        j.exec_nodes = vec!["n3".into()];
        j.stime = chrono::DateTime::from_timestamp(1_000, 0);
        let now = chrono::DateTime::from_timestamp(1_065, 0).unwrap();
        let begin = compose(&j, "12.srv", MailEvent::Begin, "adm", now);
        assert!(
            begin.starts_with("From: adm\nTo: alice@example.org, bob\nSubject: PBS JOB 12.srv\n\n")
        );
        assert!(begin.contains(
            "PBS Job Id: 12.srv\nJob Name:   sim.sh\nExec host:  n3/0*1\nBegun execution\n"
        ));
        j.state = qmesh_core::JobState::Finished;
        j.end_time = Some(now);
        j.exit = Some(JobExit {
            code: Some(3),
            signal: None,
            cause: ExitCause::Exited,
            message: String::new(),
            cput: Some(61),
            max_rss: None,
            vmem: None,
        });
        assert_eq!(MailEvent::of_end(&j), MailEvent::End);
        let end = compose(&j, "12.srv", MailEvent::End, "adm", now);
        assert!(
            end.contains("Execution terminated\nExit_status=3\n"),
            "{end}"
        );
        assert!(end.contains("resources_used.cput=00:01:01"), "{end}");
        assert!(end.contains("resources_used.walltime=00:01:05"), "{end}");
    }

    #[test]
    fn the_owner_gets_it_when_no_one_is_named() {
        let mut j = job();
        j.options.mail_users.clear();
        assert_eq!(recipients(&j), vec!["alice".to_string()]);
        j.exit = Some(JobExit {
            code: None,
            signal: Some(9),
            cause: ExitCause::Walltime,
            message: String::new(),
            cput: None,
            max_rss: None,
            vmem: None,
        });
        assert_eq!(MailEvent::of_end(&j), MailEvent::Abort);
    }
}
