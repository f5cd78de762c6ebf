//! qsub's PBS Pro and Torque options against the real daemon: what a job
//! keeps of them, mail through the site's sendmail, `-W block=true`,
//! `-W group_list=`, and the `before`/`on` dependencies.

use crate::harness::{Daemon, NOBODY, is_root, stderr};

/// The embedded machine (a 4x4 mesh on one local host) with `extra`.
fn machine_with(extra: &str) -> String {
    format!(
        "[agents]\nlocal = true\nlocal_host = \"localhost\"\n\n[server]\ndefault_queue = \"batch\"\n\n\
         [[queue]]\nname = \"batch\"\nmax_walltime = \"24:00:00\"\ndefault_walltime = \"1:00:00\"\n\n\
         [[node_set]]\nname = \"local\"\ntopology = \"mesh2d\"\ndims = [4, 4]\nhost = \"localhost\"\n\n{extra}"
    )
}

#[test]
fn pbs_options_are_kept_and_shown() {
    let d = Daemon::start();
    d.script("opts.sh", "#!/bin/sh\ntrue\n");
    let id = d.qsub(&[
        "-p",
        "5",
        "-P",
        "climate",
        "-S",
        "/bin/sh",
        "-m",
        "n",
        "-k",
        "oe",
        "-c",
        "s",
        "-W",
        "umask=027",
        "-l",
        "select=2:ncpus=1:mem=100mb",
        "-l",
        "place=pack",
        "-j",
        "eo",
        "opts.sh",
    ]);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}");
    assert_eq!(info.job_priority, 5);
    assert_eq!(info.project, "climate");
    assert_eq!(info.shell_path, vec!["/bin/sh".to_string()]);
    assert_eq!(info.mail_points, "n");
    assert_eq!(info.keep_files, "oe");
    assert_eq!(info.umask, Some(0o27));
    assert_eq!(info.join_path, "eo");
    assert_eq!(info.nodes, 2);
    assert_eq!(info.resource_list["select"], "2:ncpus=1:mem=100mb");
    assert_eq!(info.resource_list["place"], "pack");
    assert_eq!(info.resource_list["ncpus"], "2");
    assert_eq!(info.resource_list["mem"], "200mb");
    assert_eq!(info.resource_list["nodect"], "2");
    assert!(
        info.notes.iter().any(|n| n.contains("does not checkpoint")),
        "{:?}",
        info.notes
    );
    assert!(
        info.comment.contains("does not checkpoint"),
        "{}",
        info.comment
    );
    assert!(info.exec_host.contains("/0*1"), "{}", info.exec_host);
}

