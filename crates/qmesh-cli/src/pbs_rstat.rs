//! pbs_rstat: show reservations (PBS Pro), in PBS's three forms: the
//! short table (the default, `-S`), the ids alone (`-B`), and every
//! attribute (`-f`, `-F`), laid out as PBS's pbs_rstat prints them so
//! scripts written for it keep working; `--json` for programs.
//!
//! Times are shown in a zone (see [`crate::resv::Zone::for_display`]) and
//! the short table's are PBS's relative ones (`Today 13:00`, `Thu 09:00`),
//! worked out against one `now` read in `main`. After PBS's attributes,
//! `-f` lists every occurrence still to come with its nodes
//! (`reserve_occurrence.N`), which PBS keeps to itself.

use std::process::ExitCode;

use chrono::{DateTime, Utc};
use clap::Parser;
use qmesh_proto::jobs_client::JobsClient;
use qmesh_proto::{ReservationInfo, ReservationStatusRequest};
use tonic::transport::Channel;

use crate::client::{self, CliError};
use crate::output::{self, Output, Tree, truncate};
use crate::resv::{self, Zone};

/// Show reservations.
///
/// Shows every reservation, or those named (R12 or R12.server): a table
/// by default (-S), their ids (-B), or all their attributes (-f or -F).
/// Prints a line for each named reservation that does not exist, and
/// exits 1.
#[derive(Parser, Debug)]
#[command(
    name = "pbs_rstat",
    version,
    after_help = "Times are shown in a standing reservation's own zone, else PBS_TZID's, \
                  else the server's calendar's."
)]
pub struct Args {
    /// Every attribute (-F is the same).
    #[arg(short = 'f', visible_short_alias = 'F', overrides_with_all = ["brief", "short"])]
    pub full: bool,
    /// The ids alone.
    #[arg(short = 'B', overrides_with_all = ["full", "short"])]
    pub brief: bool,
    /// The table (the default).
    #[arg(short = 'S', overrides_with_all = ["full", "brief"])]
    pub short: bool,
    /// Print the reservations as JSON.
    #[arg(long)]
    pub json: bool,
    /// Reservations (R12 or R12.server; default: all).
    #[arg(value_name = "ID")]
    pub ids: Vec<String>,
}

/// Which of PBS's forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Short,
    Brief,
    Full,
}

impl Args {
    pub fn form(&self) -> Form {
        if self.full {
            Form::Full
        } else if self.brief {
            Form::Brief
        } else {
            Form::Short
        }
    }
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let tzid = match resv::env_tzid() {
        Ok(tzid) => tzid,
        Err(message) => {
            eprintln!("pbs_rstat: {message}");
            return ExitCode::from(2);
        }
    };
    let found = client::block_on(async {
        let mut jobs = client::jobs().await?;
        fetch(&mut jobs, &args.ids).await
    });
    let (reservations, refusals) = match found {
        Ok(found) => found,
        Err(err) => return client::fail("pbs_rstat", &err),
    };
    let listing = Listing {
        reservations: &reservations,
        form: args.form(),
        tzid,
        now: Utc::now(),
    };
    if let Err(e) = output::emit(&listing, args.json) {
        return client::fail(
            "pbs_rstat",
            &CliError::msg(format!("cannot write the listing: {e}")),
        );
    }
    for message in &refusals {
        eprintln!("pbs_rstat: {message}");
    }
    if refusals.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The reservations asked for, and a message for each that could not be
/// had. The daemon refuses a request naming an unknown reservation, so
/// then each is asked for alone.
async fn fetch(
    jobs: &mut JobsClient<Channel>,
    ids: &[String],
) -> Result<(Vec<ReservationInfo>, Vec<String>), CliError> {
    let all = ReservationStatusRequest { ids: ids.to_vec() };
    let status = match jobs.reservation_status(all).await {
        Ok(reply) => return Ok((reply.into_inner().reservations, Vec::new())),
        Err(status) => status,
    };
    if ids.len() < 2 || !client::is_per_item(&status) {
        if ids.len() == 1 && client::is_per_item(&status) {
            return Ok((Vec::new(), vec![CliError::from(status).to_string()]));
        }
        return Err(status.into());
    }
    let (mut found, mut refusals) = (Vec::new(), Vec::new());
    for id in ids {
        let one = ReservationStatusRequest {
            ids: vec![id.clone()],
        };
        match jobs.reservation_status(one).await {
            Ok(reply) => found.extend(reply.into_inner().reservations),
            Err(status) if client::is_per_item(&status) => {
                refusals.push(CliError::from(status).to_string());
            }
            Err(status) => return Err(status.into()),
        }
    }
    Ok((found, refusals))
}

/// What pbs_rstat prints.
pub struct Listing<'a> {
    pub reservations: &'a [ReservationInfo],
    pub form: Form,
    /// `PBS_TZID`'s zone.
    pub tzid: Option<chrono_tz::Tz>,
    pub now: DateTime<Utc>,
}

