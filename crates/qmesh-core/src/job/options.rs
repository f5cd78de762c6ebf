//! What qsub's PBS options ask of a job's run, beyond resources: the shell
//! (`-S`), mail (`-m`, `-M`), output handling (`-k`, `-j eo`), checkpoints
//! (`-c`), the file mode mask (`-W umask=`), the group (`-W group_list=`)
//! and the directory it starts in (Torque's `-d`/`-w`).
//!
//! Each value is checked here, in the core, so qsub and qalter refuse the
//! same things with the same words. What qmesh accepts but does not do
//! (checkpoints) becomes a note that the job's comment shows.

use serde::{Deserialize, Serialize};

/// The options as a job keeps them; all empty for a job that gave none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobOptions {
    /// `-S path[@host][,path@host...]` (PBS `Shell_Path_List`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shell: Vec<String>,
    /// `-m`: some of `a` (abort), `b` (begin), `e` (end), `f` (Torque:
    /// failed), `j` (PBS Pro: sub-jobs), or `n` (none). `None`: PBS's `a`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mail_points: Option<String>,
    /// `-M user[@host],...`; empty: the owner.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mail_users: Vec<String>,
    /// `-k`: o, e, oe, eo, n, d, ... as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_files: Option<String>,
    /// `-c`: as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// `-W umask=`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub umask: Option<u32>,
    /// `-W group_list=` as given; the group the job runs with is its
    /// owner's group (PBS `egroup`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_list: Option<String>,
    /// `-d`/`-w`: where the job starts, absolute. `None`: the server's
    /// rule (PBS: the home directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_dir: Option<String>,
    /// `-j eo`: standard output joined into standard error.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub join_to_error: bool,
    /// What was accepted but is not done, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// `qsub -I`: the job runs a login shell on a terminal that its qsub
    /// attaches to (PBS's `interactive = True`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interactive: bool,
    /// `-W sandbox=PRIVATE`: the job starts in a directory of its own
    /// under its owner's home (`pbs.JOBID`), which its host removes after
    /// the job's end; `start_dir` does not apply.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sandbox_private: bool,
    /// Submitted by sbatch: what it asked in Slurm's terms (`slurm.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<super::slurm::SlurmJob>,
}

impl JobOptions {
    pub fn is_default(&self) -> bool {
        *self == JobOptions::default()
    }

    /// Whether mail goes out at `point` (`a`, `b`, `e`).
    pub fn mails_at(&self, point: char) -> bool {
        match &self.mail_points {
            None => point == 'a',
            Some(p) => p.contains(point) || (point == 'e' && p.contains('f')),
        }
    }
}

/// A job's options, allocated only when it has some: most jobs give
/// none, and a job record kept per job (a hundred thousand in a daemon,
/// millions in a replay) should not carry two hundred empty bytes.
/// Reads see the empty options when there are none; a write makes them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options(Option<Box<JobOptions>>);

/// What a job without options reads.
static NONE: JobOptions = JobOptions {
    shell: Vec::new(),
    mail_points: None,
    mail_users: Vec::new(),
    keep_files: None,
    checkpoint: None,
    umask: None,
    group_list: None,
    start_dir: None,
    join_to_error: false,
    notes: Vec::new(),
    interactive: false,
    sandbox_private: false,
    slurm: None,
};

impl Options {
    pub fn is_default(&self) -> bool {
        self.0.as_deref().is_none_or(JobOptions::is_default)
    }
}

impl From<JobOptions> for Options {
    fn from(opts: JobOptions) -> Options {
        Options((!opts.is_default()).then(|| Box::new(opts)))
    }
}

impl std::ops::Deref for Options {
    type Target = JobOptions;
    fn deref(&self) -> &JobOptions {
        self.0.as_deref().unwrap_or(&NONE)
    }
}

impl std::ops::DerefMut for Options {
    fn deref_mut(&mut self) -> &mut JobOptions {
        self.0.get_or_insert_with(Box::default)
    }
}

