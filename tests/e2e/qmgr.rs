//! qmgr against the daemon: scripts apply all or nothing, changes persist,
//! print server is a backup that restores.

use crate::harness::{Daemon, stderr};

#[test]
fn a_script_applies_all_or_nothing() {
    let d = Daemon::start();
    let before = d.ok("qmgr", &["-c", "print server"]);
    let script = d.work.join("setup.qmgr");
    std::fs::write(
        &script,
        "create queue fast priority = 10\nset queue fast enabled = true\nset queue fast started = maybe\n",
    )
    .unwrap();
    let out = d.run("qmgr", &[script.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let msg = stderr(&out);
    assert!(msg.contains("line 3") && msg.contains("\"maybe\""), "{msg}");
    assert_eq!(
        d.ok("qmgr", &["-c", "print server"]),
        before,
        "nothing applied"
    );

    std::fs::write(
        &script,
        "create queue fast priority = 10\nset queue fast enabled = true, started = true\nset per_request ncpus = 2 fast\n",
    )
    .unwrap();
    d.ok("qmgr", &[script.to_str().unwrap()]);
    let listed = d.ok("qmgr", &["-c", "list queue fast"]);
    assert!(listed.contains("    priority = 10\n"), "{listed}");
    assert!(
        listed.contains("    resources_default.nodes = 2\n"),
        "{listed}"
    );
}

#[test]
fn configuration_changes_survive_a_restart_and_print_server_restores_them() {
    let mut d = Daemon::start();
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue night priority=5,enabled=true,started=true",
        ],
    );
    d.ok("qmgr", &["-c", "set queue batch resources_max.nodes = 8"]);
    let backup = d.ok("qmgr", &["-c", "print server"]);
    d.stop();
    d.spawn();
    assert_eq!(d.ok("qmgr", &["-c", "print server"]), backup);
    d.script("big.sh", "echo\n");
    let out = d.run("qsub", &["-lP", "9", "big.sh"]);
    assert!(stderr(&out).contains("at most 8"), "{}", stderr(&out));

    // The backup, applied to a fresh server started from the same
    // configuration (the embedded default makes batch), recreates it.
    let fresh = Daemon::start();
    let file = fresh.work.join("backup.qmgr");
    std::fs::write(&file, &backup).unwrap();
    let out = fresh.run("qmgr", &[file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fresh.ok("qmgr", &["-c", "print server"]), backup);
}

#[test]
fn qstat_dash_q_shows_queues() {
    let d = Daemon::start();
    let out = d.ok("qstat", &["-Q"]);
    let header = out.lines().next().unwrap();
    for col in ["Queue", "Max", "Tot", "Ena", "Str", "Que", "Run", "Hld"] {
        assert!(header.contains(col), "{header}");
    }
    assert!(out.lines().any(|l| l.starts_with("batch")), "{out}");
    let json: serde_json::Value = serde_json::from_str(&d.ok("qstat", &["-Q", "--json"])).unwrap();
    assert_eq!(json["Queue"]["batch"]["enabled"], "True", "{json}");
}

#[test]
fn errors_in_the_machines_description_are_named_and_change_nothing() {
    let d = Daemon::start();
    let before = d.ok("qmgr", &["-c", "print server"]);
    let script = d.work.join("bad.qmgr");
    // Each script's first line is good; its second names what is wrong.
    for (text, named) in [
        (
            "create node_group g sets = local\nset queue batch node_sets = nosuch\n",
            "node set \"nosuch\" does not exist",
        ),
        ("create node_group g sets = \"local,mars\"\n", "\"mars\""),
        (
            "create node_set extra nodes = \"x[1-4]\", host = localhost\n\
             create node_set more nodes = \"x4,x5\", host = localhost\n",
            "node \"x4\" is already in node set \"extra\"",
        ),
        (
            "create node_set extra nodes = \"local00\", host = localhost\n",
            "\"local00\"",
        ),
        (
            "set calendar period.DAY = \"Mon-Fri 10:00-18:00\"\n\
             set calendar period.NIGHT = \"Mon-Fri 25:00-10:00\"\n",
            "25:00",
        ),
        (
            "set calendar time_zone = Europe/London\nset calendar time_zone = Mars/Olympus\n",
            "Mars/Olympus",
        ),
        (
            "create queue night enabled = true\nset queue night periods = NIGHT\n",
            "\"NIGHT\"",
        ),
    ] {
        std::fs::write(&script, text).unwrap();
        let out = d.run("qmgr", &[script.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{text}");
        let msg = stderr(&out);
        assert!(
            msg.contains("line ") && msg.contains(named) && msg.contains("nothing was changed"),
            "{text}: {msg}"
        );
        assert_eq!(
            d.ok("qmgr", &["-c", "print server"]),
            before,
            "{text}: nothing applied"
        );
    }
}

#[test]
fn a_pbs_holidays_file_is_imported_into_the_calendar() {
    let d = Daemon::start();
    let holidays = d.work.join("holidays");
    std::fs::write(
        &holidays,
        "* PBS Pro holidays file\nYEAR 2027\n\
         weekday 0800 1730\nsaturday none all\nsunday none all\n\
         1 Jan 1 New Year's Day\n359 Dec 25 Christmas Day\n",
    )
    .unwrap();
    let script = d.work.join("cal.qmgr");
    let path = holidays.to_str().unwrap();
    std::fs::write(
        &script,
        format!("set calendar time_zone = Europe/London\nimport holidays {path}\n"),
    )
    .unwrap();
    d.ok("qmgr", &[script.to_str().unwrap()]);
    let listed = d.ok("qmgr", &["-c", "list calendar"]);
    assert!(listed.contains("Mon-Fri 08:00-17:30"), "{listed}");
    assert!(
        listed.contains("2027-12-25 Christmas Day") && listed.contains("2027-01-01"),
        "{listed}"
    );
    assert!(listed.contains("Europe/London"), "{listed}");

    // A bad file is named with its line; nothing is changed.
    std::fs::write(&holidays, "YEAR 2027\nweekday 2500 1730\n").unwrap();
    let before = d.ok("qmgr", &["-c", "print server"]);
    let out = d.run("qmgr", &["-c", &format!("import holidays {path}")]);
    assert_eq!(out.status.code(), Some(1));
    let msg = stderr(&out);
    assert!(
        msg.contains(path) && msg.contains("line 2") && msg.contains("nothing was changed"),
        "{msg}"
    );
    assert_eq!(d.ok("qmgr", &["-c", "print server"]), before);
}

/// qmgr's changes go to the audit log (STATE/server_priv/audit/YYYYMMDD):
/// who, when, what; a script refused or one that changes nothing does not.
#[test]
fn qmgr_changes_are_audited_with_who_and_what() {
    let d = Daemon::start();
    d.ok("qmgr", &["-c", "set server comment = audited"]);
    let _ = d.run("qmgr", &["-c", "set server no_such_attribute = 1"]);
    d.ok("qmgr", &["-c", "list server"]);
    d.ok("qmgr", &["-c", "set queue batch max_running = 4"]);
    // tracejob answers once everything the log writer had is on disk.
    let _ = d.run("tracejob", &["1"]);
    let dir = d.state_dir.join("server_priv/audit");
    let mut text = String::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        text.push_str(&std::fs::read_to_string(entry.path()).unwrap());
    }
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let fields: Vec<&str> = lines[0].splitn(4, ';').collect();
    assert_eq!(fields[0].len(), "03/04/2026 05:06:07".len(), "{text}");
    assert!(fields[1].starts_with("root@"), "{text}");
    assert_eq!(fields[2], "-c", "{text}");
    assert_eq!(fields[3], "set server comment = audited", "{text}");
    assert!(
        lines[1].ends_with(";set queue batch max_running = 4"),
        "{text}"
    );
}
