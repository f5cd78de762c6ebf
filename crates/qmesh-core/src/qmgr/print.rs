//! What list, print and help write. `print server` writes the qmgr commands
//! that recreate the configuration (PBS's form: comment banners, `create
//! queue`, then `set` lines), so its output is the configuration's backup.
//!
//! A daemon's configuration file seeds a new store with queues, node
//! groups and a calendar. What the file makes already exists on a fresh
//! daemon started from it, so the backup does not create it again: it
//! sets such an object's attributes (unsetting those the file sets and
//! the configuration no longer has), and deletes at its end what the file
//! makes and the configuration dropped ([`print_server_over`]).

use super::attrs;
use super::values::quoted;
use crate::queue::Queue;
use crate::server::Config;
use crate::state::State;

fn state_count(state: &State, queue: &str) -> (u32, String) {
    let c = state.counts(queue);
    (
        c.total(),
        format!(
            "Transit:{} Queued:{} Held:{} Waiting:{} Running:{} Exiting:{}",
            c.transit, c.queued, c.held, c.waiting, c.running, c.exiting
        ),
    )
}

pub fn list_queue(q: &Queue, state: &State) -> String {
    let mut out = format!("Queue {}\n", q.name);
    let (total, counts) = state_count(state, &q.name);
    let mut values = attrs::queue_values(q);
    // Show enabled and started even at their defaults: admins look for them.
    for (name, v) in [("enabled", q.enabled), ("started", q.started)] {
        if !values.iter().any(|(n, _)| n == name) {
            values.push((
                name.to_string(),
                if v { "True" } else { "False" }.to_string(),
            ));
        }
    }
    for (name, value) in values {
        out.push_str(&format!("    {name} = {value}\n"));
        if name == "queue_type" {
            out.push_str(&format!("    total_jobs = {total}\n"));
            out.push_str(&format!("    state_count = {counts}\n"));
        }
    }
    out.push_str(&format!(
        "    capacity_nodes = {}\n\n",
        state.capacity(&q.name)
    ));
    out
}

pub fn list_server(config: &Config, state: &State) -> String {
    let mut out = format!("Server {}\n", state.server_name());
    out.push_str("    server_state = Active\n");
    let mut pending = 0;
    let mut active = 0;
    for q in config.queues.keys() {
        let c = state.counts(q);
        pending += c.queued + c.held + c.waiting + c.transit;
        active += c.running + c.exiting;
    }
    out.push_str(&format!("    total_jobs = {}\n", pending + active));
    out.push_str(&format!("    queued_jobs = {pending}\n"));
    out.push_str(&format!("    running_jobs = {active}\n"));
    for (name, value, _) in attrs::server_values(&config.server) {
        out.push_str(&format!("    {name} = {value}\n"));
    }
    let up = state.nodes().iter().filter(|n| n.up).count();
    out.push_str(&format!(
        "    nodes = {} ({} up)\n\n",
        state.nodes().len(),
        up
    ));
    out
}

pub fn print_queue(q: &Queue) -> String {
    let mut out = format!(
        "#\n# Create and define queue {}\n#\ncreate queue {}\n",
        q.name, q.name
    );
    for (name, value) in attrs::queue_values(q) {
        out.push_str(&format!(
            "set queue {} {name} = {}\n",
            q.name,
            quoted(&value)
        ));
    }
    out
}

/// The attributes qmgr checks against each other after each command
/// (`resources_default.nodes` within the node limits, the default wall
/// time within the maximum).
const BOUNDS: &[&str] = &[
    "resources_max.nodes",
    "resources_min.nodes",
    "resources_max.walltime",
    "resources_default.nodes",
    "resources_default.walltime",
];

