//! The PBS Pro and Torque attributes qmgr accepts although qmesh does
//! nothing with them, so that an admin guide's lines and a PBS server's
//! `print server` paste without error. Each is kept (list and print show
//! it) and, when set, answered with a WARNING naming the attribute and
//! saying why it has no effect here, never silently. Some have a value
//! that is what qmesh does anyway (`flatuid = True`): that value is taken
//! without a warning and kept nowhere.
//!
//! Read-only attributes (`total_jobs`, `resources_assigned.*`) are refused.

use super::values::{parse_bool, update_list};
use super::vocab::Op;

/// Which object an attribute belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Object {
    Queue,
    Server,
    Both,
}

/// `(name, object, the value qmesh already behaves as, why it has no effect)`.
#[rustfmt::skip]
const INERT: &[(&str, Object, Option<&str>, &str)] = &[
    // PBS Pro and Torque, on queues.
    ("acl_group_sloppy", Object::Both, None, "acl_groups is checked against the job's group only"),
    ("alt_router", Object::Queue, None, "route queues route at once, in order"),
    ("backfill_depth", Object::Both, None, "set server backfill = easy (one reservation) or conservative (all)"),
    ("checkpoint_min", Object::Queue, None, "qmesh does not checkpoint jobs"),
    ("checkpoint_defaults", Object::Both, None, "qmesh does not checkpoint jobs"),
    ("disallowed_types", Object::Queue, None, "qmesh has no interactive job type yet, and takes arrays in every queue"),
    ("features_required", Object::Queue, None, "a queue's node_sets choose the nodes its jobs run on"),
    ("ghost_queue", Object::Queue, None, "Torque's internal flag"),
    ("keep_completed", Object::Queue, None, "finished jobs stay for the server's job_history_duration"),
    ("kill_delay", Object::Queue, None, "the server's kill_delay applies to every job"),
    ("max_array_size", Object::Queue, None, "the server's max_array_size applies to every array"),
    ("max_group_run_soft", Object::Both, None, "qmesh has no soft limits; max_group_run is a hard one"),
    ("max_user_run_soft", Object::Both, None, "qmesh has no soft limits; max_user_run is a hard one"),
    ("max_run_soft", Object::Both, None, "qmesh has no soft limits; max_run is a hard one"),
    ("node_group_key", Object::Both, None, "node groups are qmgr's node_group objects"),
    ("partition", Object::Queue, None, "qmesh has one scheduler"),
    ("queued_jobs_threshold", Object::Both, None, "qmesh has no eligible-job thresholds"),
    ("rendezvous_retry", Object::Queue, None, "qmesh has no rendezvous queues"),
    ("require_cred", Object::Queue, None, "qmesh identifies users by the socket"),
    ("require_cred_enable", Object::Queue, None, "qmesh identifies users by the socket"),
    ("reserved_expedite", Object::Queue, None, "qmesh has no expedite queues"),
    ("reserved_sync", Object::Queue, None, "qmesh has no synchronised queues"),
    ("required_login_property", Object::Queue, None, "a queue's node_sets choose the nodes its jobs run on"),
    ("route_held_jobs", Object::Queue, None, "held jobs are routed like the others"),
    ("route_waiting_jobs", Object::Queue, None, "waiting jobs are routed like the others"),
    ("route_lifetime", Object::Queue, None, "route queues route at once, or hold the job"),
    ("route_retry_time", Object::Queue, None, "route queues route at once, or hold the job"),
    ("is_transit", Object::Queue, None, "route queues keep no jobs"),
    ("max_slot_limit", Object::Both, None, "each array's own %N throttle (qsub -t 1-100%5) limits it"),
    // PBS Pro, on the server.
    ("default_qsub_arguments", Object::Server, None, "qsub takes its options from the command line and the script"),
    ("default_qdel_arguments", Object::Server, None, "qdel takes its options from the command line"),
    ("eligible_time_enable", Object::Server, Some("false"), "qmesh does not accrue eligible time; job_order = priority_aging ages jobs from their queue time"),
    ("est_start_time_freq", Object::Server, None, "spwhen and qstat read the start times of the last scheduling pass"),
    ("flatuid", Object::Server, Some("true"), "users are the socket's uid, the same on every host"),
    ("job_history_enable", Object::Server, Some("true"), "finished jobs are always kept for job_history_duration"),
    ("job_requeue_timeout", Object::Server, None, "a requeue takes effect when the agent reports the kill"),
    ("job_sort_formula", Object::Server, None, "set server job_order (fifo, priority_aging, hrn, fairshare)"),
    ("jobscript_max_size", Object::Server, None, "scripts are kept whole with the job"),
    ("license_count", Object::Server, None, "qmesh manages no PBS licences"),
    ("log_events", Object::Server, None, "qmeshd logs through its --log-level"),
    ("mail_from", Object::Server, None, "the server sends no mail"),
    ("max_concurrent_provision", Object::Server, None, "qmesh does not provision nodes"),
    ("max_job_sequence_id", Object::Server, None, "job ids grow without wrapping"),
    ("node_fail_requeue", Object::Server, None, "jobs of a host lost longer than agents.lost_after_secs (configuration file) are requeued if rerunnable"),
    ("node_group_enable", Object::Server, None, "queues use node groups when they name one (set queue Q node_group = G)"),
    ("pbs_license_info", Object::Server, None, "qmesh manages no PBS licences"),
    ("pbs_license_linger_time", Object::Server, None, "qmesh manages no PBS licences"),
    ("pbs_license_max", Object::Server, None, "qmesh manages no PBS licences"),
    ("pbs_license_min", Object::Server, None, "qmesh manages no PBS licences"),
    ("power_provisioning", Object::Server, None, "qmesh does not provision nodes"),
    ("python_restart_max_hooks", Object::Server, None, "qmesh's hooks are executables, not PBS's Python interpreter (docs/PBS.md, Site hooks)"),
    ("python_restart_max_objects", Object::Server, None, "qmesh's hooks are executables, not PBS's Python interpreter (docs/PBS.md, Site hooks)"),
    ("python_restart_min_interval", Object::Server, None, "qmesh's hooks are executables, not PBS's Python interpreter (docs/PBS.md, Site hooks)"),
    ("reserve_retry_cutoff", Object::Server, None, "qmesh has no advance reservations"),
    ("reserve_retry_init", Object::Server, None, "qmesh has no advance reservations"),
    ("reserve_retry_time", Object::Server, None, "qmesh has no advance reservations"),
    ("restrict_res_to_release_on_suspend", Object::Server, None, "qmesh does not suspend jobs"),
    ("rpp_highwater", Object::Server, None, "agents speak gRPC, not RPP"),
    ("rpp_retry", Object::Server, None, "agents speak gRPC, not RPP"),
    ("server_name", Object::Server, None, "the server's name comes from the configuration file (server.name)"),
    ("show_hidden_attribs", Object::Server, None, "qmesh has no hidden attributes"),
    ("single_signon_password_enable", Object::Server, None, "qmesh identifies users by the socket"),
    ("sync_mom_hookfiles_timeout", Object::Server, None, "qmesh's hooks are executables, not PBS's Python interpreter (docs/PBS.md, Site hooks)"),
    ("acl_host_moms_enable", Object::Server, None, "agents are admitted by the socket's mode, the cluster key or TLS"),
    ("acl_resv_enable", Object::Server, None, "set acl_resv_user_enable or acl_resv_group_enable"),
    ("acl_resv_host_enable", Object::Server, None, "qmesh checks acl_resv_users and acl_resv_groups, not hosts"),
    ("acl_resv_hosts", Object::Server, None, "qmesh checks acl_resv_users and acl_resv_groups, not hosts"),
    // Torque, on the server.
    ("accounting_keep_days", Object::Server, None, "qmeshd keeps no accounting files"),
    ("acl_group_hosts", Object::Server, None, "use acl_users and acl_hosts"),
    ("acl_logic_or", Object::Server, None, "set acl_logic_or on each queue"),
    ("allow_proxy_user", Object::Server, None, "users submit as themselves"),
    ("auto_node_np", Object::Server, None, "agents report their CPUs themselves"),
    ("clone_batch_delay", Object::Server, None, "an array's sub-jobs get records only as they start; none are cloned"),
    ("clone_batch_size", Object::Server, None, "an array's sub-jobs get records only as they start; none are cloned"),
    ("default_node", Object::Server, None, "a queue's node_sets choose the nodes its jobs run on"),
    ("disable_server_id_check", Object::Server, None, "users are the socket's uid"),
    ("display_job_server_suffix", Object::Server, None, "job ids are SEQ.SERVER"),
    ("job_force_cancel_time", Object::Server, None, "qdel kills with kill_delay between SIGTERM and SIGKILL"),
    ("job_log_file_max_size", Object::Server, None, "qmeshd keeps no job log files"),
    ("job_log_file_roll_depth", Object::Server, None, "qmeshd keeps no job log files"),
    ("job_log_keep_days", Object::Server, None, "qmeshd keeps no job log files"),
    ("job_nanny", Object::Server, None, "the agent's shepherd ends a job whatever happens"),
    ("job_start_timeout", Object::Server, None, "a launch waits for the agent's answer"),
    ("job_stat_rate", Object::Server, None, "agents report with every heartbeat"),
    ("lock_file", Object::Server, None, "qmeshd locks its state directory itself"),
    ("lock_file_check_time", Object::Server, None, "qmeshd locks its state directory itself"),
    ("lock_file_update_time", Object::Server, None, "qmeshd locks its state directory itself"),
    ("log_file_max_size", Object::Server, None, "qmeshd logs to its standard error (journald)"),
    ("log_file_roll_depth", Object::Server, None, "qmeshd logs to its standard error (journald)"),
    ("log_keep_days", Object::Server, None, "qmeshd logs to its standard error (journald)"),
    ("log_level", Object::Server, None, "qmeshd logs through its --log-level"),
    ("mail_body_fmt", Object::Server, None, "the server sends no mail"),
    ("mail_domain", Object::Server, None, "the server sends no mail"),
    ("mail_subject_fmt", Object::Server, None, "the server sends no mail"),
    ("moab_array_compatible", Object::Server, None, "qmesh has no Moab; its arrays behave as Torque's"),
    ("mom_job_sync", Object::Server, None, "agents and the daemon reconcile their jobs on every hello"),
    ("next_job_number", Object::Server, None, "job ids are kept in the store and never reused"),
    ("node_check_rate", Object::Server, None, "agents report with every heartbeat (agents.heartbeat_secs)"),
    ("node_pack", Object::Server, None, "placement follows each node set's topology"),
    ("node_ping_rate", Object::Server, None, "agents report with every heartbeat (agents.heartbeat_secs)"),
    ("node_submit_exceptions", Object::Server, None, "allow_node_submit holds for every compute host; list others in submit_hosts"),
    ("np_default", Object::Server, None, "agents report their CPUs themselves"),
    ("owner_purge", Object::Server, None, "users delete their own jobs with qdel"),
    ("poll_jobs", Object::Server, None, "agents report with every heartbeat"),
    ("record_job_info", Object::Server, None, "finished jobs stay in qstat -x for job_history_duration"),
    ("record_job_script", Object::Server, None, "scripts are kept with the job until it leaves the history"),
    ("tcp_timeout", Object::Server, None, "agents speak gRPC with their own timeouts"),
    ("use_jobs_subdirs", Object::Server, None, "agents keep one spool directory per job"),
    // Torque's, left in its sites' scripts.
    ("resources_default.neednodes", Object::Both, None, "Torque's hint to its scheduler; qmesh places a job from what it asks (nodes=, select=)"),
    ("timeout_for_job_delete", Object::Server, None, "qdel -W force removes a job at once when its host's agent is gone"),
    ("timeout_for_job_requeue", Object::Server, None, "a requeue takes effect when the agent reports the kill"),
];

