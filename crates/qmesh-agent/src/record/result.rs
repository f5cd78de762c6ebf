//! `result.json`: a job's end as the wire's `JobFinished` says it, which
//! the shepherd writes and the agent reports as it is. Version 1, the
//! agent's own copy of it with the cause by name, is read into the same
//! end.

use qmesh_proto::v1;
use serde::{Deserialize, Serialize};

use super::RESULT_VERSION;

/// A job's end as the wire's `JobFinished` says it, which the shepherd
/// writes into `result.json` and the agent reports as it is: `cause` is
/// all there is to fill but `message` and the end time (the others are
/// the wire's defaults: none).
pub fn finish(job: u64, cause: v1::FinishCause, message: String, end_time: i64) -> v1::JobFinished {
    v1::JobFinished {
        job,
        cause: cause as i32,
        message,
        end_time,
        ..v1::JobFinished::default()
    }
}

/// `result.json`: the end as it will be reported. `cause` is
/// `FinishCause`'s number (the proto's numbers, unlike its names, never
/// change).
#[derive(Serialize)]
struct ResultFile<'a> {
    version: u32,
    finished: &'a v1::JobFinished,
}

/// `result.json` of version 2 and later (their fields are added, not
/// changed; a new field reads as its default).
#[derive(Deserialize)]
struct ResultRead {
    finished: v1::JobFinished,
}

/// `result.json` of version 1: `JobFinished`'s fields at the top, the
/// cause by name.
#[derive(Deserialize)]
struct ResultV1 {
    cause: CauseV1,
    #[serde(flatten)]
    finished: v1::JobFinished,
}

#[derive(Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum CauseV1 {
    Exited,
    Walltime,
    Killed,
    LaunchFailed,
    Unknown,
    Memory,
    CpuTime,
}

pub fn result_to_json(finished: &v1::JobFinished) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&ResultFile {
        version: RESULT_VERSION,
        finished,
    })
}

/// A `result.json` of any version.
pub fn result_from_json(bytes: &[u8]) -> serde_json::Result<v1::JobFinished> {
    use v1::FinishCause as C;
    match serde_json::from_slice::<ResultRead>(bytes) {
        Ok(read) => Ok(read.finished),
        Err(e) => {
            let Ok(old) = serde_json::from_slice::<ResultV1>(bytes) else {
                return Err(e);
            };
            let cause = match old.cause {
                CauseV1::Exited => C::Exited,
                CauseV1::Walltime => C::Walltime,
                CauseV1::Killed => C::Killed,
                CauseV1::LaunchFailed => C::LaunchFailed,
                CauseV1::Unknown => C::Lost,
                CauseV1::Memory => C::Memory,
                CauseV1::CpuTime => C::CpuTime,
            };
            Ok(v1::JobFinished {
                cause: cause as i32,
                ..old.finished
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_result_without_optional_fields_still_loads() {
        let old = r#"{"job": 4, "cause": "EXITED", "exit_code": 0}"#;
        let r = result_from_json(old.as_bytes()).unwrap();
        assert_eq!(r.exit_code, Some(0));
        assert_eq!(r.cause(), v1::FinishCause::Exited);
        let old = r#"{"version": 1, "job": 5, "cause": "UNKNOWN", "exit_code": null}"#;
        let r = result_from_json(old.as_bytes()).unwrap();
        assert_eq!(
            (r.job, r.cause(), r.exit_code),
            (5, v1::FinishCause::Lost, None)
        );
    }

    #[test]
    fn a_result_round_trips_through_its_json() {
        let mut finished = finish(3, v1::FinishCause::Walltime, "over".into(), 20);
        finished.signal = Some(15);
        finished.start_time = 10;
        finished.cput = Some(3);
        let json = result_to_json(&finished).unwrap();
        assert_eq!(result_from_json(&json).unwrap(), finished);
        let e = result_from_json(br#"{"version": 3}"#).unwrap_err();
        assert!(e.to_string().contains("finished"), "{e}");
    }
}