/// A queue the configuration file makes (`seeded`, as the file makes it):
/// what the file sets and `q` no longer has is unset first, then the node
/// and wall-time bounds are set in one command (so that none is checked
/// against the file's half-changed others), then the rest line by line.
fn print_seeded_queue(q: &Queue, seeded: &Queue) -> String {
    let mut out = format!(
        "#\n# Define queue {} (the configuration file creates it)\n#\n",
        q.name
    );
    let values = attrs::queue_values(q);
    let gone: Vec<String> = attrs::queue_values(seeded)
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| !values.iter().any(|(n, _)| n == name))
        .collect();
    if !gone.is_empty() {
        out.push_str(&format!("unset queue {} {}\n", q.name, gone.join(", ")));
    }
    let (bounds, rest): (Vec<_>, Vec<_>) = values
        .iter()
        .partition(|(name, _)| BOUNDS.contains(&name.as_str()));
    if !bounds.is_empty() {
        let sets: Vec<String> = bounds
            .iter()
            .map(|(name, value)| format!("{name} = {}", quoted(value)))
            .collect();
        out.push_str(&format!("set queue {} {}\n", q.name, sets.join(", ")));
    }
    for (name, value) in rest {
        out.push_str(&format!(
            "set queue {} {name} = {}\n",
            q.name,
            quoted(value)
        ));
    }
    out
}

/// qmgr commands that recreate `config` from an empty one, times in UTC.
pub fn print_server(config: &Config) -> String {
    print_server_over(config, &Config::default())
}

/// qmgr commands that recreate `config` on a daemon whose configuration
/// file seeds it with `file` (its queues, node groups, calendar and
/// server attributes); [`print_server`] is this over an empty one.
pub fn print_server_over(config: &Config, file: &Config) -> String {
    let mut out = super::resource::print(config);
    out.push_str(&super::calendar::print(config));
    out.push_str(&super::node_set::print(config));
    out.push_str(&super::node_group::print_over(config, file));
    out.push_str("#\n# Create queues and set their attributes.\n");
    // Route queues come after the queues they name, which must exist. A
    // reservation's queue is the reservation's (pbs_rsub makes it).
    for q in crate::route::print_order(config)
        .into_iter()
        .filter(|q| q.reservation.is_none())
    {
        match file.queues.get(&q.name) {
            Some(seeded) => out.push_str(&print_seeded_queue(q, seeded)),
            None => out.push_str(&print_queue(q)),
        }
    }
    out.push_str("#\n# Set server attributes.\n#\n");
    let seeded = attrs::server_values(&file.server);
    let values = attrs::server_values(&config.server);
    for (name, value, differs) in &values {
        let seeded_differs = seeded.iter().any(|(n, _, d)| n == name && *d);
        if *differs {
            out.push_str(&format!("set server {name} = {}\n", quoted(value)));
        } else if seeded_differs {
            out.push_str(&format!("unset server {name}\n"));
        }
    }
    for (name, _, d) in &seeded {
        if *d && !values.iter().any(|(n, ..)| n == name) {
            out.push_str(&format!("unset server {name}\n"));
        }
    }
    out.push_str(&super::account::print(config));
    out.push_str(&super::shutdown::print(config));
    out.push_str(&super::node::print(config));
    out.push_str(&super::hook::print(config));
    out.push_str(&print_removals(config, file));
    out
}

/// What the configuration file makes and `config` dropped: its queues,
/// then its node groups (a queue may name one), then its calendar's
/// entries (queues and groups may name periods).
fn print_removals(config: &Config, file: &Config) -> String {
    let mut out = String::new();
    for name in file
        .queues
        .keys()
        .filter(|q| !config.queues.contains_key(*q))
    {
        out.push_str(&format!("delete queue {name}\n"));
    }
    for name in file
        .node_groups
        .keys()
        .filter(|g| !config.node_groups.contains_key(*g))
    {
        out.push_str(&format!("delete node_group {name}\n"));
    }
    out.push_str(&super::calendar::print_removals(config, file));
    if out.is_empty() {
        out
    } else {
        format!("#\n# Remove what the configuration file makes and this server dropped.\n#\n{out}")
    }
}

