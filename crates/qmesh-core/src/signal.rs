//! Signals for running jobs (qsig, and the warning before a period ends):
//! which names users may write, and who may signal which job.
//!
//! Users write signals the PBS way: `SIGUSR1`, `USR1` (either case) or the
//! number `10`. Everything past this module speaks the canonical name
//! (`SIGUSR1`): it is what the wire carries, and each agent turns it into
//! its own host's number. Numbers are read with Linux's table, the one the
//! daemon and the agents run on.
//!
//! Any real signal may be sent, SIGKILL and SIGSTOP included: the agent's
//! shepherd sends it to the job's process group, never to itself, so none
//! can break the shepherd. Only signal 0 (which tests, and sends nothing)
//! and names no host knows are refused.

use crate::access::Caller;
use crate::error::CoreError;
use crate::job::{Job, JobId, JobState};
use crate::state::State;

/// Linux's signals: canonical name and number.
const SIGNALS: [(&str, u8); 31] = [
    ("SIGHUP", 1),
    ("SIGINT", 2),
    ("SIGQUIT", 3),
    ("SIGILL", 4),
    ("SIGTRAP", 5),
    ("SIGABRT", 6),
    ("SIGBUS", 7),
    ("SIGFPE", 8),
    ("SIGKILL", 9),
    ("SIGUSR1", 10),
    ("SIGSEGV", 11),
    ("SIGUSR2", 12),
    ("SIGPIPE", 13),
    ("SIGALRM", 14),
    ("SIGTERM", 15),
    ("SIGSTKFLT", 16),
    ("SIGCHLD", 17),
    ("SIGCONT", 18),
    ("SIGSTOP", 19),
    ("SIGTSTP", 20),
    ("SIGTTIN", 21),
    ("SIGTTOU", 22),
    ("SIGURG", 23),
    ("SIGXCPU", 24),
    ("SIGXFSZ", 25),
    ("SIGVTALRM", 26),
    ("SIGPROF", 27),
    ("SIGWINCH", 28),
    ("SIGIO", 29),
    ("SIGPWR", 30),
    ("SIGSYS", 31),
];

/// Other names for the same signals.
const ALIASES: [(&str, &str); 3] = [
    ("SIGIOT", "SIGABRT"),
    ("SIGPOLL", "SIGIO"),
    ("SIGCLD", "SIGCHLD"),
];

/// The signal qsig sends when none is named (PBS).
pub const DEFAULT_SIGNAL: &str = "SIGTERM";

/// The canonical name (`SIGUSR1`) of a signal written as `SIGUSR1`, `USR1`
/// (any case) or `10`.
pub fn parse_signal(text: &str) -> Result<&'static str, CoreError> {
    let bad = |why: &str| CoreError::BadSignal {
        text: text.to_string(),
        why: why.to_string(),
    };
    let word = text.trim();
    if word.is_empty() {
        return Err(bad("no signal named"));
    }
    if word.bytes().all(|b| b.is_ascii_digit()) {
        return match word.parse::<u32>() {
            Ok(0) => Err(bad("signal 0 only tests whether a process exists")),
            Ok(n) => SIGNALS
                .iter()
                .find(|(_, number)| u32::from(*number) == n)
                .map(|(name, _)| *name)
                .ok_or_else(|| bad("no such signal number (1 to 31)")),
            Err(_) => Err(bad("no such signal number (1 to 31)")),
        };
    }
    let upper = word.to_ascii_uppercase();
    let name = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    let name = ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name.as_str(), |(_, canonical)| canonical);
    SIGNALS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(known, _)| *known)
        .ok_or_else(|| bad("not a signal name"))
}

/// The job `id` if it can be signalled: it exists, it is running, and
/// `caller` (when the request comes from one) may act on it. The scheduler
/// signals on the server's own authority and passes no caller.
pub fn signal_target<'s>(
    state: &'s State,
    id: JobId,
    caller: Option<&Caller>,
) -> Result<&'s Job, CoreError> {
    let job = state.job(id).ok_or_else(|| CoreError::NoSuchJob {
        id: state.full_id(id),
    })?;
    if let Some(caller) = caller
        && !caller.may_act_on(job)
    {
        return Err(CoreError::NotYourJob {
            id: state.full_id(id),
            owner: job.owner.user.clone(),
            action: "signal".into(),
        });
    }
    if job.state != JobState::Running {
        return Err(CoreError::NotRunning {
            id: state.full_id(id),
            state: job.state.letter(),
        });
    }
    Ok(job)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::ServerAttrs;
    use crate::state::tests::{state, submit, t};

    #[test]
    fn names_short_names_and_numbers_give_the_canonical_name() {
        for text in ["SIGUSR1", "USR1", "usr1", "SigUsr1", "10", " 10 "] {
            assert_eq!(parse_signal(text), Ok("SIGUSR1"), "{text}");
        }
        assert_eq!(parse_signal("TERM"), Ok("SIGTERM"));
        assert_eq!(parse_signal("9"), Ok("SIGKILL"));
        assert_eq!(parse_signal("STOP"), Ok("SIGSTOP"));
        assert_eq!(parse_signal("31"), Ok("SIGSYS"));
        assert_eq!(parse_signal("IOT"), Ok("SIGABRT"));
        assert_eq!(parse_signal("SIGCLD"), Ok("SIGCHLD"));
        assert_eq!(parse_signal(DEFAULT_SIGNAL), Ok("SIGTERM"));
        assert_eq!(SIGNALS.len(), 31);
        for (i, (_, number)) in SIGNALS.iter().enumerate() {
            assert_eq!(usize::from(*number), i + 1, "the table is in order");
        }
    }

    #[test]
    fn nonsense_is_refused_with_what_to_write() {
        for text in ["", "0", "32", "99999999999", "FOO", "SIG", "-9", "USR1x"] {
            let e = parse_signal(text).unwrap_err();
            assert!(matches!(e, CoreError::BadSignal { .. }), "{text}: {e:?}");
            let msg = e.to_string();
            assert!(msg.contains("SIGUSR1, USR1 or 10"), "{msg}");
        }
        let msg = parse_signal("0").unwrap_err().to_string();
        assert!(msg.contains("signal 0 only tests"), "{msg}");
    }

    #[test]
    fn only_running_jobs_of_ones_own_can_be_signalled() {
        let mut s = state(4);
        let queued = submit(&mut s, 1001, 1);
        let e = signal_target(&s, queued, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "job {} is not running (state Q); only running jobs can be signalled",
                s.full_id(queued)
            )
        );
        s.start(queued, &[0], t(1)).unwrap();
        let server = ServerAttrs::default();
        let owner = Caller::identify(1001, 1001, "alice", "staff", &server, 0);
        let other = Caller::identify(1002, 1002, "bob", "staff", &server, 0);
        assert!(signal_target(&s, queued, Some(&owner)).is_ok());
        assert!(signal_target(&s, queued, None).is_ok());
        let e = signal_target(&s, queued, Some(&other)).unwrap_err();
        assert!(matches!(e, CoreError::NotYourJob { .. }), "{e:?}");
        assert!(e.to_string().contains("may signal it"), "{e}");
        let missing = JobId(999);
        let e = signal_target(&s, missing, None).unwrap_err();
        assert!(matches!(e, CoreError::NoSuchJob { .. }), "{e:?}");
    }
}
