//! pbs_rsub: make an advance or standing reservation (PBS Pro). The
//! command reads PBS's options into one request; the daemon finds nodes
//! for every occurrence and confirms the reservation at once, or refuses
//! it with the reason, so pbs_rsub prints `R12.server CONFIRMED` where
//! PBS, whose scheduler confirms later, prints `UNCONFIRMED`.
//!
//! `-R` and `-E` are read as PBS reads them (qsub's `-a` form, a time of
//! day already past meaning tomorrow) in `PBS_TZID`'s zone, else this
//! machine's; `PBS_TZID` also goes with the request as the zone a
//! standing reservation's rule (`-r`) is read in.

use std::process::ExitCode;

use chrono::{DateTime, Utc};
use clap::Parser;
use qmesh_proto::{ReservationInfo, ReservationRequest};

use crate::client::{self, CliError};
use crate::output::{self, Output, Tree};
use crate::resv::{self, Zone};

/// Make an advance or standing reservation.
///
/// Nodes are held for the reservation's users from START to END (or for
/// DURATION); they submit to its queue (`qsub -q R12`). Say how many
/// nodes with -lP N, -l nodes=N or -l select=N:...; -l nodeset=NAME
/// keeps it to one node set. Prints the reservation's id and CONFIRMED,
/// or why it cannot be had, and exits 1.
#[derive(Parser, Debug, Default)]
#[command(
    name = "pbs_rsub",
    version,
    after_help = "Times: [[[[CC]YY]MM]DD]hhmm[.SS] in PBS_TZID's zone (else this machine's); \
                  a time of day already past is tomorrow.\n\
                  Durations: [[hours:]minutes:]seconds. NQS form: -lP N (nodes)."
)]
pub struct Args {
    /// When it starts (default: now).
    #[arg(short = 'R', value_name = "START")]
    pub start: Option<String>,
    /// When it ends.
    #[arg(short = 'E', value_name = "END")]
    pub end: Option<String>,
    /// How long it lasts (instead of -E).
    #[arg(short = 'D', value_name = "DURATION")]
    pub duration: Option<String>,
    /// Resources: select=N:..., nodes=N, nodeset=NAME, walltime=DURATION; comma lists, may repeat.
    #[arg(short = 'l', value_name = "RES=VAL[,RES=VAL...]")]
    pub resources: Vec<String>,
    /// Who may submit to it: USER[,USER...] (default: you).
    #[arg(short = 'U', value_name = "USERS")]
    pub users: Vec<String>,
    /// Groups whose members may submit to it: GROUP[,GROUP...].
    #[arg(short = 'G', value_name = "GROUPS")]
    pub groups: Vec<String>,
    /// Its name.
    #[arg(short = 'N', value_name = "NAME")]
    pub name: Option<String>,
    /// A standing reservation: an RFC 5545 rule, e.g. "FREQ=WEEKLY;BYDAY=MO,WE;COUNT=10"
    /// (read in PBS_TZID's zone, else the server's calendar's).
    #[arg(short = 'r', value_name = "RRULE")]
    pub rrule: Option<String>,
    /// Accepted (PBS waits this long for confirmation; qmesh confirms at once).
    #[arg(short = 'I', value_name = "SECONDS", allow_negative_numbers = true)]
    pub wait: Option<String>,
    /// More attributes (PBS): qmove=JOBID makes an ASAP reservation of a
    /// queued job's nodes and wall time, at the earliest, and moves the job
    /// into it; others are accepted and not used, with a note.
    #[arg(short = 'W', value_name = "ATTR=VALUE")]
    pub attributes: Vec<String>,
    /// Mail points: accepted, no mail is sent.
    #[arg(short = 'm', value_name = "POINTS")]
    pub mail_points: Option<String>,
    /// Mail users: accepted, no mail is sent.
    #[arg(short = 'M', value_name = "USERS")]
    pub mail_users: Option<String>,
    /// Print the reservation as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Options whose next word is their value (for the NQS rewriting).
pub(crate) const TAKES_VALUE: [&str; 12] = [
    "-R", "-E", "-D", "-l", "-U", "-G", "-N", "-r", "-I", "-W", "-m", "-M",
];

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let words: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let words = match resv::rewrite_nqs(&words, &TAKES_VALUE) {
        Ok(words) => words,
        Err(message) => return usage_error(&message),
    };
    let args = Args::parse_from(std::iter::once("pbs_rsub".to_string()).chain(words));
    let request = match resv::env_tzid().and_then(|tzid| request(&args, tzid, Utc::now())) {
        Ok(request) => request,
        Err(message) => return usage_error(&message),
    };
    // The -W notes (a refused -W already failed `request`).
    for note in check_extended("pbs_rsub", &args.attributes)
        .map(|(notes, _)| notes)
        .unwrap_or_default()
    {
        eprintln!("{note}");
    }
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        Ok::<_, CliError>(jobs.submit_reservation(request).await?.into_inner())
    });
    match reply {
        Ok(info) => print_confirmed(&info, args.json, "pbs_rsub", ""),
        Err(err) => client::fail("pbs_rsub", &err),
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("pbs_rsub: {message}");
    ExitCode::from(2)
}

