//! qmgr as PBS admin guides use it, against the real daemon: a PBS Pro
//! queue setup pasted as it is (limits, access lists, resource bounds)
//! takes effect for qsub, qstat and spwhen; what qmesh ignores is said;
//! query_other_jobs hides other users' jobs; and `print server` restores
//! onto a fresh daemon started from the same configuration file.

use crate::harness::{Daemon, NOBODY, is_root, stderr};

/// A PBS Pro admin guide's queue, pasted as it is.
const WORKQ: &str = "\
#
# Create and define queue workq
#
create queue workq
set queue workq queue_type = Execution
set queue workq max_running = 3
set queue workq max_user_run = 1
set queue workq acl_user_enable = True
set queue workq acl_users = \"someone@*.example.com\"
set queue workq resources_max.ncpus = 16
set queue workq resources_max.mem = 32gb
set queue workq resources_max.nodes = 4
set queue workq resources_default.walltime = 00:30:00
set queue workq enabled = True
set queue workq started = True
set server log_events = 511
set server mail_from = adm
set server query_other_jobs = True
set server scheduler_iteration = 600
";

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("JSON")
}

/// The name of the user the tests run as.
fn me() -> String {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .expect("the test's user has a name")
}

#[test]
fn a_pbs_pro_queue_setup_pasted_as_is_takes_effect() {
    let d = Daemon::start();
    let script = d.work.join("workq.qmgr");
    std::fs::write(&script, WORKQ).unwrap();
    let out = d.ok("qmgr", &[script.to_str().unwrap()]);
    // What qmesh does nothing with is accepted and said, never silently.
    for attr in ["log_events", "mail_from"] {
        assert!(
            out.contains(&format!(
                "{attr} is accepted and kept, but has no effect in qmesh"
            )),
            "{out}"
        );
    }
    assert!(
        out.lines().all(|l| l.starts_with("WARNING: line ")),
        "{out}"
    );
    let listed = d.ok("qmgr", &["-c", "list queue workq"]);
    for line in [
        "    max_running = 3\n",
        "    max_user_run = 1\n",
        "    acl_user_enable = True\n",
        "    resources_max.mem = 32gb\n",
        "    resources_default.walltime = 00:30:00\n",
    ] {
        assert!(listed.contains(line), "{line}{listed}");
    }

    // The access list: this user is not in it yet.
    d.script("job.sh", "#!/bin/sh\ntrue\n");
    let out = d.run("qsub", &["-q", "workq", "job.sh"]);
    assert_eq!(out.status.code(), Some(1));
    let msg = stderr(&out);
    assert!(
        msg.contains(
            "Unauthorized Request: queue \"workq\" takes jobs only from the users in its acl_users"
        ) && msg.contains(&format!(
            "qmgr -c \"set queue workq acl_users += {}\"",
            me()
        )),
        "{msg}"
    );
    d.ok(
        "qmgr",
        &["-c", &format!("set queue workq acl_users += {}", me())],
    );
    if is_root() {
        let out = d.run_as(NOBODY, "qsub", &["-q", "workq", "job.sh"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains("and nobody@"),
            "nobody is refused: {}",
            stderr(&out)
        );
    }

    // resources_max.nodes refuses at once, with the figures.
    let out = d.run("qsub", &["-q", "workq", "-l", "nodes=5", "job.sh"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("queue \"workq\" allows at most 4 (resources_max.nodes)"),
        "{}",
        stderr(&out)
    );

    // max_user_run = 1: the second job waits while the first runs.
    let started = [d.fifo("started1"), d.fifo("started2")];
    let release = d.fifo("release1");
    d.script(
        "first.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > started1\ncat release1 > /dev/null\n",
    );
    d.script(
        "second.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > started2\n",
    );
    let first = d.qsub(&["-q", "workq", "first.sh"]);
    d.read_fifo(&started[0]);
    let second = d.qsub(&["-q", "workq", "second.sh"]);
    let job = d.job_json(&second);
    assert_eq!(job["job_state"], "Q", "{job}");
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(
        comment.contains(&format!("user {} already runs 1 job in queue workq", me()))
            && comment.contains("max_user_run = 1"),
        "{comment}"
    );
    let when = json(&d.ok("spwhen", &["--json", &second]));
    assert_eq!(when["reason"], "UserLimit", "{when:#}");
    assert!(
        when["explanation"]
            .as_str()
            .is_some_and(|e| e.contains("max_user_run = 1")),
        "{when:#}"
    );
    d.write_fifo(&release, "done\n");
    assert_eq!(d.wait_job(&first).exit_status, Some(0));
    d.read_fifo(&started[1]);
    assert_eq!(d.wait_job(&second).exit_status, Some(0));
    assert_eq!(
        d.job_json(&second)["Resource_List"]["walltime"],
        "00:30:00",
        "resources_default.walltime"
    );
}

#[test]
fn queued_limits_refuse_at_qsub_with_the_count() {
    let d = Daemon::start();
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue workq enabled = true, max_queued = \"[u:PBS_GENERIC=2]\"",
        ],
    );
    d.script("job.sh", "#!/bin/sh\ntrue\n");
    // Not started: the jobs stay queued and count.
    d.qsub(&["-q", "workq", "job.sh"]);
    d.qsub(&["-q", "workq", "job.sh"]);
    let out = d.run("qsub", &["-q", "workq", "job.sh"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!(
            "Maximum number of jobs for user {} already in queue \"workq\": 2 queued or running, \
             and max_queued [u:PBS_GENERIC=2] allows no more",
            me()
        )),
        "{}",
        stderr(&out)
    );
    // Another queue is not counted against it.
    d.qsub(&["-q", "batch", "-h", "job.sh"]);
    // Torque's max_user_queuable, the same on the server's side.
    d.ok("qmgr", &["-c", "set server max_user_queuable = 3"]);
    let out = d.run("qsub", &["-q", "batch", "job.sh"]);
    assert!(
        stderr(&out).contains("already in the server: 3 queued or running"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn query_other_jobs_false_shows_users_their_own_jobs() {
    if !is_root() {
        eprintln!("not root: the rule is covered by the daemon's own checks");
        return;
    }
    let d = Daemon::start();
    d.script("job.sh", "#!/bin/sh\ntrue\n");
    let mine = d.qsub(&["-h", "job.sh"]);
    let out = d.run_as(NOBODY, "qsub", &["-h", "job.sh"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let theirs = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let seen = |uid: Option<u32>| -> Vec<String> {
        let out = match uid {
            Some(uid) => d.run_as(uid, "qstat", &["--json"]),
            None => d.run("qstat", &["--json"]),
        };
        assert!(out.status.success(), "{}", stderr(&out));
        let doc = json(&String::from_utf8_lossy(&out.stdout));
        doc["Jobs"]
            .as_object()
            .map(|jobs| jobs.keys().cloned().collect())
            .unwrap_or_default()
    };
    assert_eq!(
        seen(Some(NOBODY)).len(),
        2,
        "PBS's installed default shows all"
    );
    d.ok("qmgr", &["-c", "set server query_other_jobs = False"]);
    assert_eq!(seen(Some(NOBODY)), vec![theirs.clone()]);
    assert_eq!(seen(None).len(), 2, "a manager sees every job");
    let out = d.run_as(NOBODY, "qstat", &[&mine]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("Unauthorized Request") && stderr(&out).contains("query_other_jobs"),
        "{}",
        stderr(&out)
    );
    // spq and spwhen follow the same rule.
    let listed = |spq: &str, id: &str| {
        let seq = format!("{}.", id.split('.').next().unwrap());
        spq.lines().any(|l| l.starts_with(&seq))
    };
    let out = d.run_as(NOBODY, "spq", &[]);
    let spq = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(listed(&spq, &theirs) && !listed(&spq, &mine), "{spq}");
    let all = d.ok("spq", &[]);
    assert!(
        listed(&all, &mine) && listed(&all, &theirs),
        "a manager sees every job: {all}"
    );
    let out = d.run_as(NOBODY, "spwhen", &[&mine]);
    assert!(
        !out.status.success() && stderr(&out).contains("query_other_jobs"),
        "{}",
        stderr(&out)
    );
    let out = d.run_as(NOBODY, "spwhen", &[&theirs]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A site with node sets, a node group per period, queues and a calendar.
const SITE: &str = r#"
[agents]
local = true
local_host = "localhost"

[server]
default_queue = "batch"

[calendar]
time_zone = "Europe/London"

[calendar.periods]
NIGHT = ["Mon-Fri 18:00-08:00"]

[[node_set]]
name = "s1"
nodes = [{ name = "a0", host = "localhost" }, { name = "a1", host = "localhost" }]

[[node_set]]
name = "s2"
nodes = [{ name = "b0", host = "localhost" }, { name = "b1", host = "localhost" }]

[[node_group]]
name = "any"
sets = ["s1", "s2"]
periods = [{ period = "NIGHT", sets = ["s2"] }]

[[queue]]
name = "batch"
max_walltime = "24:00:00"
default_nodes = 2
max_nodes = 4
node_group = "any"

[[queue]]
name = "night"
periods = ["NIGHT"]
"#;

/// PBS's lines and qmesh's, changing what the file made and adding more.
const CHANGES: &str = "\
create resource nmics type = long, flag = nh
set queue batch max_user_run = 2, resources_max.ncpus = 8, resources_max.nmics = 2
set queue batch resources_max.nodes = 2, resources_default.nodes = 1
unset queue batch resources_max.walltime
set queue batch acl_group_enable = true, acl_groups = \"staff,root\"
set calendar period.WEEKEND = \"Sat-Sun\"
set node_group any sets.WEEKEND = s1
unset node_group any sets.NIGHT
create queue express priority = 10, enabled = true, started = true
set queue express max_run = \"[u:PBS_GENERIC=1],[o:PBS_ALL=4]\", comment = \"short jobs\"
delete queue night
unset calendar period.NIGHT
set server max_queued = \"[u:PBS_GENERIC=100]\", log_events = 511, default_queue = express
";

#[test]
fn print_server_restores_onto_a_fresh_daemon_with_the_same_file() {
    let first = Daemon::start_with(Some(SITE));
    let script = first.work.join("changes.qmgr");
    std::fs::write(&script, CHANGES).unwrap();
    first.ok("qmgr", &[script.to_str().unwrap()]);
    let dump = first.ok("qmgr", &["-c", "print server"]);
    for absent in ["create queue batch", "create node_group any"] {
        assert!(!dump.contains(absent), "{absent}:\n{dump}");
    }
    for line in [
        "create resource nmics\n",
        "create queue express\n",
        "delete queue night\n",
        "unset calendar period.NIGHT\n",
    ] {
        assert!(dump.contains(line), "{line}{dump}");
    }

    // A second daemon from the same file, with a fresh state directory.
    let second = Daemon::start_with(Some(SITE));
    let fresh = second.ok("qmgr", &["-c", "print server"]);
    assert_ne!(fresh, dump);
    let file = second.work.join("backup.qmgr");
    std::fs::write(&file, &dump).unwrap();
    let out = second.run("qmgr", &[file.to_str().unwrap()]);
    assert!(out.status.success(), "{}\n{dump}", stderr(&out));
    assert_eq!(second.ok("qmgr", &["-c", "print server"]), dump);
}

#[test]
fn qmgr_flags_and_verbs_pbs_admins_type() {
    let d = Daemon::start();
    // active, ';' and += / -= on an access list, in one -c.
    let out = d.ok(
        "qmgr",
        &[
            "-c",
            "active queue batch; set queue acl_users = alice; set queue acl_users += \"bob,carol\"; \
             set queue acl_users -= bob; list queue",
        ],
    );
    assert!(out.contains("    acl_users = alice,carol\n"), "{out}");
    // -n checks and changes nothing; -e echoes; -z keeps errors off stderr.
    let before = d.ok("qmgr", &["-c", "print server"]);
    let out = d.ok(
        "qmgr",
        &["-n", "-e", "-c", "set queue batch max_running = 5"],
    );
    assert!(out.contains("set queue batch max_running = 5"), "{out}");
    assert_eq!(d.ok("qmgr", &["-c", "print server"]), before);
    let out = d.run("qmgr", &["-z", "-c", "set queue batch max_running = lots"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    let out = d.run("qmgr", &["-c", "set queue batch max_running = lots"]);
    assert!(stderr(&out).contains("\"lots\""), "{}", stderr(&out));
    // A numeric limit takes += as PBS's do.
    d.ok("qmgr", &["-c", "set queue batch max_running = 5"]);
    d.ok("qmgr", &["-c", "set queue batch max_running += 2"]);
    let out = d.ok("qmgr", &["-c", "list queue batch"]);
    assert!(out.contains("    max_running = 7\n"), "{out}");
    // Resources as PBS Pro defines them.
    d.ok(
        "qmgr",
        &["-c", "create resource nmics type = long, flag = nh"],
    );
    let out = d.ok("qmgr", &["-c", "list resource"]);
    assert_eq!(out, "Resource nmics\n    type = long\n    flag = nh\n\n");
    let out = d.run("qmgr", &["-c", "set queue batch resources_max.frob = 1"]);
    assert!(
        stderr(&out).contains("unknown resource \"frob\"") && stderr(&out).contains("nmics"),
        "{}",
        stderr(&out)
    );
}

/// What an OpenPBS install recipe and a Torque site's leftovers write,
/// as one script: hosts added with create node, a hook imported from a
/// file, the sched object, Torque's attributes. It applies whole, each
/// line either done or answered with a WARNING saying why not.
const OPENPBS_RECIPE: &str = "\
create node cn01 resources_available.ncpus = 4, resources_available.mem = 8gb, Mom = cn01
create node cn02
set node cn02 state = offline
create hook site_filter
set hook site_filter event = queuejob
set hook site_filter alarm = 10
import hook site_filter application/x-python default HOOKFILE
set sched scheduling = True
set sched scheduler_iteration = 600
set queue batch resources_default.neednodes = 1
set server timeout_for_job_delete = 120
set server timeout_for_job_requeue = 120
set server default_chunk.ncpus = 1
";

#[test]
fn an_openpbs_install_recipe_applies_whole() {
    let d = Daemon::start();
    let hook = d.work.join("site_filter.py");
    std::fs::write(
        &hook,
        "import pbs\ne = pbs.event()\nif e.job.Resource_List['walltime'] is None:\n    \
         e.reject('give a walltime')\ne.accept()\n",
    )
    .unwrap();
    let script = d.work.join("recipe.qmgr");
    std::fs::write(
        &script,
        OPENPBS_RECIPE.replace("HOOKFILE", hook.to_str().unwrap()),
    )
    .unwrap();
    let out = d.ok("qmgr", &[script.to_str().unwrap()]);
    for said in [
        "create node cn01: node set \"cn01\" made, one node on host cn01",
        "Mom = cn01: not kept",
        "imports PBS's Python module pbs",
        "sched scheduler_iteration = 600: not kept",
        "resources_default.neednodes",
        "timeout_for_job_delete",
    ] {
        assert!(out.contains(said), "{said:?} in\n{out}");
    }
    let sets = d.ok("qmgr", &["-c", "list node_set cn01"]);
    assert!(sets.contains("attributes = mem=8gb, ncpus=4"), "{sets}");
    let hooks = d.ok("qmgr", &["-c", "list hook site_filter"]);
    assert!(hooks.contains("enabled = false"), "{hooks}");
    // The daemon still runs jobs where it did.
    d.script("job.sh", "#!/bin/sh\ntrue\n");
    let id = d.qsub(&["job.sh"]);
    assert_eq!(d.wait_job(&id).exit_status, Some(0));
}