impl Serialize for Options {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Options {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Options, D::Error> {
        JobOptions::deserialize(d).map(Options::from)
    }
}

/// `-S`: absolute paths, each optionally `@host`.
pub fn parse_shell(text: &str) -> Result<Vec<String>, String> {
    let entries: Vec<String> = text
        .split(',')
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
        .collect();
    if entries.is_empty() {
        return Err("-S needs a shell, e.g. -S /bin/bash".into());
    }
    for entry in &entries {
        let path = entry.split('@').next().unwrap_or_default();
        if !path.starts_with('/') {
            return Err(format!(
                "-S {entry}: the shell must be an absolute path, e.g. -S /bin/bash"
            ));
        }
    }
    Ok(entries)
}

/// The shell to use on `host`, from a `-S` list: the entry naming the
/// host, else the first that names none.
pub fn shell_for<'a>(list: &'a [String], host: &str) -> Option<&'a str> {
    let split = |e: &'a String| match e.split_once('@') {
        Some((path, h)) => (path, Some(h)),
        None => (e.as_str(), None),
    };
    list.iter()
        .map(split)
        .find(|(_, h)| *h == Some(host))
        .or_else(|| list.iter().map(split).find(|(_, h)| h.is_none()))
        .map(|(path, _)| path)
}

/// `-m`: `n`, or some of a, b, e (f and j as Torque and PBS Pro add).
pub fn parse_mail_points(text: &str) -> Result<String, String> {
    let text = text.trim();
    let ok = text == "n"
        || (!text.is_empty()
            && text
                .chars()
                .all(|c| matches!(c, 'a' | 'b' | 'e' | 'f' | 'j')));
    if ok {
        Ok(text.to_string())
    } else {
        Err(format!(
            "-m {text}: write n (no mail) or some of a (abort), b (begin), e (end), e.g. -m abe"
        ))
    }
}

/// `-M`: mail addresses or user names, comma-separated.
pub fn parse_mail_users(text: &str) -> Result<Vec<String>, String> {
    let users: Vec<String> = text
        .split(',')
        .map(|u| u.trim().to_string())
        .filter(|u| !u.is_empty())
        .collect();
    if users.is_empty() {
        return Err("-M needs a user or an address, e.g. -M alice@example.org".into());
    }
    if let Some(bad) = users.iter().find(|u| {
        u.chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '\'')
    }) {
        return Err(format!(
            "-M {bad}: an address may not contain blanks or quotes"
        ));
    }
    Ok(users)
}

/// `-k`: PBS Pro's o, e, d, n in any combination that makes sense, and
/// Torque's oe/eo.
pub fn parse_keep(text: &str) -> Result<String, String> {
    let text = text.trim();
    let ok = text == "n"
        || (!text.is_empty()
            && text.chars().all(|c| matches!(c, 'o' | 'e' | 'd'))
            && text.len() <= 3);
    if ok {
        Ok(text.to_string())
    } else {
        Err(format!(
            "-k {text}: write n, or some of o (output), e (error), d (direct write), e.g. -k oe"
        ))
    }
}

/// `-c`: PBS Pro's and Torque's checkpoint forms.
pub fn parse_checkpoint(text: &str) -> Result<String, String> {
    let text = text.trim();
    let word = text.split('=').next().unwrap_or_default();
    let known = [
        "n", "s", "c", "w", "u", "none", "enabled", "shutdown", "periodic", "interval", "depth",
        "dir",
    ];
    let ok = known.contains(&word)
        || text
            .split(',')
            .all(|part| known.contains(&part.split('=').next().unwrap_or_default()));
    if ok && !text.is_empty() {
        Ok(text.to_string())
    } else {
        Err(format!(
            "-c {text}: write n, s, c, c=MINUTES or w (PBS Pro), or enabled, shutdown, periodic, interval=MINUTES (Torque)"
        ))
    }
}

/// Whether a `-c` value asks for checkpoints.
pub fn wants_checkpoints(text: &str) -> bool {
    !matches!(text, "n" | "u" | "none")
}

