//! qstat's options as PBS combines them, turned into a [`Plan`]: what to
//! ask the daemon and which form to print.
//!
//! PBS's rules: `-a`, `-i`, `-r`, `-H`, `-u`, `-n`, `-s`, `-T`, `-G` and
//! `-M` choose the alternate table (so `qstat -u $USER` and `qstat -n`
//! print it); `-i`, `-r` and `-H` filter by state and only one of them
//! (or `-a`, `-q`) may be given; `-1` goes with `-n`, `-s` or (Torque)
//! `-f`; `-w` does not go with `-F`; `-B`, `-Q` and `-q` each show
//! something else. Filters (`-u`, `-i`, `-r`, `-H`, `-J`) apply to
//! listings and destinations, never to jobs named by id. Where PBS and
//! Torque differ, Torque's reading is taken when PBS's would refuse:
//! `-f -u` is the full form of those users' jobs, `-f -1` is unfolded,
//! and `-F` implies `-f`.

use super::Args;
use super::alternate::AltStyle;
use super::full_text::FullStyle;
use super::job_table::TableStyle;
use super::sizes::SizeUnit;

/// What qstat asks and how it prints it.
#[derive(Debug, PartialEq)]
pub enum Plan {
    Jobs(JobQuery, JobForm),
    /// Queue names (all when empty).
    Queues(Vec<String>, QueueForm),
    /// Server names (this server when empty).
    Server(Vec<String>, ServerForm),
}

/// Which jobs.
#[derive(Debug, Default, PartialEq)]
pub struct JobQuery {
    /// Named job ids, in the order to show them.
    pub ids: Vec<String>,
    /// Destinations: the jobs in these queues.
    pub queues: Vec<String>,
    /// `@SERVER` was named: every job, besides those named.
    pub all: bool,
    pub users: Vec<String>,
    /// State letters to keep ("" for all).
    pub states: String,
    pub include_finished: bool,
    /// `-J`: only job arrays.
    pub arrays_only: bool,
    /// `-t`: arrays' sub-jobs after each array.
    pub subjobs: bool,
    /// Torque's `-e`: only jobs in execution queues.
    pub execution_only: bool,
    /// The plain table shows little of each job: ask for only that.
    pub brief: bool,
}

#[derive(Debug, PartialEq)]
pub enum JobForm {
    Json,
    Full(FullStyle),
    Table(TableStyle),
    Alternate(AltStyle),
    NodesView { nodes: bool },
}

#[derive(Debug, PartialEq)]
pub enum QueueForm {
    Json,
    Full(FullStyle),
    Table,
    /// `-q`.
    Alternate,
}

#[derive(Debug, PartialEq)]
pub enum ServerForm {
    Json,
    Full(FullStyle),
    Table,
}

/// The flags once `-W`'s letters are added in.
#[derive(Default)]
struct Flags {
    a: bool,
    i: bool,
    r: bool,
    h: bool,
    n: bool,
    s: bool,
    q: bool,
    g: bool,
    m: bool,
    one: bool,
    users: Vec<String>,
}

impl Flags {
    fn of(args: &Args) -> Result<Flags, String> {
        let mut f = Flags {
            a: args.alternate,
            i: args.idle,
            r: args.running,
            h: args.history_only,
            n: args.nodes,
            s: args.comments,
            q: args.queue_alternate,
            g: args.gigabytes,
            m: args.megawords,
            one: args.one_line,
            users: args.users.clone(),
        };
        for letters in &args.site {
            for (at, c) in letters.char_indices() {
                match c {
                    'a' => f.a = true,
                    'i' => f.i = true,
                    'r' => f.r = true,
                    'H' => f.h = true,
                    'n' => f.n = true,
                    's' => f.s = true,
                    'q' => f.q = true,
                    'G' => f.g = true,
                    'M' => f.m = true,
                    '1' => f.one = true,
                    ' ' => {}
                    'u' => {
                        // As in PBS, the rest of the word is the user list.
                        f.users.push(letters[at + 1..].trim().to_string());
                        break;
                    }
                    other => {
                        return Err(format!(
                            "-W {letters}: unknown letter '{other}'; -W takes PBS's display \
                             letters a, i, r, H, n, s, q, G, M, 1 and u USERS (last)"
                        ));
                    }
                }
            }
        }
        Ok(f)
    }
}