/// Dotted attributes accepted per resource: `default_chunk.ncpus` and the
/// like.
#[rustfmt::skip]
const INERT_PREFIXES: &[(&str, Object, &str)] = &[
    ("default_chunk", Object::Both, "select chunks take their defaults from the request itself"),
    ("resources_available", Object::Both, "it bounds only resources created with flag = q (qmgr -c \"create resource NAME type = long, flag = q\"); nodes' resources come from their node sets (set node_set S resources_available.NAME = V) and agents"),
    ("max_user_res", Object::Both, "qmesh limits jobs by count (max_user_run), not by resources"),
    ("max_group_res", Object::Both, "qmesh limits jobs by count (max_group_run), not by resources"),
    ("max_user_res_soft", Object::Both, "qmesh has no soft limits"),
    ("max_group_res_soft", Object::Both, "qmesh has no soft limits"),
    ("max_run_res", Object::Both, "qmesh limits jobs by count (max_run), not by resources"),
    ("max_run_res_soft", Object::Both, "qmesh has no soft limits"),
    ("max_queued_res", Object::Both, "qmesh limits jobs by count (max_queued), not by resources"),
    ("queued_jobs_threshold_res", Object::Both, "qmesh has no eligible-job thresholds"),
    ("req_information_max", Object::Queue, "use resources_max"),
    ("req_information_min", Object::Queue, "use resources_min"),
];