/// The request the options make; `tzid` is `PBS_TZID`'s zone.
pub fn request(
    args: &Args,
    tzid: Option<chrono_tz::Tz>,
    now: DateTime<Utc>,
) -> Result<ReservationRequest, String> {
    if let Some(wait) = &args.wait
        && wait.trim().parse::<i64>().is_err()
    {
        return Err(format!(
            "-I {wait}: give whole seconds, e.g. -I 60 (qmesh confirms at once, so it is not waited on)"
        ));
    }
    let zone = Zone::for_input(tzid);
    let (start, end) = resv::start_and_end(&zone, args.start.as_deref(), args.end.as_deref(), now)?;
    let resources = resv::read_resources(&args.resources)?;
    let duration = duration_of(args.duration.as_deref(), resources.walltime)?;
    let rrule = args.rrule.clone().unwrap_or_default();
    if args.rrule.is_some() && rrule.trim().is_empty() {
        return Err("-r needs a rule, e.g. -r \"FREQ=WEEKLY;BYDAY=MO;COUNT=4\"".into());
    }
    let (_, qmove_job) = check_extended("pbs_rsub", &args.attributes)?;
    Ok(ReservationRequest {
        qmove_job: qmove_job.unwrap_or_default(),
        start,
        end,
        duration,
        nodes: resources.nodes,
        resources: resources.text,
        users: resv::split_lists(&args.users),
        groups: resv::split_lists(&args.groups),
        name: args.name.clone().unwrap_or_default(),
        name_given: args.name.is_some(),
        rrule,
        time_zone: tzid.map(|z| z.name().to_string()).unwrap_or_default(),
        node_set: resources.node_set,
        ..ReservationRequest::default()
    })
}

/// The duration from `-D` or `-l walltime=` (PBS's `-D` sets walltime);
/// 0 when neither is given.
pub(crate) fn duration_of(given: Option<&str>, walltime: Option<u64>) -> Result<u64, String> {
    match (given.map(resv::parse_duration).transpose()?, walltime) {
        (Some(d), Some(w)) if d != w => Err(format!(
            "-D and -l walltime= both give the duration, differently ({d} and {w} seconds); give one"
        )),
        (Some(d), _) => Ok(d),
        (None, w) => Ok(w.unwrap_or(0)),
    }
}

/// `-W` values: `qmove=JOBID` makes an ASAP reservation for a queued job
/// (returned); PBS's other attributes are accepted and not used, each with
/// a note (returned) so no one is left to guess.
pub(crate) fn check_extended(
    cmd: &str,
    values: &[String],
) -> Result<(Vec<String>, Option<String>), String> {
    let mut notes = Vec::new();
    let mut qmove = None;
    for value in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        if value.is_empty() {
            continue;
        }
        let (name, arg) = value.split_once('=').unwrap_or((value, ""));
        if name.trim() == "qmove" {
            if arg.trim().is_empty() {
                return Err("-W qmove= needs a queued job's id, e.g. -W qmove=17".into());
            }
            qmove = Some(arg.trim().to_string());
            continue;
        }
        notes.push(format!("{cmd}: -W {value} is not used by qmesh; ignored"));
    }
    Ok((notes, qmove))
}

/// `R12.server CONFIRMED` (pbs_ralter: with its `pbs_ralter: ` prefix), or
/// the reservation as JSON.
pub(crate) fn print_confirmed(
    info: &ReservationInfo,
    json: bool,
    cmd: &str,
    prefix: &str,
) -> ExitCode {
    let out = Confirmed { info, prefix };
    match output::emit(&out, json) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => client::fail(cmd, &CliError::msg(format!("cannot write the answer: {e}"))),
    }
}

struct Confirmed<'a> {
    info: &'a ReservationInfo,
    prefix: &'a str,
}

impl Output for Confirmed<'_> {
    fn text(&self) -> String {
        confirmed_line(self.info, self.prefix)
    }

    fn json(&self) -> Tree {
        resv::info_json(self.info)
    }
}