/// `-W umask=`: octal, at most 0777.
pub fn parse_umask(text: &str) -> Result<u32, String> {
    match u32::from_str_radix(text.trim(), 8) {
        Ok(mask) if mask <= 0o777 => Ok(mask),
        _ => Err(format!(
            "-W umask={text}: write an octal mask up to 0777, e.g. umask=022"
        )),
    }
}

/// `-W group_list=group[@host][,group@host...]`: the group for `host`
/// (the one naming no host when none names it).
pub fn group_for<'a>(text: &'a str, host: &str) -> Option<&'a str> {
    let entries: Vec<(&str, Option<&str>)> = text
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| match e.split_once('@') {
            Some((g, h)) => (g, Some(h)),
            None => (e, None),
        })
        .collect();
    entries
        .iter()
        .find(|(_, h)| *h == Some(host))
        .or_else(|| entries.iter().find(|(_, h)| h.is_none()))
        .or_else(|| entries.first())
        .map(|(g, _)| *g)
}

/// `-u user[@host][,...]`: the users it names.
pub fn users_in(text: &str) -> Vec<&str> {
    text.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| e.split('@').next().unwrap_or(e))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_take_room_only_when_given() {
        let none = Options::from(JobOptions::default());
        assert!(none.is_default() && none.0.is_none());
        assert!(none.mails_at('a') && none.shell.is_empty());
        let mut some = Options::default();
        some.notes.push("a note".into());
        assert!(!some.is_default());
        let json = serde_json::to_string(&some).unwrap();
        assert_eq!(serde_json::from_str::<Options>(&json).unwrap(), some);
        assert!(std::mem::size_of::<Options>() <= 8);
    }

    #[test]
    fn shells_by_host() {
        let list = parse_shell("/bin/bash,/bin/zsh@login2").unwrap();
        assert_eq!(shell_for(&list, "login2"), Some("/bin/zsh"));
        assert_eq!(shell_for(&list, "n1"), Some("/bin/bash"));
        assert!(parse_shell("bash").unwrap_err().contains("absolute"));
    }

    #[test]
    fn mail_and_keep_and_checkpoint_forms() {
        assert_eq!(parse_mail_points("abe").unwrap(), "abe");
        assert_eq!(parse_mail_points("n").unwrap(), "n");
        assert!(parse_mail_points("x").unwrap_err().contains("-m abe"));
        assert!(parse_mail_points("").is_err());
        let opts = JobOptions {
            mail_points: Some("be".into()),
            ..JobOptions::default()
        };
        assert!(opts.mails_at('b') && opts.mails_at('e') && !opts.mails_at('a'));
        assert!(
            JobOptions::default().mails_at('a'),
            "PBS mails on abort by default"
        );
        assert_eq!(
            parse_mail_users("a@x.org, bob").unwrap(),
            vec!["a@x.org", "bob"]
        );
        assert!(parse_mail_users(" ").is_err());
        for ok in ["oe", "eo", "n", "d", "od"] {
            assert!(parse_keep(ok).is_ok(), "{ok}");
        }
        assert!(parse_keep("x").is_err());
        for ok in [
            "n",
            "s",
            "c=30",
            "w",
            "enabled",
            "shutdown,periodic",
            "interval=10",
        ] {
            assert!(parse_checkpoint(ok).is_ok(), "{ok}");
        }
        assert!(parse_checkpoint("always").is_err());
        assert!(!wants_checkpoints("n") && wants_checkpoints("s"));
    }

    #[test]
    fn umask_and_groups() {
        assert_eq!(parse_umask("022").unwrap(), 0o22);
        assert_eq!(parse_umask("0077").unwrap(), 0o77);
        assert!(parse_umask("888").is_err());
        assert!(parse_umask("1777").is_err());
        assert_eq!(group_for("proj@login1,staff", "login1"), Some("proj"));
        assert_eq!(group_for("proj@login1,staff", "login2"), Some("staff"));
        assert_eq!(group_for("proj@login1", "login2"), Some("proj"));
        assert_eq!(users_in("alice@login1,bob"), vec!["alice", "bob"]);
    }
}