#[test]
fn qsub_block_waits_for_the_job_and_exits_with_its_status() {
    let d = Daemon::start();
    d.script("three.sh", "#!/bin/sh\nexit 3\n");
    let out = d.run("qsub", &["-W", "block=true", "three.sh"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(id.ends_with(".") || id.contains('.'), "the id first: {id}");
    assert_eq!(d.wait_job(&id).exit_status, Some(3));
    d.script("ok.sh", "#!/bin/sh\n#PBS -W block=true\ntrue\n");
    let out = d.run("qsub", &["ok.sh"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn mail_goes_out_through_the_sites_sendmail() {
    use std::os::unix::fs::PermissionsExt;
    // A sendmail that files each message and says so on a FIFO.
    let mailer = tempfile::tempdir().unwrap();
    std::fs::set_permissions(mailer.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let sendmail = mailer.path().join("sendmail");
    let box_path = mailer.path().join("mailbox");
    let fifo = mailer.path().join("mailed");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap();
    std::fs::write(
        &sendmail,
        format!(
            "#!/bin/sh\n{{ echo \"ARGS: $*\"; cat; echo ----; }} >> {box}\necho sent > {fifo}\n",
            box = box_path.display(),
            fifo = fifo.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&sendmail, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = machine_with(&format!(
        "[jobs]\nsendmail = \"{}\"\nmail_from = \"pbsadmin\"\n",
        sendmail.display()
    ));
    let d = Daemon::start_with(Some(&config));
    d.script(
        "job.sh",
        "#!/bin/sh\n#PBS -m be\n#PBS -M alice@example.org\nexit 4\n",
    );
    let id = d.qsub(&["job.sh"]);
    // Two mailers may be at the FIFO at once: count what came, not reads.
    let mut sent = 0;
    let mut await_mail = |total: usize| {
        while sent < total {
            sent += d.read_fifo(&fifo).lines().count();
        }
    };
    await_mail(2);
    assert_eq!(d.wait_job(&id).exit_status, Some(4));
    let mail = std::fs::read_to_string(&box_path).unwrap();
    assert!(
        mail.contains("ARGS: -f pbsadmin alice@example.org"),
        "{mail}"
    );
    assert!(mail.contains(&format!("Subject: PBS JOB {id}")), "{mail}");
    assert!(mail.contains("Begun execution"), "{mail}");
    assert!(
        mail.contains("Execution terminated\nExit_status=4"),
        "{mail}"
    );
    // -m n sends none; the default (a) none for a job that ends well; a
    // job killed at its wall time is an abort.
    d.script("quiet.sh", "#!/bin/sh\n#PBS -m n\ntrue\n");
    d.wait_job(&d.qsub(&["quiet.sh"]));
    d.script("plain.sh", "#!/bin/sh\ntrue\n");
    d.wait_job(&d.qsub(&["plain.sh"]));
    d.script("long.sh", "#!/bin/sh\nsleep 600\n");
    let long = d.qsub(&["-l", "walltime=1", "long.sh"]);
    await_mail(3);
    d.wait_job(&long);
    let mail = std::fs::read_to_string(&box_path).unwrap();
    assert_eq!(mail.matches("----").count(), 3, "{mail}");
    assert!(mail.contains("Aborted by PBS Server"), "{mail}");
}

#[test]
fn mail_without_a_sendmail_is_noted_in_the_comment() {
    let d = Daemon::start();
    d.script("job.sh", "#!/bin/sh\ntrue\n");
    let id = d.qsub(&["-m", "abe", "job.sh"]);
    let info = d.wait_job(&id);
    assert!(
        info.comment.contains("no sendmail configured"),
        "{}",
        info.comment
    );
}

#[test]
fn before_dependencies_and_on_counts() {
    let d = Daemon::start();
    d.script("b.sh", "#!/bin/sh\ntrue\n");
    d.script("a.sh", "#!/bin/sh\ntrue\n");
    let b = d.qsub(&["-W", "depend=on:1", "b.sh"]);
    let json = d.job_json(&b);
    assert_eq!(json["job_state"], "H", "{json}");
    let a = d.qsub(&["-W", &format!("depend=beforeok:{b}"), "a.sh"]);
    assert_eq!(d.wait_job(&a).exit_status, Some(0));
    let info = d.wait_job(&b);
    assert_eq!(info.exit_status, Some(0));
    assert_eq!(info.depend, format!("afterok:{a}"));
    assert!(info.stime >= d.wait_job(&a).end_time);
    // A before on a job that has run is refused, naming it.
    let out = d.run("qsub", &["-W", &format!("depend=beforeok:{b}"), "a.sh"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("already started"), "{}", stderr(&out));
}

#[test]
fn group_list_runs_the_job_with_a_group_of_the_user() {
    if !is_root() {
        eprintln!("skipped: needs root to submit as another user");
        return;
    }
    let d = Daemon::start();
    d.script(
        "gid.sh",
        "#!/bin/sh\nid -g > \"$PBS_O_WORKDIR/gid.$PBS_JOBID\"\n",
    );
    // nobody's primary group is nogroup (65534): allowed.
    // nobody's home does not exist: start where qsub ran (Torque's -d).
    let work = d.work.display().to_string();
    let out = d.run_as(
        NOBODY,
        "qsub",
        &["-d", &work, "-W", "group_list=65534", "gid.sh"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}");
    assert_eq!(info.group, "nogroup");
    let gid = std::fs::read_to_string(d.work.join(format!("gid.{id}"))).unwrap();
    assert_eq!(gid.trim(), "65534");
    // A group nobody is not in: refused, naming the group.
    let out = d.run_as(NOBODY, "qsub", &["-W", "group_list=root", "gid.sh"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is not a member of group root"),
        "{}",
        stderr(&out)
    );
    let out = d.run("qsub", &["-W", "group_list=no_such_group_x", "gid.sh"]);
    assert!(
        stderr(&out).contains("there is no group"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn after_starts_a_job_once_another_has_started() {
    let d = Daemon::start();
    let first_up = d.fifo("first_up");
    let second_up = d.fifo("second_up");
    let go = d.fifo("go");
    d.script(
        "first.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho up > first_up\nread x < go\n",
    );
    d.script(
        "second.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho up > second_up\n",
    );
    // Held until it is released, so that `after` has something to wait for.
    let first = d.qsub(&["-h", "first.sh"]);
    let second = d.qsub(&["-W", &format!("depend=after:{first}"), "second.sh"]);
    assert_eq!(d.job_json(&second)["job_state"], "H");
    d.ok("qrls", &[&first]);
    d.read_fifo(&first_up);
    // The second starts while the first still runs.
    d.read_fifo(&second_up);
    assert_eq!(d.wait_job(&second).exit_status, Some(0));
    assert_eq!(d.job_json(&first)["job_state"], "R");
    d.write_fifo(&go, "go\n");
    assert_eq!(d.wait_job(&first).exit_status, Some(0));
}

#[test]
fn quiet_and_foreground_flags_are_accepted_and_z_prints_no_id() {
    let d = Daemon::start();
    d.script("z.sh", "#!/bin/sh\ntrue\n");
    let out = d.run("qsub", &["-z", "-f", "z.sh"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "-z prints no id");
    let ids = d.all_job_ids();
    assert_eq!(ids.len(), 1, "the job was stored: {ids:?}");
    assert_eq!(d.wait_job(&ids[0]).exit_status, Some(0));
}

/// `-W sandbox=PRIVATE` (PBS Pro): the job starts in a directory of its
/// own under its owner's home, `PBS_JOBDIR` names it, qstat -f shows
/// `sandbox = PRIVATE`, and the directory is gone once the job has ended.
#[test]
fn sandbox_private_runs_a_job_in_its_own_directory_removed_at_its_end() {
    let d = Daemon::start();
    d.script(
        "where.sh",
        "#!/bin/sh\n#PBS -W sandbox=PRIVATE\ntouch made_here\n\
         echo \"$(pwd) $PBS_JOBDIR $(ls)\" > \"$PBS_O_WORKDIR/where\"\n",
    );
    let id = d.qsub(&["-h", "where.sh"]);
    assert_eq!(d.job_json(&id)["sandbox"], "PRIVATE");
    d.ok("qrls", &[&id]);
    assert_eq!(d.wait_job(&id).exit_status, Some(0));
    let text = std::fs::read_to_string(d.work.join("where")).expect("the job wrote where");
    let words: Vec<&str> = text.split_whitespace().collect();
    let home = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .dir;
    let private = home.join(format!("pbs.{id}"));
    assert_eq!(
        words,
        [
            private.to_str().unwrap(),
            private.to_str().unwrap(),
            "made_here"
        ],
        "started in its private directory, named by PBS_JOBDIR, empty at first"
    );
    assert!(
        !private.exists(),
        "{} is removed at the job's end",
        private.display()
    );

    let out = d.run("qsub", &["-W", "sandbox=ELSEWHERE", "where.sh"]);
    assert!(
        stderr(&out).contains("write sandbox=PRIVATE"),
        "{}",
        stderr(&out)
    );
}