impl Output for Listing<'_> {
    fn text(&self) -> String {
        let zone = |info: &ReservationInfo| Zone::for_display(info, self.tzid);
        match self.form {
            Form::Short => short_table(self.reservations, &zone, self.now),
            Form::Brief => self
                .reservations
                .iter()
                .map(|r| format!("Resv ID: {}\n", r.id))
                .collect(),
            Form::Full => self
                .reservations
                .iter()
                .map(|r| full_text(r, &zone(r)))
                .collect(),
        }
    }

    fn json(&self) -> Tree {
        let server = self
            .reservations
            .first()
            .map_or_else(client::hostname, |r| r.server.clone());
        let entries = self
            .reservations
            .iter()
            .map(|r| (r.id.clone(), resv::info_json(r)))
            .collect();
        output::document(self.now.timestamp(), &server, "Reservations", entries)
    }
}

/// PBS's short table: `%-10.10s %-8.8s %-8.8s %-5.5s %17.17s / %ld /
/// %-17.17s`, a header once, nothing at all when there are no
/// reservations. A cell too long for its column ends in `*` (PBS cuts it
/// silently); a time is never cut.
pub fn short_table(
    reservations: &[ReservationInfo],
    zone: &dyn Fn(&ReservationInfo) -> Zone,
    now: DateTime<Utc>,
) -> String {
    if reservations.is_empty() {
        return String::new();
    }
    let line = |cells: [&str; 4], start: &str, duration: &str, end: &str| {
        let row = format!(
            "{:<10} {:<8} {:<8} {:<5} {start:>17} / {duration} / {end}",
            truncate(cells[0], Some(10)),
            truncate(cells[1], Some(8)),
            truncate(cells[2], Some(8)),
            truncate(cells[3], Some(5)),
        );
        format!("{}\n", row.trim_end())
    };
    let mut out = line(
        ["Resv ID", "Queue", "User", "State"],
        "Start",
        "Duration",
        "End",
    );
    out.push_str(&"-".repeat(69));
    out.push('\n');
    for r in reservations {
        let z = zone(r);
        let users = if r.users.is_empty() {
            r.owner.clone()
        } else {
            r.users.join(",")
        };
        out.push_str(&line(
            [&r.id, &r.queue, &users, resv::state_codes(&r.state).0],
            &z.brief_time(r.start, now),
            &r.duration.to_string(),
            &z.brief_time(r.end, now),
        ));
    }
    out
}

/// PBS's full form: `Resv ID: ID`, then `name = value` lines (not
/// indented, as pbs_rstat writes them) and a blank line; qmesh's own
/// attributes come after PBS's.
pub fn full_text(r: &ReservationInfo, zone: &Zone) -> String {
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut put = |name: &str, value: String| lines.push((name.to_string(), value));
    if !r.name.is_empty() {
        put("Reserve_Name", r.name.clone());
    }
    put("Reserve_Owner", r.owner.clone());
    let (_, number) = resv::state_codes(&r.state);
    put("reserve_state", r.state.clone());
    put("reserve_substate", number.to_string());
    put("reserve_start", zone.ctime(r.start));
    put("reserve_end", zone.ctime(r.end));
    put("reserve_duration", r.duration.to_string());
    put("queue", r.queue.clone());
    let mut given: Vec<String> = Vec::new();
    for item in r
        .resources
        .split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
    {
        let (name, value) = item.split_once('=').unwrap_or((item, ""));
        let name = name.trim();
        given.push(name.to_ascii_lowercase());
        put(&format!("Resource_List.{name}"), value.trim().to_string());
    }
    if !given.iter().any(|n| n == "nodect") {
        put("Resource_List.nodect", r.nodes.to_string());
    }
    if !given.iter().any(|n| n == "walltime") {
        put(
            "Resource_List.walltime",
            qmesh_core::time::format_hms(r.duration),
        );
    }
    if !r.resv_nodes.is_empty() {
        put("resv_nodes", resv_nodes(&r.resv_nodes));
    }
    if !r.rrule.is_empty() {
        put("reserve_rrule", r.rrule.clone());
        if !r.time_zone.is_empty() {
            put("reserve_timezone", r.time_zone.clone());
        }
        put("reserve_count", r.count.to_string());
        put("reserve_index", r.index.to_string());
    }
    put("Authorized_Users", r.users.join(","));
    if !r.groups.is_empty() {
        put("Authorized_Groups", r.groups.join(","));
    }
    if !r.server.is_empty() {
        put("server", r.server.clone());
    }
    if r.ctime != 0 {
        put("ctime", zone.ctime(r.ctime));
    }
    if r.mtime != 0 {
        put("mtime", zone.ctime(r.mtime));
    }
    if !r.node_set.is_empty() {
        put("node_set", r.node_set.clone());
    }
    put("total_jobs", r.jobs.to_string());
    let first = r.index.max(1);
    for (i, o) in r.occurrences.iter().enumerate() {
        let mut value = format!("{} .. {}", zone.ctime(o.start), zone.ctime(o.end));
        if !o.nodes.is_empty() {
            value.push_str(&format!(" on {}", o.nodes.join(",")));
        }
        put(&format!("reserve_occurrence.{}", first as usize + i), value);
    }
    let mut out = format!("Resv ID: {}\n", r.id);
    for (name, value) in lines {
        out.push_str(&format!("{name} = {value}\n"));
    }
    out.push('\n');
    out
}

