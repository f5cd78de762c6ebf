//! pbs_ralter: change a reservation (PBS Pro): its start, end or
//! duration, name, users or groups. The daemon confirms the changed
//! reservation at once (nodes found for the new times) or refuses and
//! leaves it as it was; its node count cannot change (delete it and make
//! another). On success it prints PBS's `pbs_ralter: R12.server
//! CONFIRMED`.
//!
//! PBS's `-U +ann,-bob` (add and remove) is read here: the reservation's
//! list is fetched, changed and sent whole, since the request carries a
//! list, not changes to one.

use std::process::ExitCode;

use chrono::{DateTime, Utc};
use clap::Parser;
use qmesh_proto::{ReservationInfo, ReservationRequest, ReservationStatusRequest};

use crate::client::{self, CliError};
use crate::pbs_rsub;
use crate::resv::{self, Zone};

/// Change a reservation.
///
/// Gives it a new start (-R), end (-E) or duration (-D), name (-N), users
/// (-U) or groups (-G). A running reservation keeps its start; its end
/// may move if its nodes are free until then. Prints "pbs_ralter: ID
/// CONFIRMED", or why the change cannot be made (the reservation is left
/// as it was) and exits 1.
#[derive(Parser, Debug, Default)]
#[command(
    name = "pbs_ralter",
    version,
    after_help = "Times: [[[[CC]YY]MM]DD]hhmm[.SS] in PBS_TZID's zone (else this machine's). \
                  -U and -G take a whole list (ann,bob) or changes to it (+ann,-bob)."
)]
pub struct Args {
    /// A new start.
    #[arg(short = 'R', value_name = "START")]
    pub start: Option<String>,
    /// A new end.
    #[arg(short = 'E', value_name = "END")]
    pub end: Option<String>,
    /// A new duration: [[hours:]minutes:]seconds.
    #[arg(short = 'D', value_name = "DURATION")]
    pub duration: Option<String>,
    /// Users: USER[,USER...] replaces the list; +USER adds, -USER removes.
    #[arg(short = 'U', value_name = "USERS", allow_hyphen_values = true)]
    pub users: Vec<String>,
    /// Groups: GROUP[,GROUP...] replaces the list; +GROUP adds, -GROUP removes.
    #[arg(short = 'G', value_name = "GROUPS", allow_hyphen_values = true)]
    pub groups: Vec<String>,
    /// A new name.
    #[arg(short = 'N', value_name = "NAME")]
    pub name: Option<String>,
    /// Nodes (select=N:..., nodes=N, -lP N): the daemon refuses a different count.
    #[arg(short = 'l', value_name = "RES=VAL[,RES=VAL...]")]
    pub resources: Vec<String>,
    /// Accepted (PBS waits this long for confirmation; qmesh confirms at once).
    #[arg(short = 'I', value_name = "SECONDS", allow_negative_numbers = true)]
    pub wait: Option<String>,
    /// PBS's -W force: not provided (a change qmesh cannot confirm is refused).
    #[arg(short = 'W', value_name = "force")]
    pub extend: Vec<String>,
    /// Mail points: accepted, no mail is sent.
    #[arg(short = 'm', value_name = "POINTS")]
    pub mail_points: Option<String>,
    /// Mail users: accepted, no mail is sent.
    #[arg(short = 'M', value_name = "USERS")]
    pub mail_users: Option<String>,
    /// Print the changed reservation as JSON.
    #[arg(long)]
    pub json: bool,
    /// The reservation (R12 or R12.server).
    #[arg(value_name = "ID")]
    pub id: String,
}

/// Options whose next word is their value (for the NQS rewriting).
const TAKES_VALUE: [&str; 11] = [
    "-R", "-E", "-D", "-U", "-G", "-N", "-l", "-I", "-W", "-m", "-M",
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
    let args = Args::parse_from(std::iter::once("pbs_ralter".to_string()).chain(words));
    let tzid = match resv::env_tzid() {
        Ok(tzid) => tzid,
        Err(message) => return usage_error(&message),
    };
    let now = Utc::now();
    // Everything that can be said wrong is said before connecting.
    if let Err(message) = request(&args, tzid, now, None) {
        return usage_error(&message);
    }
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let current = if changes_lists(&args) {
            let status = ReservationStatusRequest {
                ids: vec![args.id.clone()],
            };
            let reply = jobs.reservation_status(status).await?.into_inner();
            let Some(info) = reply.reservations.into_iter().next() else {
                return Err(CliError::msg(format!(
                    "reservation {} does not exist; see pbs_rstat",
                    args.id
                )));
            };
            Some(info)
        } else {
            None
        };
        let request = request(&args, tzid, now, current.as_ref()).map_err(CliError::msg)?;
        Ok(jobs.alter_reservation(request).await?.into_inner())
    });
    match reply {
        Ok(info) => pbs_rsub::print_confirmed(&info, args.json, "pbs_ralter", "pbs_ralter: "),
        Err(err) => client::fail("pbs_ralter", &err),
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("pbs_ralter: {message}");
    ExitCode::from(2)
}