/// Attributes PBS computes, which no one sets.
const READ_ONLY: &[&str] = &[
    "total_jobs",
    "state_count",
    "hasnodes",
    "server_state",
    "server_host",
    "pbs_version",
    "resources_assigned",
];

fn applies(object: Object, on: Object) -> bool {
    object == Object::Both || object == on
}

/// What an inert attribute is: `None` if `name` is not one.
fn lookup(name: &str, on: Object) -> Option<(Option<&'static str>, &'static str)> {
    if let Some(&(_, object, matches, why)) = INERT.iter().find(|(n, ..)| *n == name) {
        return applies(object, on).then_some((matches, why));
    }
    let (head, resource) = name.split_once('.')?;
    if resource.is_empty() {
        return None;
    }
    INERT_PREFIXES
        .iter()
        .find(|(p, object, _)| *p == head && applies(*object, on))
        .map(|&(_, _, why)| (None, why))
}

/// Refuses a read-only attribute with what to do instead.
pub fn read_only(name: &str) -> Option<String> {
    let head = name.split('.').next().unwrap_or(name);
    READ_ONLY.contains(&head).then(|| {
        format!("{name} is read only: qmesh works it out (see qmgr -c \"list queue\" and \"list server\")")
    })
}

/// Whether `name` is an inert attribute of `on`.
pub fn is_inert(name: &str, on: Object) -> bool {
    lookup(&name.to_ascii_lowercase(), on).is_some()
}

