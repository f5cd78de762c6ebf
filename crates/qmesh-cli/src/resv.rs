//! What the reservation commands (pbs_rsub, pbs_rstat, pbs_ralter,
//! pbs_rdel) share: the zone their times are read and shown in, PBS's
//! time forms, the `-l` list read for its node count, the NQS `-lP`
//! form, and a reservation as JSON.
//!
//! Times cross the wire as Unix seconds; a command reads and writes them
//! in a zone, the way PBS's commands use the local one: `PBS_TZID` when
//! the user set it (the zone PBS reads a standing reservation's rule in),
//! else the machine's own. pbs_rstat shows a standing reservation in its
//! rule's zone, since that is the calendar its occurrences keep to.
//!
//! The functions here take `now` and never read the clock, so the tests
//! can fix it.

use chrono::{DateTime, Datelike, Local, TimeZone, Utc};
use chrono_tz::Tz;
use qmesh_core::resources::ResourceRequest;
use qmesh_proto::ReservationInfo;

use crate::output::Tree;
use crate::qsub::start::parse_start_after;

/// The zone a command reads and shows times in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Zone {
    Named(Tz),
    /// The machine's own (chrono's `Local`), when no zone is named.
    Local,
}

/// `PBS_TZID`'s value as a zone: `None` when unset or empty, an error
/// naming it when it is not an IANA zone name.
pub fn pbs_tzid(value: Option<&str>) -> Result<Option<Tz>, String> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(name) => name.parse::<Tz>().map(Some).map_err(|_| {
            format!(
                "PBS_TZID=\"{name}\" is not an IANA time zone name; set it to one, e.g. \
                 PBS_TZID=Europe/London, or unset it to use this machine's zone"
            )
        }),
    }
}

/// `PBS_TZID` from the environment (see [`pbs_tzid`]).
pub fn env_tzid() -> Result<Option<Tz>, String> {
    pbs_tzid(std::env::var("PBS_TZID").ok().as_deref())
}

impl Zone {
    /// Where `-R` and `-E` are read: `PBS_TZID`, else the machine's zone.
    pub fn for_input(tzid: Option<Tz>) -> Zone {
        tzid.map_or(Zone::Local, Zone::Named)
    }

    /// Where pbs_rstat shows `info`'s times: a standing reservation's own
    /// zone, else `PBS_TZID`, else the server's calendar zone, else the
    /// machine's.
    pub fn for_display(info: &ReservationInfo, tzid: Option<Tz>) -> Zone {
        let named = |name: &str| name.trim().parse::<Tz>().ok();
        let own = if info.rrule.is_empty() {
            None
        } else {
            named(&info.time_zone)
        };
        own.or(tzid)
            .or_else(|| named(&info.server_zone))
            .map_or(Zone::Local, Zone::Named)
    }

    /// `-R`/`-E` (`opt`) in PBS's `[[[[CC]YY]MM]DD]hhmm[.SS]`, as Unix
    /// seconds.
    pub fn parse_time(&self, opt: char, text: &str, now: DateTime<Utc>) -> Result<i64, String> {
        match self {
            Zone::Named(tz) => parse_time_in(opt, text, now.with_timezone(tz)),
            Zone::Local => parse_time_in(opt, text, now.with_timezone(&Local)),
        }
    }

    /// pbs_rstat's short time (see [`brief_time_in`]).
    pub fn brief_time(&self, secs: i64, now: DateTime<Utc>) -> String {
        match self {
            Zone::Named(tz) => brief_time_in(secs, now.with_timezone(tz)),
            Zone::Local => brief_time_in(secs, now.with_timezone(&Local)),
        }
    }

    /// pbs_rstat -f's time (see [`ctime_in`]).
    pub fn ctime(&self, secs: i64) -> String {
        match self {
            Zone::Named(tz) => ctime_in(secs, tz),
            Zone::Local => ctime_in(secs, &Local),
        }
    }
}

/// qsub's `-a` reading ([`parse_start_after`]) for option `-{opt}`: a time
/// of day already past is tomorrow, and so on.
pub fn parse_time_in<Z: TimeZone>(opt: char, text: &str, now: DateTime<Z>) -> Result<i64, String> {
    parse_start_after(text, now)
        .map(|t| t.timestamp())
        .map_err(|e| e.replacen("bad -a time", &format!("bad -{opt} time"), 1))
}