/// Whether -U or -G gives changes (`+ann`, `-bob`) rather than a list.
pub fn changes_lists(args: &Args) -> bool {
    [&args.users, &args.groups]
        .into_iter()
        .flat_map(|v| resv::split_lists(v))
        .any(|item| item.starts_with(['+', '-']))
}

/// The request the options make. `current` is the reservation as it is,
/// needed only when -U or -G give changes ([`changes_lists`]); without it
/// those are checked but left out.
pub fn request(
    args: &Args,
    tzid: Option<chrono_tz::Tz>,
    now: DateTime<Utc>,
    current: Option<&ReservationInfo>,
) -> Result<ReservationRequest, String> {
    if let Some(value) = args.extend.first() {
        return Err(format!(
            "-W {value}: qmesh's pbs_ralter has no -W; a change that cannot be confirmed is \
             refused and the reservation left as it was"
        ));
    }
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
    let duration = pbs_rsub::duration_of(args.duration.as_deref(), resources.walltime)?;
    let empty = Vec::new();
    let users = edit_list(
        'U',
        current.map_or(&empty, |c| &c.users),
        &resv::split_lists(&args.users),
    )?;
    let groups = edit_list(
        'G',
        current.map_or(&empty, |c| &c.groups),
        &resv::split_lists(&args.groups),
    )?;
    if start == 0
        && end == 0
        && duration == 0
        && resources.nodes == 0
        && args.name.is_none()
        && args.users.is_empty()
        && args.groups.is_empty()
    {
        return Err(format!(
            "nothing to change for {}: give -R, -E, -D, -N, -U or -G",
            args.id
        ));
    }
    Ok(ReservationRequest {
        id: args.id.clone(),
        start,
        end,
        duration,
        nodes: resources.nodes,
        resources: resources.text,
        users,
        groups,
        name: args.name.clone().unwrap_or_default(),
        name_given: args.name.is_some(),
        time_zone: tzid.map(|z| z.name().to_string()).unwrap_or_default(),
        ..ReservationRequest::default()
    })
}