pub fn help(topic: Option<&str>) -> String {
    match topic.map(|t| t.to_ascii_lowercase()) {
        Some(t) if t.starts_with('q') => {
            let names: Vec<&str> = attrs::QUEUE_ATTRS
                .iter()
                .map(|(n, _)| *n)
                .chain(super::pbs_attrs::QUEUE_ATTRS.iter().copied())
                .collect();
            format!(
                "Queue attributes: {}, resources_max.NAME, resources_min.NAME, \
                 resources_default.NAME.\nShort names: max_nodes, min_nodes, max_walltime, \
                 default_nodes, default_walltime.\nmax_run and max_queued take PBS Pro's entries: \
                 \"[u:PBS_GENERIC=5],[u:alice=10],[g:staff=20],[o:PBS_ALL=100]\".\n\
                 Accepted and kept without effect (qmgr says why when one is set): {}.\n",
                names.join(", "),
                super::inert::names(super::inert::Object::Queue).join(", ")
            )
        }
        Some(t) if t.starts_with('a') => {
            let names: Vec<&str> = super::account::ACCOUNT_ATTRS
                .iter()
                .map(|(n, _)| *n)
                .collect();
            format!(
                "Account attributes: {}.\nAllocations and max_node_hours are in node-hours; \
                 c1-prod and c1-dev charge account c1.\n",
                names.join(", ")
            )
        }
        Some(t) if t.starts_with("sh") => {
            let names: Vec<&str> = super::shutdown::SHUTDOWN_ATTRS
                .iter()
                .map(|(n, _)| *n)
                .collect();
            format!(
                "Shutdown attributes: {}.\nTimes are \"YYYY-MM-DD HH:MM\" in the calendar's \
                 time zone (summer time included), or RFC 3339 with an offset; no job starts that would run into a window.\n",
                names.join(", ")
            )
        }
        Some(t) if t.starts_with('s') => {
            let names: Vec<&str> = attrs::SERVER_ATTRS
                .iter()
                .map(|(n, _)| *n)
                .chain(super::pbs_attrs::SERVER_ATTRS.iter().copied())
                .collect();
            format!(
                "Server attributes: {}, resources_max.NAME, resources_min.NAME, \
                 resources_default.NAME.\nmax_run and max_queued take PBS Pro's entries: \
                 \"[u:PBS_GENERIC=5],[u:alice=10],[g:staff=20],[o:PBS_ALL=100]\".\n\
                 Accepted and kept without effect (qmgr says why when one is set): {}.\n",
                names.join(", "),
                super::inert::names(super::inert::Object::Server).join(", ")
            )
        }
        Some(t) if t.starts_with('r') => "Resources: create resource NAME type = long|float|size|\
             string|string_array|boolean, flag = FLAGS (n or f with h: consumed per host; q: per \
             queue and server; m: sent to the hosts; r: read only to users; i: invisible).\n\
             set resource NAME type = T, flag = F   unset resource NAME flag   delete resource NAME\n\
             list resource [NAME]   print resource [NAME]\n\
             Flag q: set server resources_available.NAME = N (and on a queue) bounds what running \
             jobs use; a job waits while its -l NAME=N does not fit.\n\
             Flag h: each node has what its node set says (set node_set S \
             resources_available.NAME = V, or resources = { NAME = V } in the configuration \
             file); chunks and -l NAME=V run where it serves them; nh: the jobs of a shared node \
             share it; fh: the first node only.\n"
            .to_string(),
        _ => "Commands (abbreviations in brackets):\n\
              \x20   create [c] queue NAME [attr = value, ...]\n\
              \x20   delete [d] queue NAME\n\
              \x20   set [s] queue NAME attr = value [, attr += value, attr -= value ...]\n\
              \x20   set [s] server attr = value [, ...]\n\
              \x20   set per_request ncpus = N QUEUE      (NQS: default nodes of QUEUE)\n\
              \x20   unset [u] queue NAME attr [, attr ...]\n\
              \x20   unset [u] server attr [, attr ...]\n\
              \x20   create [c] account NAME [allocation = H, shares = N, users = \"a,b\", ...]\n\
              \x20   set [s] account NAME attr = value    unset [u] account NAME attr\n\
              \x20   delete [d] account NAME  list [l] account [NAME]\n\
              \x20   create [c] shutdown NAME start = \"2026-12-01 08:00\", end = \"2026-12-01 20:00\"\n\
              \x20       [, node_sets = \"a,b\", comment = \"...\"]  (local time, or RFC 3339)\n\
              \x20   set [s] shutdown NAME attr = value   unset [u] shutdown NAME node_sets|comment\n\
              \x20   delete [d] shutdown NAME  list [l] shutdown [NAME]\n\
              \x20   create [c] node_set NAME nodes = \"n[0-15]\", host = HOST\n\
              \x20       [, mem = 32gb, ncpus = 8, features = \"fat,gpu\", resources_available.scratch = 400gb]\n\
              \x20       (flat; a node may say n3@HOST)\n\
              \x20   set [s] node_set NAME attr = value (nodes += n16, host = H2, ...)\n\
              \x20   unset [u] node_set NAME mem|ncpus|features|resources_available.NAME\n\
              \x20   delete [d] node_set NAME\n\
              \x20   list [l] node_set [NAME]  (the configuration file's sets are read only)\n\
              \x20   set [s] node NAME state = offline|draining|free [, comment = \"why\"]\n\
              \x20   unset [u] node NAME state   list [l] node [NAME]  (operators; see pbsnodes)\n\
              \x20   create [c] resource NAME type = long, flag = nh   (PBS Pro; help resource)\n\
              \x20   active queue NAME[,NAME]  (later commands that name no queue act on these)\n\
              \x20   list [l] queue [NAME]   list [l] server\n\
              \x20   print [p] server        print [p] queue NAME\n\
              \x20   reorder queue NAME      (group cascade of its queued jobs, EPCC)\n\
              \x20   create queue NIGHT queue_type = route   (or pipe; then route_destinations = \"A,B\",\n\
              \x20       default_destination = Q, holding_queue = Q; jobs move with qmove DEST ID)\n\
              \x20   help [h] [queue|server]  quit [q]\n"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_script, run};
    use super::*;
    use crate::access::Role;
    use crate::account::Account;
    use crate::queue::{PeriodEnd, Queue};
    use crate::state::tests::{caller, state};
    use proptest::prelude::*;

    fn arb_queue(name: String) -> impl Strategy<Value = Queue> {
        (
            -1024i32..1024,
            any::<bool>(),
            any::<bool>(),
            proptest::option::of(4u32..64),
            proptest::option::of(1u32..4),
            proptest::option::of(3600u64..100_000),
            proptest::option::of(60u64..3600),
            any::<bool>(),
            proptest::collection::vec((0u8..24, 0u8..60), 0..3),
        )
            .prop_map(
                move |(priority, enabled, started, max, min, maxw, defw, local, times)| {
                    let mut q = Queue::new(&name);
                    q.priority = priority;
                    q.enabled = enabled;
                    q.started = started;
                    q.max_nodes = max;
                    q.min_nodes = min;
                    q.max_walltime = maxw;
                    q.default_walltime = defw;
                    q.default_nodes = min;
                    if local {
                        q.node_sets = vec!["local".into()];
                    }
                    let mut times: Vec<crate::time::TimeOfDay> = times
                        .into_iter()
                        .filter_map(|(h, m)| crate::time::TimeOfDay::new(h, m))
                        .collect();
                    times.sort();
                    times.dedup();
                    q.reorder_times = times;
                    q
                },
            )
            .prop_flat_map(|q| {
                (
                    Just(q),
                    proptest::sample::subsequence(vec!["prime", "NIGHT", "weekend"], 0..3),
                    proptest::collection::btree_map(
                        proptest::sample::select(vec!["prime", "non_prime", "NIGHT", "weekend"])
                            .prop_map(String::from),
                        -1024i32..1024,
                        0..3,
                    ),
                    0usize..3,
                    proptest::option::of(60u64..7200),
                    proptest::option::of(proptest::sample::select(vec![
                        "SIGUSR1", "SIGUSR2", "SIGTERM",
                    ])),
                )
            })
            .prop_map(|(mut q, periods, priorities, end, warning, signal)| {
                q.periods = periods.into_iter().map(String::from).collect();
                q.period_priority = priorities;
                q.period_end = [PeriodEnd::Continue, PeriodEnd::Kill, PeriodEnd::Requeue][end];
                q.period_end_warning = warning;
                q.warning_signal = signal.map(String::from);
                q
            })
    }

    fn arb_account() -> impl Strategy<Value = Account> {
        (
            "[a-z][a-z0-9_]{0,7}",
            proptest::option::of(0u64..1_000_000),
            1u32..100,
            proptest::collection::vec("[a-z]{1,8}", 0..3),
            proptest::option::of(1u32..500),
            proptest::option::of(1u32..50),
            proptest::option::of(0u64..10_000),
        )
            .prop_map(
                |(name, allocation, shares, users, max_queued, max_run, max_node_hours)| Account {
                    name,
                    allocation,
                    shares,
                    users,
                    max_queued,
                    max_run,
                    max_node_hours,
                },
            )
    }

    /// A route queue `NIGHT` (printed before the queues it names, by
    /// name order) over `batch` and `q64l`.
    fn arb_route() -> impl Strategy<Value = Queue> {
        (
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            proptest::option::of(1u32..4),
        )
            .prop_map(|(both, default, hold, max)| {
                let mut q = Queue::open("NIGHT");
                q.queue_type = crate::queue::QueueType::Route;
                q.route_destinations = if both {
                    vec!["q64l".into(), "batch".into()]
                } else {
                    vec!["batch".into()]
                };
                q.default_destination = default.then(|| "batch".into());
                q.holding_queue = hold.then(|| "q64l".into());
                q.max_nodes = max;
                q
            })
    }

    /// A node set made with qmgr, `extra`: some nodes on one or two
    /// hosts, with or without attributes.
    fn arb_node_set() -> impl Strategy<Value = crate::node::NodeSet> {
        (
            proptest::collection::vec((any::<bool>(), any::<bool>()), 1..8),
            proptest::option::of(1u64..512),
            proptest::option::of(1u32..64),
            proptest::sample::subsequence(vec!["fat", "gpu", "nag"], 0..3),
            proptest::option::of(2u32..16),
        )
            .prop_map(
                |(nodes, mem, cpus, features, jobs_per_node)| crate::node::NodeSet {
                    name: "extra".into(),
                    topology: crate::node::Topology::Flat,
                    nodes: nodes
                        .iter()
                        .enumerate()
                        .map(|(i, &(other_host, odd_name))| crate::node::NodeDef {
                            name: if odd_name {
                                format!("y{i}a")
                            } else {
                                format!("x{i:02}")
                            },
                            host: if other_host { "h2" } else { "h" }.into(),
                        })
                        .collect(),
                    attrs: crate::node::NodeAttrs {
                        mem: mem.map(|gb| gb << 30),
                        cpus,
                        features: features.into_iter().map(String::from).collect(),
                        jobs_per_node,
                        gpus: None,
                        resources: Default::default(),
                    },
                },
            )
    }

    fn arb_config() -> impl Strategy<Value = Config> {
        (
            arb_queue("batch".into()),
            arb_queue("q64l".into()),
            any::<bool>(),
            proptest::collection::vec("[a-z]{1,8}(@\\*)?", 0..3),
            1u64..100,
            any::<bool>(),
            proptest::collection::vec(arb_account(), 0..3),
            proptest::collection::vec(("[a-z][a-z0-9_]{0,7}", any::<bool>(), 0usize..3), 0..3),
            proptest::option::of(arb_route()),
            proptest::option::of(arb_node_set()),
        )
            .prop_map(
                |(
                    mut a,
                    mut b,
                    scheduling,
                    managers,
                    kill_delay,
                    default,
                    accounts,
                    groups,
                    route,
                    extra,
                )| {
                    let mut config = Config::default();
                    if let Some(set) = extra {
                        // Named by a queue and a node group: printed first.
                        b.node_sets.push(set.name.clone());
                        let mut group = crate::node_group::NodeGroup::new("xg");
                        group.set_sets(None, vec![set.name.clone(), "local".into()]);
                        config.node_groups.insert("xg".into(), group);
                        config.node_sets.insert(set.name.clone(), set);
                    }
                    if let Some(route) = route {
                        config.queues.insert(route.name.clone(), route);
                    }
                    for (name, spans) in [
                        ("NIGHT", "Mon-Thu 18:00-10:00"),
                        ("weekend", "Sat-Sun; Fri 18:00-24:00"),
                    ] {
                        config
                            .calendar
                            .periods
                            .insert(name.into(), spans.parse().unwrap());
                    }
                    if kill_delay % 2 == 0 {
                        config.calendar.time_zone = "Europe/London".into();
                        config.calendar.holidays = vec!["12-25 Christmas Day".parse().unwrap()];
                    }
                    for (name, default_sets, periods) in groups {
                        let mut group = crate::node_group::NodeGroup::new(&name);
                        if default_sets {
                            group.set_sets(None, vec!["local".into()]);
                        }
                        for p in ["prime", "NIGHT", "weekend"].into_iter().take(periods) {
                            group.set_sets(Some(p), vec!["local".into()]);
                        }
                        a.node_group = Some(name.clone());
                        config.node_groups.insert(name, group);
                    }
                    config.queues.insert(a.name.clone(), a);
                    config.queues.insert(b.name.clone(), b);
                    config.server.scheduling = scheduling;
                    config.server.managers = managers;
                    config.server.kill_delay = kill_delay;
                    if default {
                        config.server.default_queue = Some("q64l".into());
                    }
                    for account in accounts {
                        config.accounts.insert(account.name.clone(), account);
                    }
                    config
                },
            )
    }

    /// PBS's limits, access lists, resource bounds and kept attributes on
    /// a queue (and `nmics`, a site resource, which the configuration
    /// then defines).
    fn arb_pbs_attrs()
    -> impl Strategy<Value = (crate::limits::JobLimits, crate::acl::QueueAcl, bool)> {
        (
            proptest::option::of(0u32..50),
            proptest::option::of(1u32..9),
            proptest::option::of(1u32..500),
            proptest::sample::subsequence(
                vec![
                    "[u:PBS_GENERIC=4]",
                    "[u:alice=9]",
                    "[g:staff=3]",
                    "[o:PBS_ALL=20]",
                ],
                0..4,
            ),
            any::<bool>(),
            proptest::sample::subsequence(vec!["alice", "-bob", "carol@*.example.com", "+"], 0..4),
            proptest::sample::subsequence(vec!["staff", "physics"], 0..2),
            any::<bool>(),
        )
            .prop_map(
                |(running, user_run, queuable, run, enable, users, groups, gpus)| {
                    let limits = crate::limits::JobLimits {
                        max_running: running,
                        max_user_run: user_run,
                        max_queuable: queuable,
                        max_run: if run.is_empty() {
                            Default::default()
                        } else {
                            crate::limits::LimitSet::parse("max_run", &run.join(",")).unwrap()
                        },
                        ..Default::default()
                    };
                    let acl = crate::acl::QueueAcl {
                        user_enable: enable,
                        users: users.into_iter().map(String::from).collect(),
                        group_enable: !groups.is_empty(),
                        groups: groups.into_iter().map(String::from).collect(),
                        ..Default::default()
                    };
                    (limits, acl, gpus)
                },
            )
    }

    /// [`arb_config`], with PBS's attributes on `batch`.
    fn arb_pbs_config() -> impl Strategy<Value = Config> {
        (arb_config(), arb_pbs_attrs()).prop_map(|(mut config, (limits, acl, gpus))| {
            let batch = config.queues.get_mut("batch").unwrap();
            batch.limits = limits;
            batch.acl = acl;
            batch.resources_max.insert("mem".into(), "32gb".into());
            batch.inert.insert("kill_delay".into(), "60".into());
            if gpus {
                batch.resources_max.insert("nmics".into(), "4".into());
                let mut def = crate::site_resources::ResourceDef::new("nmics");
                def.flags = "nh".into();
                config.resources.insert("nmics".into(), def);
                config
                    .server
                    .resources_default
                    .insert("nmics".into(), "0".into());
                config.server.query_other_jobs = false;
            }
            config
        })
    }

    /// A configuration as a daemon's file seeds it: queues, node groups,
    /// a calendar and server attributes; no qmgr node sets or accounts.
    fn arb_file() -> impl Strategy<Value = Config> {
        arb_config()
            .prop_filter("a file makes no qmgr node sets", |c| c.node_sets.is_empty())
            .prop_map(|mut c| {
                c.accounts.clear();
                c
            })
    }

    proptest! {
        /// `print server` is a backup: applied to an empty configuration it
        /// gives back the same configuration.
        #[test]
        fn print_server_recreates_the_configuration(config in arb_pbs_config()) {
            let st = state(4);
            let script = print_server(&config);
            let cmds = parse_script(&script).map_err(|e| TestCaseError::fail(format!("{e}\n{script}")))?;
            let mut rebuilt = Config::default();
            run(&cmds, &mut rebuilt, &st, &caller(0, Role::Manager))
                .map_err(|e| TestCaseError::fail(format!("{e}\n{script}")))?;
            prop_assert_eq!(rebuilt, config);
        }

        /// On a fresh daemon started from the same configuration file, the
        /// backup restores the configuration: what the file makes is set,
        /// not created again, and what the server dropped is removed.
        #[test]
        fn print_server_restores_over_the_files_configuration(
            config in arb_pbs_config(),
            file in arb_file(),
        ) {
            let st = state(4);
            let script = print_server_over(&config, &file);
            let cmds = parse_script(&script).map_err(|e| TestCaseError::fail(format!("{e}\n{script}")))?;
            let mut rebuilt = file.clone();
            super::super::run_over(&cmds, &mut rebuilt, &st, &caller(0, Role::Manager), &file)
                .map_err(|e| TestCaseError::fail(format!("{e}\n{script}")))?;
            prop_assert_eq!(&rebuilt, &config);
            prop_assert_eq!(print_server_over(&rebuilt, &file), script);
        }
    }

    #[test]
    fn what_the_file_makes_is_set_not_created() {
        let st = state(4);
        let mut file = Config::default();
        let mut batch = Queue::open("batch");
        batch.max_walltime = Some(86_400);
        batch.max_nodes = Some(16);
        batch.default_nodes = Some(8);
        file.queues.insert("batch".into(), batch);
        file.queues.insert("debug".into(), Queue::open("debug"));
        let mut any = crate::node_group::NodeGroup::new("any");
        any.set_sets(None, vec!["local".into()]);
        file.node_groups.insert("any".into(), any);
        file.server.default_queue = Some("batch".into());

        let mut config = file.clone();
        run(
            &parse_script(
                "set queue batch resources_max.nodes = 4, resources_default.nodes = 2\n\
                 unset queue batch resources_max.walltime\n\
                 delete queue debug\n\
                 create queue night enabled = true, max_user_run = 2",
            )
            .unwrap(),
            &mut config,
            &st,
            &caller(0, Role::Manager),
        )
        .unwrap();
        let script = print_server_over(&config, &file);
        assert!(!script.contains("create queue batch"), "{script}");
        assert!(!script.contains("create node_group any"), "{script}");
        assert!(script.contains("create queue night\n"), "{script}");
        assert!(
            script.contains("unset queue batch resources_max.walltime\n"),
            "{script}"
        );
        assert!(script.contains("delete queue debug\n"), "{script}");
        // The bounds change in one command: max 4 before default 2 would
        // otherwise meet the file's default of 8.
        assert!(
            script
                .contains("set queue batch resources_max.nodes = 4, resources_default.nodes = 2\n"),
            "{script}"
        );
        assert!(
            script.contains("set queue batch enabled = True\n"),
            "{script}"
        );
        let mut rebuilt = file.clone();
        super::super::run_over(
            &parse_script(&script).unwrap(),
            &mut rebuilt,
            &st,
            &caller(0, Role::Manager),
            &file,
        )
        .unwrap();
        assert_eq!(rebuilt, config);
    }
}