/// Whether `-R`'s text is a bare time of day (`hhmm[.SS]`): PBS then
/// moves an end that falls before the start to the next day.
pub fn is_time_of_day(text: &str) -> bool {
    text.trim().split('.').next().is_some_and(|d| d.len() == 4)
}

/// The start and end from `-R` and `-E` (either may be missing), with
/// PBS's rule for `-R hhmm -E hhmm` across midnight: an end before a
/// time-of-day start is the next day's.
pub fn start_and_end(
    zone: &Zone,
    start: Option<&str>,
    end: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(i64, i64), String> {
    let start_at = start.map(|s| zone.parse_time('R', s, now)).transpose()?;
    let mut end_at = end.map(|e| zone.parse_time('E', e, now)).transpose()?;
    if let (Some(text), Some(s), Some(e)) = (start, start_at, end_at.as_mut())
        && is_time_of_day(text)
        && *e < s
    {
        *e += 24 * 3600;
    }
    Ok((start_at.unwrap_or(0), end_at.unwrap_or(0)))
}

/// `-D` (`[[hh:]mm:]ss`, or `d:hh:mm:ss`) in seconds.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    qmesh_core::time::parse_duration(text).map_err(|e| match e {
        qmesh_core::CoreError::BadDuration { why, .. } => format!(
            "bad -D duration \"{text}\": {why}; write [[hours:]minutes:]seconds, e.g. 1:30:00 or 5400"
        ),
        other => format!("bad -D duration \"{text}\": {other}"),
    })
}

/// PBS's `convert_time`, pbs_rstat's Start and End columns: `Today 13:00`
/// for today, `Thu 13:00` within this week (Sunday to Saturday), `Thu Jun
/// 14 13:00` later this year, `Thu Jun 14 2027 13:00` in another year; in
/// the zone of `now`.
pub fn brief_time_in<Z: TimeZone>(secs: i64, now: DateTime<Z>) -> String
where
    Z::Offset: std::fmt::Display,
{
    let Some(then) = now.timezone().timestamp_opt(secs, 0).earliest() else {
        return secs.to_string();
    };
    if then.year() != now.year() {
        return then.format("%a %b %d %Y %H:%M").to_string();
    }
    let (day, today) = (i64::from(then.ordinal0()), i64::from(now.ordinal0()));
    let weekday = i64::from(now.weekday().num_days_from_sunday());
    if day == today {
        then.format("Today %H:%M").to_string()
    } else if day >= today - weekday && day <= today + 6 - weekday {
        then.format("%a %H:%M").to_string()
    } else {
        then.format("%a %b %d %H:%M").to_string()
    }
}

/// pbs_rstat -f's form of a time: `Tue Jun 14 13:00:00 2022`.
pub fn ctime_in<Z: TimeZone>(secs: i64, tz: &Z) -> String
where
    Z::Offset: std::fmt::Display,
{
    match tz.timestamp_opt(secs, 0).earliest() {
        Some(t) => t.format("%a %b %d %H:%M:%S %Y").to_string(),
        None => secs.to_string(),
    }
}

/// PBS's long and short names of a reservation state and its number
/// (`reserve_substate`); the wire carries the long name.
pub fn state_codes(state: &str) -> (&str, u32) {
    const STATES: [(&str, &str); 13] = [
        ("RESV_NONE", "NO"),
        ("RESV_UNCONFIRMED", "UN"),
        ("RESV_CONFIRMED", "CO"),
        ("RESV_WAIT", "WT"),
        ("RESV_TIME_TO_RUN", "TR"),
        ("RESV_RUNNING", "RN"),
        ("RESV_FINISHED", "FN"),
        ("RESV_BEING_DELETED", "BD"),
        ("RESV_DELETED", "DE"),
        ("RESV_DELETING_JOBS", "DJ"),
        ("RESV_DEGRADED", "DG"),
        ("RESV_BEING_ALTERED", "AL"),
        ("RESV_IN_CONFLICT", "IC"),
    ];
    match STATES.iter().position(|(long, _)| *long == state) {
        Some(i) => (STATES[i].1, i as u32),
        None => (state, 0),
    }
}