/// The plan for `args`, or why the options do not go together (the
/// message follows `qstat: `).
pub fn plan(args: &Args) -> Result<Plan, String> {
    let f = Flags::of(args)?;
    if args.disk_reservation {
        return Err(
            "-R (Torque's disk reservation columns) is not available: qmesh reserves no \
             disk; use -a for the alternate table"
                .to_string(),
        );
    }
    let format = match args.format.as_deref().map(str::to_ascii_lowercase) {
        None => None,
        Some(f) if f == "default" => None,
        Some(f) if f == "json" || f == "dsv" => Some(f),
        Some(other) => {
            return Err(format!(
                "-F {other}: unknown format; use -F json, -F dsv or -F default"
            ));
        }
    };
    if args.delimiter.is_some() && format.as_deref() != Some("dsv") {
        return Err("-D sets the delimiter of -F dsv; add -F dsv".to_string());
    }
    let json = args.json || format.as_deref() == Some("json");
    let dsv = format.as_deref() == Some("dsv");
    let chosen: Vec<&str> = [
        (f.a, "-a"),
        (f.i, "-i"),
        (f.r, "-r"),
        (f.q, "-q"),
        (f.h, "-H"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    if chosen.len() > 1 {
        return Err(conflict(&format!(
            "{} choose different listings; use one of -a, -i, -r, -q and -H",
            chosen.join(" and ")
        )));
    }
    if f.g && f.m {
        return Err(conflict("-G and -M choose different units; use one"));
    }
    if f.q && args.full {
        return Err(conflict(
            "-q is its own listing and has no full form; use -Q -f",
        ));
    }
    if f.one && !(f.n || f.s || args.full) {
        return Err(conflict("-1 goes with -n, -s or -f"));
    }
    if args.wide && (json || dsv) {
        return Err("option w cannot be used with -F".to_string());
    }
    let objects: Vec<&str> = [(args.server, "-B"), (args.queues, "-Q"), (f.q, "-q")]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
    if objects.len() > 1 {
        return Err(conflict(&format!(
            "{} show different things; use one",
            objects.join(" and ")
        )));
    }
    let job_display =
        f.a || f.i || f.r || f.h || f.n || f.s || args.estimated || !f.users.is_empty();
    if (args.server || args.queues) && (job_display || f.g || f.m) {
        return Err(conflict(&format!(
            "{} shows {}; the job table's options do not apply",
            objects[0],
            if args.server { "the server" } else { "queues" }
        )));
    }
    let full_style = || {
        if dsv {
            FullStyle::Dsv(args.delimiter.clone().unwrap_or_else(|| "|".to_string()))
        } else if args.wide || f.one {
            FullStyle::OneLine
        } else {
            FullStyle::Folded
        }
    };
    if args.server {
        let form = if json {
            ServerForm::Json
        } else if args.full || dsv {
            ServerForm::Full(full_style())
        } else {
            ServerForm::Table
        };
        return Ok(Plan::Server(args.operands.clone(), form));
    }
    if args.queues || f.q {
        let form = if json {
            QueueForm::Json
        } else if f.q {
            QueueForm::Alternate
        } else if args.full || dsv {
            QueueForm::Full(full_style())
        } else {
            QueueForm::Table
        };
        return Ok(Plan::Queues(queue_names(&args.operands), form));
    }
    let alternate = f.a
        || f.i
        || f.r
        || f.h
        || f.n
        || f.s
        || args.estimated
        || f.g
        || f.m
        || (!f.users.is_empty() && !args.full);
    if args.nodes_view {
        let display = [
            (args.full, "-f"),
            (f.a, "-a"),
            (f.s, "-s"),
            (f.one, "-1"),
            (args.estimated, "-T"),
            (args.percent, "-p"),
            (args.wide, "-w"),
            (f.g, "-G"),
            (f.m, "-M"),
            (args.long_names, "-l"),
            (json || dsv, "-F/--json"),
        ];
        if let Some((_, name)) = display.iter().find(|(on, _)| *on) {
            return Err(conflict(&format!(
                "--nodes-view is its own table; {name} belongs to another form"
            )));
        }
    }
    let form = if json {
        JobForm::Json
    } else if dsv {
        JobForm::Full(full_style())
    } else if args.nodes_view {
        JobForm::NodesView { nodes: f.n }
    } else if alternate && !(args.wide && args.full) {
        JobForm::Alternate(AltStyle {
            wide: args.wide,
            nodes: f.n,
            one_line: f.one,
            comments: f.s,
            estimated: args.estimated,
            sizes: if f.g {
                SizeUnit::Gigabytes
            } else if f.m {
                SizeUnit::Megawords
            } else {
                SizeUnit::AsGiven
            },
        })
    } else if args.full {
        JobForm::Full(full_style())
    } else {
        JobForm::Table(TableStyle {
            wide: args.wide,
            percent: args.percent,
            long_names: args.long_names,
        })
    };
    let mut query = JobQuery {
        users: f
            .users
            .iter()
            .flat_map(|u| u.split(','))
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_string)
            .collect(),
        states: if f.i {
            "EHQTW"
        } else if f.r {
            "RS"
        } else if f.h {
            "F"
        } else {
            ""
        }
        .to_string(),
        include_finished: args.history || f.h,
        arrays_only: args.arrays_only,
        subjobs: args.subjobs,
        execution_only: args.execution_only,
        ..JobQuery::default()
    };
    for operand in &args.operands {
        let operand = operand.trim();
        if operand.starts_with(|c: char| c.is_ascii_digit()) {
            // `17.server@server`: the job at that server, which is ours.
            let id = operand.split_once('@').map_or(operand, |(id, _)| id);
            query.ids.push(id.to_string());
        } else {
            match operand.split_once('@') {
                Some(("", _)) => query.all = true,
                Some((queue, _)) => query.queues.push(queue.to_string()),
                None => query.queues.push(operand.to_string()),
            }
        }
    }
    if args.sort_ids {
        query.ids.sort_by_key(|id| sequence_number(id));
    }
    query.brief = matches!(form, JobForm::Table(_));
    Ok(Plan::Jobs(query, form))
}

/// `-Q` and `-q` operands: `QUEUE`, `QUEUE@SERVER`, or `@SERVER` for all.
fn queue_names(operands: &[String]) -> Vec<String> {
    let mut names = Vec::new();
    for operand in operands {
        match operand.trim().split_once('@') {
            Some(("", _)) => return Vec::new(),
            Some((queue, _)) => names.push(queue.to_string()),
            None => names.push(operand.trim().to_string()),
        }
    }
    names
}

/// The number of `17.server`, for `-E`'s order.
fn sequence_number(id: &str) -> u64 {
    let digits: String = id.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or(u64::MAX)
}

fn conflict(why: &str) -> String {
    format!("conflicting options: {why}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan_of(line: &[&str]) -> Result<Plan, String> {
        let mut argv = vec!["qstat"];
        argv.extend_from_slice(line);
        plan(&Args::try_parse_from(argv).expect("parses"))
    }

    fn job_plan(line: &[&str]) -> (JobQuery, JobForm) {
        match plan_of(line) {
            Ok(Plan::Jobs(query, form)) => (query, form),
            other => panic!("{line:?}: {other:?}"),
        }
    }

    #[test]
    fn no_option_is_pbss_default_table_of_all_jobs() {
        let (query, form) = job_plan(&[]);
        assert_eq!(
            query,
            JobQuery {
                brief: true,
                ..JobQuery::default()
            },
            "the plain table asks for little of each job"
        );
        assert_eq!(form, JobForm::Table(TableStyle::default()));
        for full in [&["-f"][..], &["-a"], &["-F", "json"], &["-s"], &["-n"]] {
            assert!(!job_plan(full).0.brief, "{full:?} shows more");
        }
    }

    #[test]
    fn the_options_that_imply_the_alternate_table() {
        for line in [
            &["-a"][..],
            &["-n"],
            &["-s"],
            &["-u", "bob"],
            &["-i"],
            &["-r"],
            &["-H"],
            &["-T"],
            &["-G"],
            &["-an1"],
            &["-rn"],
            &["-W", "a"],
        ] {
            let (_, form) = job_plan(line);
            assert!(matches!(form, JobForm::Alternate(_)), "{line:?}: {form:?}");
        }
        let (_, form) = job_plan(&["-an1"]);
        let JobForm::Alternate(style) = form else {
            unreachable!()
        };
        assert!(style.nodes && style.one_line && !style.comments);
    }

    #[test]
    fn filters_become_the_request() {
        let (query, _) = job_plan(&["-i", "-u", "alice,bob@login1", "-u", "carol"]);
        assert_eq!(query.states, "EHQTW");
        assert_eq!(query.users, ["alice", "bob@login1", "carol"]);
        let (query, _) = job_plan(&["-r"]);
        assert_eq!(query.states, "RS");
        let (query, _) = job_plan(&["-H"]);
        assert_eq!((query.states.as_str(), query.include_finished), ("F", true));
        let (query, form) = job_plan(&["-fx", "3", "1"]);
        assert!(query.include_finished);
        assert_eq!(query.ids, ["3", "1"]);
        assert_eq!(form, JobForm::Full(FullStyle::Folded));
        let (query, _) = job_plan(&["-E", "12.s", "3", "7.s@s"]);
        assert_eq!(query.ids, ["3", "7.s", "12.s"]);
        let (query, _) = job_plan(&["-W", "ru alice, bob"]);
        assert_eq!((query.states.as_str(), query.users.len()), ("RS", 2));
    }

    #[test]
    fn operands_are_job_ids_or_destinations() {
        let (query, _) = job_plan(&["17", "batch", "debug@server", "18.server"]);
        assert_eq!(query.ids, ["17", "18.server"]);
        assert_eq!(query.queues, ["batch", "debug"]);
        assert!(!query.all);
        let (query, _) = job_plan(&["@server"]);
        assert!(query.all && query.ids.is_empty() && query.queues.is_empty());
    }

    #[test]
    fn full_json_and_dsv_forms() {
        assert_eq!(job_plan(&["-x", "-f", "-F", "json", "1"]).1, JobForm::Json);
        assert_eq!(job_plan(&["--json"]).1, JobForm::Json);
        assert_eq!(job_plan(&["-F", "JSON"]).1, JobForm::Json);
        assert_eq!(
            job_plan(&["-f", "-F", "dsv", "-D", ";"]).1,
            JobForm::Full(FullStyle::Dsv(";".into()))
        );
        assert_eq!(
            job_plan(&["-F", "dsv"]).1,
            JobForm::Full(FullStyle::Dsv("|".into()))
        );
        assert_eq!(job_plan(&["-fw"]).1, JobForm::Full(FullStyle::OneLine));
        assert_eq!(job_plan(&["-f", "-1"]).1, JobForm::Full(FullStyle::OneLine));
        // Torque: the full form of one user's jobs.
        let (query, form) = job_plan(&["-f", "-u", "bob"]);
        assert_eq!(
            (form, query.users),
            (JobForm::Full(FullStyle::Folded), vec!["bob".into()])
        );
        // PBS: -n after -f still gives the alternate table.
        assert!(matches!(job_plan(&["-f", "-n"]).1, JobForm::Alternate(_)));
    }

    #[test]
    fn queue_and_server_plans() {
        assert_eq!(plan_of(&["-Q"]), Ok(Plan::Queues(vec![], QueueForm::Table)));
        assert_eq!(
            plan_of(&["-Qf", "batch@server"]),
            Ok(Plan::Queues(
                vec!["batch".into()],
                QueueForm::Full(FullStyle::Folded)
            ))
        );
        assert_eq!(
            plan_of(&["-q", "-G"]),
            Ok(Plan::Queues(vec![], QueueForm::Alternate))
        );
        assert_eq!(
            plan_of(&["-Q", "-F", "json"]),
            Ok(Plan::Queues(vec![], QueueForm::Json))
        );
        assert_eq!(
            plan_of(&["-B"]),
            Ok(Plan::Server(vec![], ServerForm::Table))
        );
        assert_eq!(
            plan_of(&["-Bf", "server"]),
            Ok(Plan::Server(
                vec!["server".into()],
                ServerForm::Full(FullStyle::Folded)
            ))
        );
        assert_eq!(
            plan_of(&["-B", "-f", "-F", "dsv"]),
            Ok(Plan::Server(
                vec![],
                ServerForm::Full(FullStyle::Dsv("|".into()))
            ))
        );
    }

    #[test]
    fn nodes_view_is_the_kept_qmesh_table() {
        assert_eq!(
            job_plan(&["--nodes-view"]).1,
            JobForm::NodesView { nodes: false }
        );
        let (query, form) = job_plan(&["--nodes-view", "-n", "-x", "-u", "bob"]);
        assert_eq!(form, JobForm::NodesView { nodes: true });
        assert!(query.include_finished);
        let err = plan_of(&["--nodes-view", "-a"]).unwrap_err();
        assert!(err.contains("--nodes-view") && err.contains("-a"), "{err}");
    }

    #[test]
    fn options_that_do_not_go_together() {
        for (line, named) in [
            (&["-a", "-i"][..], "-a and -i"),
            (&["-r", "-H"], "-r and -H"),
            (&["-G", "-M"], "-G and -M"),
            (&["-q", "-f"], "-q"),
            (&["-1"], "-1 goes with"),
            (&["-B", "-Q"], "-B and -Q"),
            (&["-Q", "-a"], "-Q shows queues"),
            (&["-B", "-u", "bob"], "-B shows the server"),
        ] {
            let err = plan_of(line).unwrap_err();
            assert!(err.starts_with("conflicting options: "), "{line:?}: {err}");
            assert!(err.contains(named), "{line:?}: {err}");
        }
        assert_eq!(
            plan_of(&["-w", "-F", "json"]).unwrap_err(),
            "option w cannot be used with -F"
        );
        assert!(
            plan_of(&["-F", "xml"])
                .unwrap_err()
                .contains("-F xml: unknown format")
        );
        assert!(plan_of(&["-D", ";"]).unwrap_err().contains("add -F dsv"));
        assert!(
            plan_of(&["-W", "z"])
                .unwrap_err()
                .contains("unknown letter 'z'")
        );
        assert!(
            plan_of(&["-R"])
                .unwrap_err()
                .contains("Torque's disk reservation")
        );
    }

    #[test]
    fn accepted_options_that_change_nothing_here() {
        for line in [
            &["-t"][..],
            &["-c"],
            &["-e"],
            &["-J"],
            &["-l"],
            &["-p"],
            &["-E"],
        ] {
            assert!(plan_of(line).is_ok(), "{line:?}");
        }
        assert!(job_plan(&["-J"]).0.arrays_only);
        assert!(job_plan(&["-e"]).0.execution_only);
    }
}