/// `given` (-U's or -G's items) applied to `current`: a plain list
/// replaces it; `+NAME` adds and `-NAME` removes (`-ann` also removes
/// `ann@host`). The request cannot say "none", so a change that leaves
/// the list empty is refused.
pub fn edit_list(opt: char, current: &[String], given: &[String]) -> Result<Vec<String>, String> {
    let signed = given.iter().filter(|g| g.starts_with(['+', '-'])).count();
    if signed == 0 {
        return Ok(given.to_vec());
    }
    let what = if opt == 'U' { "users" } else { "groups" };
    if signed != given.len() {
        return Err(format!(
            "-{opt} {}: give the whole list of {what} (a,b) or only changes to it (+a,-b), not both",
            given.join(",")
        ));
    }
    let mut list = current.to_vec();
    for item in given {
        let name = item[1..].trim();
        if name.is_empty() {
            return Err(format!(
                "-{opt} {item}: a name must follow the sign, e.g. -{opt} +ann"
            ));
        }
        if item.starts_with('+') {
            if !list.iter().any(|n| n == name) {
                list.push(name.to_string());
            }
        } else {
            let before = list.len();
            list.retain(|n| n != name && !n.starts_with(&format!("{name}@")));
            if list.len() == before && !current.is_empty() {
                return Err(format!(
                    "-{opt} {item}: {name} is not among the reservation's {what} ({}); see pbs_rstat -f",
                    current.join(",")
                ));
            }
        }
    }
    if list.is_empty() && !current.is_empty() {
        return Err(format!(
            "-{opt} {}: that leaves the reservation no {what}; keep at least one, or give the new list",
            given.join(",")
        ));
    }
    Ok(list)
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
        Args::try_parse_from(std::iter::once("pbs_ralter".to_string()).chain(words)).unwrap()
    }

    fn req(line: &str) -> Result<ReservationRequest, String> {
        request(&parse(line), Some(chrono_tz::UTC), now(), None)
    }

    #[test]
    fn times_and_name() {
        let r = req("-R 1300 -E 1500 -N late R12").unwrap();
        assert_eq!(r.id, "R12");
        assert_eq!(
            r.start,
            Utc.with_ymd_and_hms(2026, 6, 10, 13, 0, 0)
                .unwrap()
                .timestamp()
        );
        assert_eq!(r.end - r.start, 7200);
        assert_eq!((r.name.as_str(), r.name_given), ("late", true));
        let r = req("-D 2:00:00 R12.server").unwrap();
        assert_eq!((r.start, r.end, r.duration), (0, 0, 7200));
        assert!(!r.name_given);
        // An empty name clears it.
        let a = Args::try_parse_from(["pbs_ralter", "-N", "", "R12"]).unwrap();
        let r = request(&a, None, now(), None).unwrap();
        assert!(r.name_given && r.name.is_empty());
    }

    #[test]
    fn nodes_go_to_the_daemon() {
        assert_eq!(req("-lP 8 R12").unwrap().nodes, 8);
        assert_eq!(req("-l select=3:ncpus=2 R12").unwrap().nodes, 3);
    }

    #[test]
    fn plain_lists_replace() {
        let r = req("-U ann,bob -G staff R12").unwrap();
        assert_eq!(r.users, vec!["ann", "bob"]);
        assert_eq!(r.groups, vec!["staff"]);
        assert!(!changes_lists(&parse("-U ann,bob R12")));
        assert!(changes_lists(&parse("-U +cy R12")));
        assert!(changes_lists(&parse("-G -staff R12")));
    }

    #[test]
    fn changes_apply_to_the_current_lists() {
        let current = ReservationInfo {
            users: vec!["ann@host".into(), "bob@host".into()],
            groups: vec!["staff".into()],
            ..ReservationInfo::default()
        };
        let a = parse("-U +cy,-bob -G +lab R12");
        let r = request(&a, None, now(), Some(&current)).unwrap();
        assert_eq!(r.users, vec!["ann@host", "cy"]);
        assert_eq!(r.groups, vec!["staff", "lab"]);
    }

    #[test]
    fn bad_changes_are_refused() {
        let current = vec!["ann@host".to_string()];
        let err = edit_list('U', &current, &["+bob".into(), "cy".into()]).unwrap_err();
        assert!(err.contains("not both"), "{err}");
        let err = edit_list('U', &current, &["-ann".into()]).unwrap_err();
        assert!(err.contains("leaves the reservation no users"), "{err}");
        let err = edit_list('U', &current, &["-zed".into()]).unwrap_err();
        assert!(
            err.contains("zed is not among the reservation's users"),
            "{err}"
        );
        let err = edit_list('G', &current, &["+".into()]).unwrap_err();
        assert!(err.contains("a name must follow the sign"), "{err}");
        assert_eq!(
            edit_list('U', &current, &["+ann@host".into()]).unwrap(),
            current
        );
    }

    #[test]
    fn options_checked_before_connecting() {
        let err = req("R12").unwrap_err();
        assert_eq!(
            err,
            "nothing to change for R12: give -R, -E, -D, -N, -U or -G"
        );
        let err = req("-W force -D 60 R12").unwrap_err();
        assert!(
            err.starts_with("-W force: qmesh's pbs_ralter has no -W"),
            "{err}"
        );
        let err = req("-I x -D 60 R12").unwrap_err();
        assert!(err.starts_with("-I x: give whole seconds"), "{err}");
        assert!(req("-R 9999 R12").unwrap_err().starts_with("bad -R time"));
        assert_eq!(req("-D 60 -m abe -M ann -I 5 R12").unwrap().duration, 60);
        assert!(
            Args::try_parse_from(["pbs_ralter", "-D", "60"]).is_err(),
            "no id"
        );
        assert!(
            Args::try_parse_from(["pbs_ralter", "R1", "R2"]).is_err(),
            "one id"
        );
    }
}
