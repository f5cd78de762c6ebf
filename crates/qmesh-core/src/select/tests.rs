use super::*;
use chrono::TimeZone;

fn t(secs: i64) -> Time {
    chrono::Utc.timestamp_opt(1_700_000_000 + secs, 0).unwrap()
}

fn resources(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn job<'a>(res: &'a BTreeMap<String, String>) -> Candidate<'a> {
    Candidate {
        state: 'Q',
        name: "hello",
        owner: "alice",
        owner_host: "login1.example.org",
        queue: "batch",
        rerunnable: true,
        hold_types: "n",
        resources: res,
        qtime: Some(t(0)),
        ..Candidate::default()
    }
}

fn at(text: &str) -> Result<Time, String> {
    text.parse::<i64>()
        .map(t)
        .map_err(|_| format!("bad time {text}"))
}

#[test]
fn operators_split_off_the_front_and_default_to_eq() {
    assert_eq!(Op::split(".gt.5"), (Op::Gt, "5"));
    assert_eq!(Op::split("5"), (Op::Eq, "5"));
    assert_eq!(Op::split(".ne.n"), (Op::Ne, "n"));
    assert!(Op::Le.holds(Ordering::Equal) && Op::Le.holds(Ordering::Less));
    assert!(!Op::Lt.holds(Ordering::Equal));
}

#[test]
fn resource_lists_compare_by_kind_of_value() {
    let res = resources(&[("walltime", "02:00:00"), ("ncpus", "8"), ("mem", "4gb")]);
    let c = job(&res);
    let sel = |text: &str| Selection {
        resources: parse_resources(text).unwrap(),
        ..Selection::default()
    };
    assert!(sel("walltime.gt.01:00:00,ncpus.ge.4").matches(&c));
    assert!(!sel("walltime.gt.02:00:00").matches(&c));
    assert!(
        sel("walltime.eq.2:00:00").matches(&c),
        "durations, not text"
    );
    assert!(sel("mem.ge.4096mb").matches(&c), "sizes, not text");
    assert!(!sel("mem.gt.4gb").matches(&c));
    assert!(
        sel("ncpus.lt.10").matches(&c),
        "numbers, not text (\"8\" > \"10\")"
    );
    // A resource the job does not list matches nothing, even .ne.
    assert!(!sel("ngpus.ne.1").matches(&c));
    // Strings: equality.
    let res = resources(&[("select", "2:ncpus=4"), ("place", "scatter")]);
    let c = job(&res);
    assert!(sel("select.eq.2:ncpus=4,place.ne.pack").matches(&c));
}

#[test]
fn bad_resource_lists_say_what_to_write() {
    let err = parse_resources("walltime>1:00:00").unwrap_err();
    assert!(err.contains("RESOURCE.OP.VALUE"), "{err}");
    assert!(parse_resources(".gt.5").is_err());
    assert!(parse_resources("").is_err());
}

#[test]
fn history_states_holds_and_names() {
    let res = resources(&[]);
    let mut c = job(&res);
    let current = Selection::default();
    assert!(current.matches(&c));
    c.state = 'F';
    assert!(!current.matches(&c), "finished only with -x or -H");
    let all = Selection {
        history: History::All,
        ..Selection::default()
    };
    let finished_only = Selection {
        history: History::FinishedOnly,
        ..Selection::default()
    };
    assert!(all.matches(&c) && finished_only.matches(&c));
    c.state = 'R';
    assert!(all.matches(&c) && !finished_only.matches(&c));
    let states = Selection {
        states: Some(parse_states("QR").unwrap()),
        ..Selection::default()
    };
    assert!(states.matches(&c));
    c.state = 'H';
    assert!(!states.matches(&c));
    c.hold_types = "ou";
    let holds = |text| Selection {
        holds: Some(parse_holds(text).unwrap()),
        ..Selection::default()
    };
    assert!(holds("uo").matches(&c), "any order");
    assert!(!holds("u").matches(&c), "the same set, not a subset");
    assert!(parse_holds("nu").is_err() && parse_holds("x").is_err());
    assert!(parse_states("QZ").is_err());
    let named = Selection {
        name: Some("hello".into()),
        queue: Some("batch".into()),
        rerunnable: Some(true),
        ..Selection::default()
    };
    c.state = 'Q';
    assert!(named.matches(&c));
    c.rerunnable = false;
    assert!(!named.matches(&c));
}

#[test]
fn users_match_with_and_without_hosts() {
    let res = resources(&[]);
    let c = job(&res);
    let users = |text| Selection {
        users: parse_users(text).unwrap(),
        ..Selection::default()
    };
    assert!(users("bob,alice").matches(&c));
    assert!(users("alice@*.example.org").matches(&c));
    assert!(users("alice@login1.example.org").matches(&c));
    assert!(!users("alice@login2.example.org").matches(&c));
    assert!(!users("bob").matches(&c));
    assert!(parse_users(",").is_err() && parse_users("@host").is_err());
}

#[test]
fn times_priority_checkpoint_and_project() {
    let res = resources(&[]);
    let mut c = job(&res);
    c.stime = Some(t(100));
    let test = |text| Selection {
        times: vec![parse_time_test(text, &at).unwrap()],
        ..Selection::default()
    };
    assert!(test("s.gt.50").matches(&c));
    assert!(!test("s.gt.100").matches(&c));
    assert!(test("q.le.0").matches(&c));
    assert!(!test("a.ge.0").matches(&c), "no -a time: no match");
    c.eligible_for = Some(600);
    assert!(test("g.ge.00:10:00").matches(&c));
    assert!(parse_time_test("z.gt.5", &at).is_err());
    let a = parse_execution_test(".lt.500", &at).unwrap();
    c.execution_time = Some(t(400));
    assert!(a.matches(&c));

    c.priority = 10;
    let p = |text| Selection {
        priority: vec![parse_priority(text).unwrap()],
        ..Selection::default()
    };
    assert!(p(".gt.5").matches(&c) && p("10").matches(&c) && !p(".lt.0").matches(&c));
    assert!(parse_priority("high").is_err());

    let ck = |text| Selection {
        checkpoint: vec![parse_checkpoint(text).unwrap()],
        ..Selection::default()
    };
    assert!(ck("u").matches(&c), "no checkpoint is u");
    c.checkpoint = "c=30";
    assert!(ck(".gt.c").matches(&c) && ck(".gt.c=10").matches(&c) && ck(".lt.s").matches(&c));
    assert!(parse_checkpoint(".gt.u").is_err(), "u only with eq and ne");
    assert!(parse_checkpoint("c=x").is_err());

    let project = |p: &str| Selection {
        project: Some(p.into()),
        ..Selection::default()
    };
    assert!(project(DEFAULT_PROJECT).matches(&c));
    c.project = "climate";
    assert!(project("climate").matches(&c) && !project(DEFAULT_PROJECT).matches(&c));
}

#[test]
fn arrays_only_selects_no_plain_job() {
    let res = resources(&[]);
    let c = job(&res);
    let arrays = Selection {
        arrays_only: true,
        ..Selection::default()
    };
    assert!(!arrays.matches(&c));
}