/// Sets an inert attribute: keeps it in `kept` and warns, or, for the
/// value qmesh behaves as anyway, forgets it. `None` if `name` is not one.
pub fn set(
    kept: &mut std::collections::BTreeMap<String, String>,
    on: Object,
    whose: &str,
    name: &str,
    op: Op,
    value: &str,
    warnings: &mut Vec<String>,
) -> Option<Result<(), String>> {
    let name = name.to_ascii_lowercase();
    let (matches, why) = lookup(&name, on)?;
    let value = value.trim();
    if let Some(same) = matches
        && op == Op::Assign
        && parse_bool(&name, value).ok() == parse_bool(&name, same).ok()
    {
        kept.remove(&name);
        return Some(Ok(()));
    }
    let mut items: Vec<String> = kept
        .get(&name)
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    if let Err(e) = update_list(&mut items, &name, op, value) {
        return Some(Err(e));
    }
    if items.is_empty() {
        kept.remove(&name);
    } else {
        kept.insert(name.clone(), items.join(","));
    }
    warnings.push(format!(
        "{whose}: {name} is accepted and kept, but has no effect in qmesh: {why}"
    ));
    Some(Ok(()))
}

/// Every inert attribute name of `on`, for help.
pub fn names(on: Object) -> Vec<String> {
    INERT
        .iter()
        .filter(|(_, object, ..)| applies(*object, on))
        .map(|(n, ..)| n.to_string())
        .chain(
            INERT_PREFIXES
                .iter()
                .filter(|(_, object, _)| applies(*object, on))
                .map(|(p, ..)| format!("{p}.*")),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::run_as;
    use crate::access::Role;
    use crate::state::tests::state;

    #[test]
    fn what_qmesh_ignores_is_kept_with_a_warning() {
        let st = state(2);
        let mut config = st.config().clone();
        let out = run_as(
            Role::Manager,
            "set server log_events = 511, mail_from = adm, default_chunk.ncpus = 1\n\
             set server flatuid = True, eligible_time_enable = False\n\
             set queue batch kill_delay = 60, resources_available.ncpus = 8\n\
             list server",
            &mut config,
            &st,
        )
        .unwrap();
        for name in [
            "log_events",
            "mail_from",
            "default_chunk.ncpus",
            "kill_delay",
            "resources_available.ncpus",
        ] {
            assert!(
                out.output.contains(&format!(
                    "{name} is accepted and kept, but has no effect in qmesh"
                )),
                "{name}: {}",
                out.output
            );
        }
        assert!(!out.output.contains("flatuid is"), "{}", out.output);
        assert!(
            !out.output.contains("eligible_time_enable is"),
            "{}",
            out.output
        );
        assert_eq!(config.server.inert["log_events"], "511");
        assert_eq!(config.queues["batch"].inert["kill_delay"], "60");
        assert!(!config.server.inert.contains_key("flatuid"));
        assert!(
            out.output.contains("    log_events = 511\n"),
            "{}",
            out.output
        );
        let out = run_as(
            Role::Manager,
            "set server flatuid = false",
            &mut config,
            &st,
        )
        .unwrap();
        assert!(out.output.contains("flatuid is accepted"), "{}", out.output);
        let err = run_as(
            Role::Manager,
            "set queue batch total_jobs = 3",
            &mut config,
            &st,
        )
        .unwrap_err();
        assert!(err.message.contains("read only"), "{err}");
        run_as(Role::Manager, "unset server log_events", &mut config, &st).unwrap();
        assert!(!config.server.inert.contains_key("log_events"));
    }

    /// The server part of a fresh PBS Pro's `print server`, and Torque's
    /// `torque.setup`, pasted as they are.
    #[test]
    fn a_pbs_pro_print_server_and_a_torque_setup_paste_as_they_are() {
        let st = state(2);
        let mut config = st.config().clone();
        let pbs_pro = "#\n# Create queues and set their attributes.\n#\n\
            create queue workq\n\
            set queue workq queue_type = Execution\n\
            set queue workq enabled = True\n\
            set queue workq started = True\n\
            #\n# Set server attributes.\n#\n\
            set server scheduling = True\n\
            set server default_queue = workq\n\
            set server log_events = 511\n\
            set server mail_from = adm\n\
            set server query_other_jobs = True\n\
            set server resources_default.ncpus = 1\n\
            set server default_chunk.ncpus = 1\n\
            set server scheduler_iteration = 600\n\
            set server flatuid = True\n\
            set server resv_enable = True\n\
            set server node_fail_requeue = 310\n\
            set server max_array_size = 10000\n\
            set server pbs_license_min = 0\n\
            set server pbs_license_max = 2147483647\n\
            set server pbs_license_linger_time = 31536000\n\
            set server license_count = Avail_Global:1000000 Avail_Local:1000000 Used:0 High_Use:0\n\
            set server eligible_time_enable = False\n\
            set server max_concurrent_provision = 5\n\
            set server max_job_sequence_id = 9999999\n";
        let out = run_as(Role::Manager, pbs_pro, &mut config, &st).unwrap();
        assert_eq!(config.server.default_queue.as_deref(), Some("workq"));
        assert_eq!(config.server.scheduler_iteration, 600);
        assert_eq!(config.server.max_array_size, 10000);
        assert_eq!(config.server.resources_default["ncpus"], "1");
        assert_eq!(
            config.server.inert["license_count"],
            "Avail_Global:1000000 Avail_Local:1000000 Used:0 High_Use:0"
        );
        let warned = out
            .output
            .lines()
            .filter(|l| l.starts_with("WARNING"))
            .count();
        assert!(config.server.resv_enable, "resv_enable takes effect now");
        assert_eq!(
            warned, 10,
            "one per attribute without effect:\n{}",
            out.output
        );

        let torque = "set server operators = root@headnode\n\
            set server managers = root@headnode\n\
            set queue batch queue_type = execution\n\
            set queue batch started = true\n\
            set queue batch enabled = true\n\
            set queue batch resources_default.walltime = 1:00:00\n\
            set queue batch resources_default.nodes = 1\n\
            set queue batch max_user_queuable = 100, max_running = 50\n\
            set queue batch acl_hosts = node01+node02, acl_host_enable = true\n\
            set server default_queue = batch\n\
            set server scheduling = true\n\
            set server keep_completed = 300\n\
            set server mom_job_sync = true\n\
            set server allow_node_submit = true\n";
        let out = run_as(Role::Manager, torque, &mut config, &st).unwrap();
        assert_eq!(config.server.job_history_duration, 300, "keep_completed");
        let batch = &config.queues["batch"];
        assert_eq!(batch.limits.max_user_queuable, Some(100));
        assert_eq!(batch.acl.hosts, vec!["node01", "node02"]);
        assert!(
            out.output.contains("mom_job_sync is accepted"),
            "{}",
            out.output
        );
        assert!(!out.output.contains("allow_node_submit"), "{}", out.output);
    }
}