/// The word pbs_rsub and pbs_ralter print after the id: qmesh confirms a
/// reservation when it is made, so a running one is confirmed too.
pub fn confirmation_word(state: &str) -> &str {
    match state {
        "RESV_CONFIRMED" | "RESV_RUNNING" | "" => "CONFIRMED",
        other => other.strip_prefix("RESV_").unwrap_or(other),
    }
}

/// Comma lists (`-U a,b -U c`) as their items, blanks dropped.
pub fn split_lists(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// What `-l` said, read for the request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    /// The items as written, comma-joined (`Resource_List`).
    pub text: String,
    /// Nodes asked (`nodes=N`, the chunks of `select=`); 0: none said.
    pub nodes: u32,
    /// `nodeset=NAME`; empty: any.
    pub node_set: String,
    /// `walltime=`: the duration, as PBS's `-D` sets it.
    pub walltime: Option<u64>,
}

/// The resources that say how many nodes: read with qsub's rules (the
/// core's), so a reservation counts `select=2:ncpus=8+1:ncpus=4` as the
/// jobs in it will. The others go to the daemon as written.
const NODE_RESOURCES: [&str; 5] = ["select", "nodes", "nodect", "procs", "host"];

/// Reads `-l` lists (`NAME=VALUE[,NAME=VALUE...]`, repeatable).
pub fn read_resources(lists: &[String]) -> Result<Resources, String> {
    let mut out = Resources::default();
    let mut items: Vec<String> = Vec::new();
    let mut for_nodes: Vec<(String, String)> = Vec::new();
    for list in lists {
        for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let Some((name, value)) = item.split_once('=') else {
                return Err(format!(
                    "bad resource \"{item}\" in -l {list}: write NAME=VALUE, e.g. -l select=4 or -l nodes=4 (or -lP 4)"
                ));
            };
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            if name.is_empty() || value.is_empty() {
                return Err(format!(
                    "bad resource \"{item}\" in -l {list}: both the name and the value are needed, e.g. -l nodes=4"
                ));
            }
            match name.as_str() {
                "nodeset" => out.node_set = value.to_string(),
                "walltime" => {
                    let secs =
                        qmesh_core::time::parse_duration(value).map_err(|e| e.to_string())?;
                    out.walltime = Some(secs);
                }
                n if NODE_RESOURCES.contains(&n) => {
                    for_nodes.push((name.clone(), value.to_string()));
                }
                _ => {}
            }
            items.push(item.to_string());
        }
    }
    if !for_nodes.is_empty() {
        let request =
            ResourceRequest::parse(for_nodes.iter().map(|(n, v)| (n.as_str(), v.as_str())))
                .map_err(|e| e.to_string())?;
        out.nodes = request.nodes.unwrap_or(0);
    }
    out.text = items.join(",");
    Ok(out)
}

/// Rewrites the NQS forms qmesh's qsub takes, which clap would read as
/// `-l P`: `-lP N`/`-lPN` to `-l nodes=N`, `-lT TIME` to `-l
/// walltime=TIME`, `-lM SIZE` to `-l mem=SIZE`. `takes_value` lists the
/// command's options whose next word is their value (left alone).
pub fn rewrite_nqs(words: &[String], takes_value: &[&str]) -> Result<Vec<String>, String> {
    const NQS: [(&str, &str, &str); 3] = [
        ("-lP", "nodes", "4"),
        ("-lT", "walltime", "1:00:00"),
        ("-lM", "mem", "2gb"),
    ];
    let mut out = Vec::with_capacity(words.len());
    let mut iter = words.iter();
    while let Some(word) = iter.next() {
        if word == "--" {
            out.push(word.clone());
            out.extend(iter.cloned());
            break;
        }
        if takes_value.contains(&word.as_str()) {
            out.push(word.clone());
            out.extend(iter.next().cloned());
            continue;
        }
        let Some((flag, resource, example)) = NQS.iter().find(|(f, _, _)| word.starts_with(f))
        else {
            out.push(word.clone());
            continue;
        };
        let glued = &word[flag.len()..];
        let value = if glued.is_empty() {
            iter.next()
                .ok_or_else(|| format!("{flag} needs a value, e.g. {flag} {example}"))?
                .clone()
        } else {
            glued.to_string()
        };
        out.push("-l".to_string());
        out.push(format!("{resource}={value}"));
    }
    Ok(out)
}

