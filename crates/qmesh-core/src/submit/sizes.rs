//! How much one submission may carry: a script, its environment, names
//! and attribute values, each refused past its limit with what the limit
//! is, before anything is stored. A client cannot fill the daemon's
//! memory or store with one request. The limits follow the incumbents:
//! Slurm's default max_script_size is 4 MB, PBS Pro's job names end at
//! 236 characters.

use super::Submission;
use crate::job::JobPayload;

/// A job script, in bytes.
pub const MAX_SCRIPT_BYTES: usize = 4 << 20;
/// The job's environment (`-v`, `-V` and PBS_O_*), names and values.
pub const MAX_ENV_BYTES: usize = 1 << 20;
/// A job's name (`-N`), in characters.
pub const MAX_NAME_CHARS: usize = 236;
/// Any other value given (paths, resources, accounts, lists).
pub const MAX_VALUE_BYTES: usize = 4096;
/// Resources asked (`-l` entries).
pub const MAX_RESOURCES: usize = 256;
/// Job ids named in one request (qdel, qhold, qrls, qstat, qsig, qmove,
/// qrerun, qrun, qalter): `qdel $(qselect)` on a busy server fits, one
/// request cannot keep the scheduler busy for minutes.
pub const MAX_JOB_IDS: usize = 100_000;

/// Why the submission is too large, or nothing.
pub fn check(sub: &Submission, payload: &JobPayload) -> Result<(), String> {
    let mib = |n: usize| n as f64 / f64::from(1 << 20);
    if payload.script.len() > MAX_SCRIPT_BYTES {
        return Err(format!(
            "the job script is {:.1} MiB; a script may be at most {:.0} MiB (keep data in files the script reads)",
            mib(payload.script.len()),
            mib(MAX_SCRIPT_BYTES)
        ));
    }
    let env: usize = payload.env.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    if env > MAX_ENV_BYTES {
        return Err(format!(
            "the job's environment is {:.1} MiB; it may be at most {:.0} MiB (pass fewer variables with -v, or not the whole environment with -V)",
            mib(env),
            mib(MAX_ENV_BYTES)
        ));
    }
    let values = [
        ("the output path (-o)", sub.stdout_path.as_deref()),
        ("the error path (-e)", sub.stderr_path.as_deref()),
        ("the account (-A)", sub.account.as_deref()),
        ("the project (-P)", sub.project.as_deref()),
        ("the working directory", Some(sub.workdir.as_str())),
        ("the dependency list (-W depend)", Some(sub.depend.as_str())),
        ("the mail list (-M)", sub.mail_users.as_deref()),
        ("the shell (-S)", sub.shell.as_deref()),
        ("the script's name", Some(sub.script_name.as_str())),
    ];
    check_fields(sub.name.as_deref(), &sub.resources, &values)
}

/// Why a request names too many job ids, or an id too long, or nothing.
pub fn check_job_ids(ids: &[String]) -> Result<(), String> {
    if ids.len() > MAX_JOB_IDS {
        return Err(format!(
            "{} job ids in one request; at most {MAX_JOB_IDS} (name an array as ID[], or split the list)",
            ids.len()
        ));
    }
    if let Some(id) = ids.iter().find(|id| id.len() > MAX_VALUE_BYTES) {
        return Err(format!(
            "a job id {} bytes long; a value may be at most {MAX_VALUE_BYTES}",
            id.len()
        ));
    }
    Ok(())
}