/// `(n1)+(n2)`, PBS's exec_vnode form without per-node amounts.
pub fn resv_nodes(nodes: &[String]) -> String {
    nodes
        .iter()
        .map(|n| format!("({n})"))
        .collect::<Vec<_>>()
        .join("+")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use qmesh_proto::ReservationOccurrence;

    /// Wednesday 2026-06-10 11:15:00 UTC.
    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 10, 11, 15, 0).unwrap()
    }

    fn at(d: u32, h: u32) -> i64 {
        Utc.with_ymd_and_hms(2026, 6, d, h, 0, 0)
            .unwrap()
            .timestamp()
    }

    fn utc(_: &ReservationInfo) -> Zone {
        Zone::Named(chrono_tz::UTC)
    }

    fn advance() -> ReservationInfo {
        ReservationInfo {
            id: "R12.server".into(),
            name: "demo".into(),
            owner: "ann@host".into(),
            state: "RESV_CONFIRMED".into(),
            queue: "R12".into(),
            start: at(10, 13),
            end: at(10, 14),
            duration: 3600,
            resources: "nodes=2".into(),
            nodes: 2,
            users: vec!["ann@host".into()],
            resv_nodes: vec!["n1".into(), "n2".into()],
            node_set: "sp".into(),
            ctime: at(10, 11),
            mtime: at(10, 11),
            occurrences: vec![ReservationOccurrence {
                start: at(10, 13),
                end: at(10, 14),
                nodes: vec!["n1".into(), "n2".into()],
            }],
            server: "server".into(),
            server_zone: "UTC".into(),
            jobs: 1,
            ..ReservationInfo::default()
        }
    }

    #[test]
    fn the_short_table_is_pbss() {
        let mut later = advance();
        later.id = "R1234567.longserver".into();
        later.queue = "R1234567".into();
        later.users = vec!["bob@host".into(), "cy@host".into()];
        later.state = "RESV_RUNNING".into();
        later.start = at(11, 9);
        later.end = at(20, 9);
        later.duration = 777_600;
        let text = short_table(&[advance(), later], &utc, now());
        assert_eq!(
            text,
            "Resv ID    Queue    User     State             Start / Duration / End\n\
             ---------------------------------------------------------------------\n\
             R12.server R12      ann@host CO          Today 13:00 / 3600 / Today 14:00\n\
             R1234567.* R1234567 bob@hos* RN            Thu 09:00 / 777600 / Sat Jun 20 09:00\n"
        );
        assert_eq!(short_table(&[], &utc, now()), "");
    }

    #[test]
    fn the_user_column_falls_back_to_the_owner() {
        let mut r = advance();
        r.users.clear();
        let text = short_table(&[r], &utc, now());
        assert!(
            text.lines().nth(2).unwrap().contains(" ann@host "),
            "{text}"
        );
    }

    #[test]
    fn the_full_form_of_an_advance_reservation() {
        assert_eq!(
            full_text(&advance(), &Zone::Named(chrono_tz::UTC)),
            "Resv ID: R12.server\n\
             Reserve_Name = demo\n\
             Reserve_Owner = ann@host\n\
             reserve_state = RESV_CONFIRMED\n\
             reserve_substate = 2\n\
             reserve_start = Wed Jun 10 13:00:00 2026\n\
             reserve_end = Wed Jun 10 14:00:00 2026\n\
             reserve_duration = 3600\n\
             queue = R12\n\
             Resource_List.nodes = 2\n\
             Resource_List.nodect = 2\n\
             Resource_List.walltime = 01:00:00\n\
             resv_nodes = (n1)+(n2)\n\
             Authorized_Users = ann@host\n\
             server = server\n\
             ctime = Wed Jun 10 11:00:00 2026\n\
             mtime = Wed Jun 10 11:00:00 2026\n\
             node_set = sp\n\
             total_jobs = 1\n\
             reserve_occurrence.1 = Wed Jun 10 13:00:00 2026 .. Wed Jun 10 14:00:00 2026 on n1,n2\n\
             \n"
        );
    }

    #[test]
    fn the_full_form_of_a_standing_reservation() {
        let mut r = advance();
        r.name.clear();
        r.resources = "select=1:ncpus=8+1:ncpus=8,walltime=1:00:00,nodeset=sp".into();
        r.rrule = "FREQ=DAILY;COUNT=3".into();
        r.time_zone = "Europe/London".into();
        r.count = 3;
        r.index = 2;
        r.groups = vec!["staff".into()];
        r.occurrences = vec![
            ReservationOccurrence {
                start: at(10, 13),
                end: at(10, 14),
                nodes: vec!["n1".into(), "n2".into()],
            },
            ReservationOccurrence {
                start: at(11, 13),
                end: at(11, 14),
                nodes: vec!["n3".into(), "n4".into()],
            },
        ];
        let text = full_text(&r, &Zone::Named(chrono_tz::Europe::London));
        assert!(!text.contains("Reserve_Name"), "{text}");
        assert!(
            text.contains("\nreserve_start = Wed Jun 10 14:00:00 2026\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "\nResource_List.select = 1:ncpus=8+1:ncpus=8\n\
                 Resource_List.walltime = 1:00:00\n\
                 Resource_List.nodeset = sp\n\
                 Resource_List.nodect = 2\n\
                 resv_nodes = (n1)+(n2)\n\
                 reserve_rrule = FREQ=DAILY;COUNT=3\n\
                 reserve_timezone = Europe/London\n\
                 reserve_count = 3\n\
                 reserve_index = 2\n\
                 Authorized_Users = ann@host\n\
                 Authorized_Groups = staff\n"
            ),
            "{text}"
        );
        assert!(
            text.ends_with(
                "reserve_occurrence.2 = Wed Jun 10 14:00:00 2026 .. Wed Jun 10 15:00:00 2026 on n1,n2\n\
                 reserve_occurrence.3 = Thu Jun 11 14:00:00 2026 .. Thu Jun 11 15:00:00 2026 on n3,n4\n\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn brief_form_and_json() {
        let list = [advance()];
        let listing = Listing {
            reservations: &list,
            form: Form::Brief,
            tzid: None,
            now: now(),
        };
        assert_eq!(listing.text(), "Resv ID: R12.server\n");
        let doc = serde_json::to_value(listing.json()).unwrap();
        assert_eq!(doc["pbs_server"], "server");
        assert_eq!(doc["timestamp"], now().timestamp());
        assert_eq!(doc["Reservations"]["R12.server"]["nodes"], 2);
        assert_eq!(
            doc["Reservations"]["R12.server"]["occurrences"][0]["nodes"][1],
            "n2"
        );
    }

    #[test]
    fn the_last_form_option_wins() {
        let form = |line: &str| {
            Args::try_parse_from(line.split_whitespace())
                .unwrap()
                .form()
        };
        assert_eq!(form("pbs_rstat"), Form::Short);
        assert_eq!(form("pbs_rstat -f"), Form::Full);
        assert_eq!(form("pbs_rstat -F R12"), Form::Full);
        assert_eq!(form("pbs_rstat -f -B"), Form::Brief);
        assert_eq!(form("pbs_rstat -B -S"), Form::Short);
        assert_eq!(form("pbs_rstat -S -F"), Form::Full);
        let a = Args::try_parse_from(["pbs_rstat", "--json", "R1", "R2.s"]).unwrap();
        assert!(a.json);
        assert_eq!(a.ids, ["R1", "R2.s"]);
    }
}