/// A reservation as JSON: the wire's fields by name, times as Unix
/// seconds (`null` when not set).
pub fn info_json(info: &ReservationInfo) -> Tree {
    let texts = |list: &[String]| Tree::List(list.iter().map(Tree::text).collect());
    let occurrences = info
        .occurrences
        .iter()
        .map(|o| {
            Tree::Map(vec![
                ("start".into(), Tree::time(o.start)),
                ("end".into(), Tree::time(o.end)),
                ("nodes".into(), texts(&o.nodes)),
            ])
        })
        .collect();
    let mut entries = vec![
        ("id".to_string(), Tree::text(&info.id)),
        ("name".into(), Tree::text(&info.name)),
        ("owner".into(), Tree::text(&info.owner)),
        ("state".into(), Tree::text(&info.state)),
        ("queue".into(), Tree::text(&info.queue)),
        ("start".into(), Tree::time(info.start)),
        ("end".into(), Tree::time(info.end)),
        ("duration".into(), Tree::int(clamp(info.duration))),
        ("resources".into(), Tree::text(&info.resources)),
        ("nodes".into(), Tree::int(i64::from(info.nodes))),
        ("users".into(), texts(&info.users)),
        ("groups".into(), texts(&info.groups)),
    ];
    if !info.rrule.is_empty() {
        entries.extend([
            ("rrule".to_string(), Tree::text(&info.rrule)),
            ("time_zone".into(), Tree::text(&info.time_zone)),
            ("count".into(), Tree::int(i64::from(info.count))),
            ("index".into(), Tree::int(i64::from(info.index))),
        ]);
    }
    entries.extend([
        ("resv_nodes".to_string(), texts(&info.resv_nodes)),
        ("node_set".into(), Tree::text(&info.node_set)),
        ("ctime".into(), Tree::time(info.ctime)),
        ("mtime".into(), Tree::time(info.mtime)),
        ("occurrences".into(), Tree::List(occurrences)),
        ("server".into(), Tree::text(&info.server)),
        ("server_zone".into(), Tree::text(&info.server_zone)),
        ("jobs".into(), Tree::int(i64::from(info.jobs))),
    ]);
    Tree::Map(entries)
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wednesday 2026-06-10 11:15:00 UTC.
    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 10, 11, 15, 0).unwrap()
    }

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0)
            .unwrap()
            .timestamp()
    }

    #[test]
    fn brief_times_follow_pbs() {
        let z = Zone::Named(chrono_tz::UTC);
        assert_eq!(z.brief_time(at(2026, 6, 10, 13, 0), now()), "Today 13:00");
        // This week runs Sunday 7th to Saturday 13th.
        assert_eq!(z.brief_time(at(2026, 6, 11, 9, 0), now()), "Thu 09:00");
        assert_eq!(z.brief_time(at(2026, 6, 7, 9, 0), now()), "Sun 09:00");
        assert_eq!(z.brief_time(at(2026, 6, 13, 23, 59), now()), "Sat 23:59");
        assert_eq!(
            z.brief_time(at(2026, 6, 14, 9, 0), now()),
            "Sun Jun 14 09:00"
        );
        assert_eq!(
            z.brief_time(at(2026, 6, 6, 9, 0), now()),
            "Sat Jun 06 09:00"
        );
        assert_eq!(
            z.brief_time(at(2027, 1, 4, 9, 0), now()),
            "Mon Jan 04 2027 09:00"
        );
    }

    #[test]
    fn brief_times_are_in_the_zone() {
        // 23:30 UTC on the 10th is the 11th in Tokyo; "today" is Tokyo's.
        let tokyo = Zone::Named(chrono_tz::Asia::Tokyo);
        assert_eq!(
            tokyo.brief_time(at(2026, 6, 10, 23, 30), now()),
            "Thu 08:30"
        );
        assert_eq!(
            tokyo.brief_time(at(2026, 6, 10, 12, 0), now()),
            "Today 21:00"
        );
        let london = Zone::Named(chrono_tz::Europe::London);
        assert_eq!(
            london.ctime(at(2026, 6, 10, 13, 0)),
            "Wed Jun 10 14:00:00 2026"
        );
        assert_eq!(
            Zone::Named(chrono_tz::UTC).ctime(at(2026, 6, 1, 9, 5)),
            "Mon Jun 01 09:05:00 2026"
        );
    }

    #[test]
    fn start_and_end_read_in_the_zone() {
        let london = Zone::Named(chrono_tz::Europe::London);
        // 11:15 UTC is 12:15 in London: 1300 is today at 12:00 UTC.
        let (s, e) = start_and_end(&london, Some("1300"), Some("1400.30"), now()).unwrap();
        assert_eq!(
            (s, e),
            (at(2026, 6, 10, 12, 0), at(2026, 6, 10, 13, 0) + 30)
        );
        // A time of day already past is tomorrow.
        let (s, e) = start_and_end(&london, Some("1100"), None, now()).unwrap();
        assert_eq!((s, e), (at(2026, 6, 11, 10, 0), 0));
        let (s, e) = start_and_end(&london, None, Some("202607011800"), now()).unwrap();
        assert_eq!((s, e), (0, at(2026, 7, 1, 17, 0)));
    }

    #[test]
    fn an_end_before_a_time_of_day_start_is_the_next_day() {
        let utc = Zone::Named(chrono_tz::UTC);
        // At 11:15: -R 2300 is tonight, -E 1200 is today's noon (ahead), so
        // before the start: PBS moves it to tomorrow noon.
        let (s, e) = start_and_end(&utc, Some("2300"), Some("1200"), now()).unwrap();
        assert_eq!((s, e), (at(2026, 6, 10, 23, 0), at(2026, 6, 11, 12, 0)));
        // Not when the start is a date: the daemon says the end is early.
        let (s, e) = start_and_end(&utc, Some("06102300"), Some("1200"), now()).unwrap();
        assert_eq!((s, e), (at(2026, 6, 10, 23, 0), at(2026, 6, 10, 12, 0)));
    }

    #[test]
    fn bad_times_name_the_option() {
        let utc = Zone::Named(chrono_tz::UTC);
        let err = start_and_end(&utc, Some("25:00"), None, now()).unwrap_err();
        assert!(err.starts_with("bad -R time \"25:00\""), "{err}");
        let err = start_and_end(&utc, None, Some("2460"), now()).unwrap_err();
        assert!(err.starts_with("bad -E time \"2460\""), "{err}");
        assert!(err.contains("[[[[CC]YY]MM]DD]hhmm[.SS]"), "{err}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1:30:00").unwrap(), 5400);
        assert_eq!(parse_duration("90").unwrap(), 90);
        assert_eq!(parse_duration("2:00").unwrap(), 120);
        let err = parse_duration("1h").unwrap_err();
        assert!(err.starts_with("bad -D duration \"1h\""), "{err}");
    }

    #[test]
    fn pbs_tzid_must_name_a_zone() {
        assert_eq!(pbs_tzid(None).unwrap(), None);
        assert_eq!(pbs_tzid(Some(" ")).unwrap(), None);
        assert_eq!(
            pbs_tzid(Some("America/New_York")).unwrap(),
            Some(chrono_tz::America::New_York)
        );
        let err = pbs_tzid(Some("Mars/Base")).unwrap_err();
        assert!(err.starts_with("PBS_TZID=\"Mars/Base\" is not"), "{err}");
    }

    #[test]
    fn display_zone_prefers_the_rules_own_then_pbs_tzid_then_the_servers() {
        let mut info = ReservationInfo {
            time_zone: "Asia/Tokyo".into(),
            server_zone: "Europe/Paris".into(),
            ..ReservationInfo::default()
        };
        let ny = Some(chrono_tz::America::New_York);
        // Not standing: its zone field is not the rule's.
        assert_eq!(
            Zone::for_display(&info, ny),
            Zone::Named(chrono_tz::America::New_York)
        );
        assert_eq!(
            Zone::for_display(&info, None),
            Zone::Named(chrono_tz::Europe::Paris)
        );
        info.rrule = "FREQ=WEEKLY;COUNT=3".into();
        assert_eq!(
            Zone::for_display(&info, ny),
            Zone::Named(chrono_tz::Asia::Tokyo)
        );
        info.server_zone.clear();
        info.rrule.clear();
        assert_eq!(Zone::for_display(&info, None), Zone::Local);
    }

    #[test]
    fn resources_give_the_node_count() {
        let r = read_resources(&["select=2:ncpus=8+1:ncpus=4".into()]).unwrap();
        assert_eq!(r.nodes, 3);
        assert_eq!(r.text, "select=2:ncpus=8+1:ncpus=4");
        let r = read_resources(&[
            "nodes=4,walltime=1:00:00".into(),
            "nodeset=fast".into(),
            "mem=2gb".into(),
        ])
        .unwrap();
        assert_eq!(
            r,
            Resources {
                text: "nodes=4,walltime=1:00:00,nodeset=fast,mem=2gb".into(),
                nodes: 4,
                node_set: "fast".into(),
                walltime: Some(3600),
            }
        );
        assert_eq!(read_resources(&["nodes=2:ppn=8".into()]).unwrap().nodes, 2);
        // Resources the client does not know go to the daemon as written.
        let r = read_resources(&["ncpus=4,scratch=10gb".into()]).unwrap();
        assert_eq!((r.nodes, r.text.as_str()), (0, "ncpus=4,scratch=10gb"));
    }

    #[test]
    fn bad_resources_say_what_to_write() {
        let err = read_resources(&["nodes".into()]).unwrap_err();
        assert!(err.contains("write NAME=VALUE"), "{err}");
        let err = read_resources(&["nodeset=".into()]).unwrap_err();
        assert!(err.contains("both the name and the value"), "{err}");
        let err = read_resources(&["nodes=0".into()]).unwrap_err();
        assert!(err.contains("nodes"), "{err}");
        let err = read_resources(&["nodes=2,select=2".into()]).unwrap_err();
        assert!(err.contains("cannot be used together"), "{err}");
        assert!(read_resources(&["walltime=soon".into()]).is_err());
    }

    #[test]
    fn nqs_forms_become_resources() {
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let tv = ["-R", "-E", "-N", "-U"];
        assert_eq!(
            rewrite_nqs(&words("-R 1300 -lP 4 -lT1:00:00 -N -lP"), &tv).unwrap(),
            words("-R 1300 -l nodes=4 -l walltime=1:00:00 -N -lP")
        );
        assert_eq!(
            rewrite_nqs(&words("-lP8"), &tv).unwrap(),
            words("-l nodes=8")
        );
        let err = rewrite_nqs(&words("-lP"), &tv).unwrap_err();
        assert_eq!(err, "-lP needs a value, e.g. -lP 4");
    }

    #[test]
    fn states() {
        assert_eq!(state_codes("RESV_CONFIRMED"), ("CO", 2));
        assert_eq!(state_codes("RESV_RUNNING"), ("RN", 5));
        assert_eq!(state_codes("RESV_FINISHED"), ("FN", 6));
        assert_eq!(state_codes("odd"), ("odd", 0));
        assert_eq!(confirmation_word("RESV_RUNNING"), "CONFIRMED");
        assert_eq!(confirmation_word("RESV_CONFIRMED"), "CONFIRMED");
        assert_eq!(confirmation_word("RESV_DEGRADED"), "DEGRADED");
    }

    #[test]
    fn lists_split_on_commas() {
        assert_eq!(
            split_lists(&["ann, bob".into(), "".into(), "cy".into()]),
            vec!["ann", "bob", "cy"]
        );
    }

    #[test]
    fn json_names_the_fields() {
        let info = ReservationInfo {
            id: "R12.server".into(),
            state: "RESV_CONFIRMED".into(),
            start: 100,
            end: 200,
            duration: 100,
            nodes: 2,
            ..ReservationInfo::default()
        };
        let doc = serde_json::to_value(info_json(&info)).unwrap();
        assert_eq!(doc["id"], "R12.server");
        assert_eq!(doc["start"], 100);
        assert_eq!(doc["ctime"], serde_json::Value::Null);
        assert_eq!(doc["nodes"], 2);
        assert!(doc.get("rrule").is_none());
    }
}