/// What a submission and an alteration share: the name (`-N`), the
/// number of resources, and every value (resources' names and values
/// among them) against its limit.
pub(crate) fn check_fields(
    name: Option<&str>,
    resources: &[(String, String)],
    values: &[(&str, Option<&str>)],
) -> Result<(), String> {
    if let Some(name) = name
        && name.chars().count() > MAX_NAME_CHARS
    {
        return Err(format!(
            "the job name is {} characters; -N takes at most {MAX_NAME_CHARS}",
            name.chars().count()
        ));
    }
    if resources.len() > MAX_RESOURCES {
        return Err(format!(
            "{} resources asked; at most {MAX_RESOURCES}",
            resources.len()
        ));
    }
    let resources = resources
        .iter()
        .flat_map(|(k, v)| [("a resource's name", k.as_str()), (k.as_str(), v.as_str())]);
    for (what, value) in values
        .iter()
        .filter_map(|(w, v)| v.map(|v| (*w, v)))
        .chain(resources)
    {
        if value.len() > MAX_VALUE_BYTES {
            return Err(format!(
                "{what} is {} bytes long; a value may be at most {MAX_VALUE_BYTES}",
                value.len()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qalter::check_alteration;

    fn payload(script: usize) -> JobPayload {
        JobPayload {
            script: vec![b'#'; script],
            env: Vec::new(),
        }
    }

    #[test]
    fn each_limit_is_refused_with_what_it_is() {
        let sub = Submission::default();
        assert!(check(&sub, &payload(MAX_SCRIPT_BYTES)).is_ok());
        let e = check(&sub, &payload(MAX_SCRIPT_BYTES + 1)).unwrap_err();
        assert!(e.contains("at most 4 MiB"), "{e}");
        let mut env = payload(10);
        env.env.push(("BIG".into(), "x".repeat(MAX_ENV_BYTES)));
        assert!(check(&sub, &env).unwrap_err().contains("environment"));
        let named = Submission {
            name: Some("n".repeat(MAX_NAME_CHARS + 1)),
            ..Submission::default()
        };
        assert!(
            check(&named, &payload(1))
                .unwrap_err()
                .contains("-N takes at most 236")
        );
        let long = Submission {
            resources: vec![("walltime".into(), "1".repeat(MAX_VALUE_BYTES + 1))],
            ..Submission::default()
        };
        assert!(
            check(&long, &payload(1))
                .unwrap_err()
                .contains("walltime is")
        );
        let long_name = Submission {
            resources: vec![("x".repeat(MAX_VALUE_BYTES + 1), "1".into())],
            ..Submission::default()
        };
        assert!(
            check(&long_name, &payload(1))
                .unwrap_err()
                .contains("a resource's name is 4097 bytes")
        );
        let many = Submission {
            resources: vec![("ncpus".into(), "1".into()); MAX_RESOURCES + 1],
            ..Submission::default()
        };
        assert!(
            check(&many, &payload(1))
                .unwrap_err()
                .contains("resources asked")
        );
    }

    #[test]
    fn too_many_job_ids_are_refused() {
        let ids = vec!["1".to_string(); MAX_JOB_IDS];
        assert!(check_job_ids(&ids).is_ok());
        let more = vec!["1".to_string(); MAX_JOB_IDS + 1];
        let e = check_job_ids(&more).unwrap_err();
        assert!(e.contains("at most 100000"), "{e}");
        let long = vec!["1".repeat(MAX_VALUE_BYTES + 1)];
        assert!(check_job_ids(&long).unwrap_err().contains("job id"));
    }

    #[test]
    fn an_alteration_has_a_submission_s_limits() {
        use crate::qalter::Alteration;
        assert!(check_alteration(&Alteration::default()).is_ok());
        let named = Alteration {
            name: Some("n".repeat(MAX_NAME_CHARS + 1)),
            ..Alteration::default()
        };
        assert!(check_alteration(&named).unwrap_err().contains("-N takes"));
        let account = Alteration {
            account: Some("a".repeat(MAX_VALUE_BYTES + 1)),
            ..Alteration::default()
        };
        let e = check_alteration(&account).unwrap_err();
        assert!(e.contains("the account (-A) is 4097 bytes"), "{e}");
        let many = Alteration {
            resources: vec![("ncpus".into(), "1".into()); MAX_RESOURCES + 1],
            ..Alteration::default()
        };
        assert!(check_alteration(&many).unwrap_err().contains("resources"));
        let long_name = Alteration {
            resources: vec![("x".repeat(MAX_VALUE_BYTES + 1), "1".into())],
            ..Alteration::default()
        };
        assert!(check_alteration(&long_name).unwrap_err().contains("name"));
    }
}