pub(crate) fn confirmed_line(info: &ReservationInfo, prefix: &str) -> String {
    format!(
        "{prefix}{} {}\n",
        info.id,
        resv::confirmation_word(&info.state)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 10, 11, 15, 0).unwrap()
    }

    fn parse(line: &str) -> Args {
        let words: Vec<String> = line.split_whitespace().map(String::from).collect();
        let words = resv::rewrite_nqs(&words, &TAKES_VALUE).unwrap();
        Args::try_parse_from(std::iter::once("pbs_rsub".to_string()).chain(words)).unwrap()
    }

    fn req(line: &str) -> Result<ReservationRequest, String> {
        request(&parse(line), Some(chrono_tz::UTC), now())
    }

    #[test]
    fn a_plain_reservation() {
        let r = req("-R 1300 -E 1500 -lP 4 -N demo -U ann,bob -U cy -G staff").unwrap();
        assert_eq!(
            r.start,
            Utc.with_ymd_and_hms(2026, 6, 10, 13, 0, 0)
                .unwrap()
                .timestamp()
        );
        assert_eq!(r.end - r.start, 7200);
        assert_eq!((r.nodes, r.resources.as_str()), (4, "nodes=4"));
        assert_eq!((r.name.as_str(), r.name_given), ("demo", true));
        assert_eq!(r.users, vec!["ann", "bob", "cy"]);
        assert_eq!(r.groups, vec!["staff"]);
        assert_eq!(r.time_zone, "UTC");
        assert_eq!(r.duration, 0);
        assert!(r.id.is_empty() && r.rrule.is_empty() && r.node_set.is_empty());
    }

    #[test]
    fn durations_select_and_node_sets() {
        let r = req("-D 1:30:00 -l select=2:ncpus=8+1:ncpus=4 -l nodeset=fast").unwrap();
        assert_eq!((r.start, r.end, r.duration), (0, 0, 5400));
        assert_eq!(r.nodes, 3);
        assert_eq!(r.node_set, "fast");
        assert_eq!(r.resources, "select=2:ncpus=8+1:ncpus=4,nodeset=fast");
        assert!(!r.name_given);
        let r = req("-l nodes=2,walltime=2:00:00").unwrap();
        assert_eq!(r.duration, 7200);
        assert_eq!(req("-D 3600 -l walltime=1:00:00").unwrap().duration, 3600);
        let err = req("-D 60 -l walltime=1:00:00").unwrap_err();
        assert!(err.contains("give one"), "{err}");
    }

    #[test]
    fn standing_reservations_carry_the_rule_and_zone() {
        let a = parse("-R 0900 -D 3600 -lP 2 -r FREQ=WEEKLY;BYDAY=MO;COUNT=4");
        let r = request(&a, Some(chrono_tz::Europe::London), now()).unwrap();
        assert_eq!(r.rrule, "FREQ=WEEKLY;BYDAY=MO;COUNT=4");
        assert_eq!(r.time_zone, "Europe/London");
        // 09:00 London (BST) tomorrow: 08:00 UTC.
        assert_eq!(
            r.start,
            Utc.with_ymd_and_hms(2026, 6, 11, 8, 0, 0)
                .unwrap()
                .timestamp()
        );
        let r = request(&a, None, now()).unwrap();
        assert!(r.time_zone.is_empty(), "the calendar's zone");
    }

    #[test]
    fn compatibility_options() {
        // -m, -M and -I are accepted and change nothing.
        let plain = req("-lP 2").unwrap();
        assert_eq!(req("-lP 2 -m abe -M ann@x -I 30").unwrap(), plain);
        assert_eq!(req("-lP 2 -I -10").unwrap(), plain);
        let err = req("-lP 2 -I soon").unwrap_err();
        assert!(err.starts_with("-I soon: give whole seconds"), "{err}");
        assert_eq!(req("-W qmove=17.server").unwrap().qmove_job, "17.server");
        assert!(
            req("-W qmove=")
                .unwrap_err()
                .contains("needs a queued job's id")
        );
        assert_eq!(req("-lP 2 -W delete_idle_time=60").unwrap(), plain);
        assert_eq!(
            check_extended("pbs_rsub", &["delete_idle_time=60".into()]).unwrap(),
            (
                vec!["pbs_rsub: -W delete_idle_time=60 is not used by qmesh; ignored".to_string()],
                None
            )
        );
    }

    #[test]
    fn bad_options_fail_before_sending() {
        assert!(req("-R 2561 -lP 2").unwrap_err().starts_with("bad -R time"));
        assert!(
            req("-D 1h -lP 2")
                .unwrap_err()
                .starts_with("bad -D duration")
        );
        assert!(req("-l nodes").unwrap_err().contains("NAME=VALUE"));
        assert!(Args::try_parse_from(["pbs_rsub", "extra"]).is_err());
    }

    #[test]
    fn the_confirmation_line() {
        let info = ReservationInfo {
            id: "R12.server".into(),
            state: "RESV_RUNNING".into(),
            ..ReservationInfo::default()
        };
        assert_eq!(confirmed_line(&info, ""), "R12.server CONFIRMED\n");
        assert_eq!(
            confirmed_line(&info, "pbs_ralter: "),
            "pbs_ralter: R12.server CONFIRMED\n"
        );
    }
}
