use super::super::tests::run_as;
use super::super::{Action, parse_script, print_server};
use super::{compress, expand, parse_nodes};
use crate::access::Role;
use crate::server::Config;
use crate::state::State;
use crate::state::tests::{state, submit, t};

fn one(line: &str) -> Action {
    parse_script(line).unwrap().remove(0).action
}

fn fails(script: &str, config: &Config, st: &State) -> String {
    let mut copy = config.clone();
    let err = run_as(Role::Manager, script, &mut copy, st).unwrap_err();
    err.message
}

#[test]
fn the_grammar_reads_names_ranges_and_hosts() {
    assert!(matches!(
        one("create node_set s1 nodes = n[0-15], host = h1, mem = 32gb"),
        Action::CreateNodeSet(names, attrs) if names == ["s1"] && attrs.len() == 3
    ));
    assert!(matches!(one("d ns s1,s2"), Action::DeleteNodeSet(n) if n.len() == 2));
    assert!(matches!(
        one("set node_set s1 features += gpu"),
        Action::SetNodeSet(..)
    ));
    assert!(
        matches!(one("unset node_set s1 mem, ncpus"), Action::UnsetNodeSet(_, a) if a.len() == 2)
    );
    assert!(matches!(one("list node_set"), Action::ListNodeSet(n) if n.is_empty()));
    assert!(parse_script("create node_set").is_err());
    assert!(parse_script("set node_set s1").is_err());

    assert_eq!(expand("n[8-10]").unwrap(), ["n8", "n9", "n10"]);
    assert_eq!(expand("c[08-10]").unwrap(), ["c08", "c09", "c10"]);
    assert!(expand("n[5-2]").is_err());
    let nodes = parse_nodes("a1, n[1-2]@h2 ,b", Some("h1")).unwrap();
    let pairs: Vec<(&str, &str)> = nodes
        .iter()
        .map(|n| (n.name.as_str(), n.host.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [("a1", "h1"), ("n1", "h2"), ("n2", "h2"), ("b", "h1")]
    );
    let err = parse_nodes("a1", None).unwrap_err();
    assert!(err.contains("add host = HOST"), "{err}");

    for names in [
        vec!["n0", "n1", "n2", "n3", "x"],
        vec!["n8", "n9", "n10", "n11"],
        vec!["c08", "c09", "c10", "c12"],
        vec!["n1", "n2", "m3"],
    ] {
        let text = compress(&names);
        let back: Vec<String> = parse_nodes(&text, Some("h"))
            .unwrap()
            .into_iter()
            .map(|n| n.name)
            .collect();
        assert_eq!(back, names, "{text}");
    }
    assert_eq!(compress(&["n0", "n1", "n2", "n3", "x"]), "n[0-3],x");
}

#[test]
fn a_set_is_made_listed_changed_and_used_by_queues_and_groups() {
    let st = state(4);
    let mut config = st.config().clone();
    let script = "create node_set fat nodes = \"f[1-3]\", host = h2, mem = 64gb, ncpus = 16, features = \"fat,nag\"\n\
                  set queue batch node_sets = \"local,fat\"\n\
                  create node_group big sets = fat\n\
                  create shutdown maint start = \"2030-01-01 08:00\", end = \"2030-01-01 09:00\", node_sets = fat\n\
                  list node_set\n";
    let out = run_as(Role::Manager, script, &mut config, &st).unwrap();
    let set = &config.node_sets["fat"];
    assert_eq!(set.nodes.len(), 3);
    assert_eq!(set.nodes[2].host, "h2");
    assert_eq!(set.attrs.mem, Some(64 << 30));
    assert_eq!(set.attrs.features, ["fat", "nag"]);
    assert!(
        out.output
            .contains("Node set local\n    source = configuration file\n"),
        "{}",
        out.output
    );
    assert!(
        out.output.contains("Node set fat\n    source = qmgr\n    topology = flat\n    nodes = 3\n    node_names = f[1-3]\n    hosts = h2\n"),
        "{}",
        out.output
    );

    run_as(
        Role::Manager,
        "set node_set fat nodes += f4, features -= nag, ncpus = 8\nunset node_set fat mem",
        &mut config,
        &st,
    )
    .unwrap();
    let set = &config.node_sets["fat"];
    assert_eq!(set.nodes[3].name, "f4");
    assert_eq!(set.nodes[3].host, "h2", "new nodes take the set's host");
    assert_eq!((set.attrs.mem, set.attrs.cpus), (None, Some(8)));
    assert_eq!(set.attrs.features, ["fat"]);
    run_as(
        Role::Manager,
        "set node_set fat host = h3",
        &mut config,
        &st,
    )
    .unwrap();
    assert!(config.node_sets["fat"].nodes.iter().all(|n| n.host == "h3"));

    // Taken out of everything that names it, it may go.
    run_as(
        Role::Manager,
        "set queue batch node_sets -= fat\ndelete node_group big\ndelete shutdown maint\ndelete node_set fat",
        &mut config,
        &st,
    )
    .unwrap();
    assert!(config.node_sets.is_empty());
}

#[test]
fn every_error_names_the_thing_and_nothing_is_applied() {
    let mut st = state(4);
    let mut config = st.config().clone();
    run_as(
        Role::Manager,
        "create node_set s1 nodes = \"a1,a2,a3\", host = h\n\
         create node_set s2 nodes = b1, host = h\n\
         create queue q64l node_sets = s2\n\
         create node_group g sets.prime = s1\n\
         set server default_queue = batch",
        &mut config,
        &st,
    )
    .unwrap();
    // The state takes the sets; a job runs on a1.
    assert!(st.set_config(config.clone()).is_empty());
    let id = submit(&mut st, 1, 1);
    let a1 = st.nodes().iter().position(|n| &*n.name == "a1").unwrap();
    st.start(id, &[a1], t(1)).unwrap();
    let job = st.full_id(id);

    for (script, says) in [
        (
            "create node_set s3 nodes = \"x1,a3\", host = h",
            "node \"a3\" is already in node set \"s1\"; node sets are disjoint".to_string(),
        ),
        (
            "create node_set s3 nodes = n[2-3], host = h",
            "node \"n2\" is already in node set \"local\"; node sets are disjoint".into(),
        ),
        (
            "set node_set s2 nodes += a2",
            "node \"a2\" is already in node set \"s1\"".into(),
        ),
        (
            "create node_set s1 nodes = z, host = h",
            "node set \"s1\" already exists".into(),
        ),
        (
            "create node_set local nodes = z, host = h",
            "node set \"local\" already exists (in the configuration file)".into(),
        ),
        (
            "set node_set nosuch mem = 1gb",
            "node set \"nosuch\" does not exist; see qmgr -c \"list node_set\"".into(),
        ),
        (
            "delete node_set nosuch",
            "node set \"nosuch\" does not exist".into(),
        ),
        (
            "set node_set local mem = 1gb",
            "node set \"local\" comes from the configuration file; change it there and restart qmeshd".into(),
        ),
        (
            "delete node_set local",
            "node set \"local\" comes from the configuration file".into(),
        ),
        (
            "delete node_set s2",
            "node set \"s2\" is used by queue \"q64l\"; take it out first (qmgr -c \"set queue q64l node_sets -= s2\")".into(),
        ),
        (
            "delete node_set s1",
            "node set \"s1\" is used by node group \"g\"; take it out first (qmgr -c \"set node_group g sets.prime -= s1\")".into(),
        ),
        (
            "set node_group g sets.prime = s2\ndelete node_set s1",
            format!("job {job} runs on node a1 of node set \"s1\"; delete the set once it has ended"),
        ),
        (
            "set node_set s1 nodes -= a1",
            format!("job {job} runs on node a1 of node set \"s1\"; change it once it has ended"),
        ),
        (
            "set node_set s1 host = h9",
            format!("job {job} runs on node a1"),
        ),
        ("set node_set s1 nodes -= a9", "node \"a9\" is not in node set \"s1\"".into()),
        (
            "set node_set s2 nodes -= b1",
            "node set \"s2\" would have no nodes; delete it instead".into(),
        ),
        (
            "create node_set m nodes = z, host = h, topology = mesh2d",
            "topology \"mesh2d\" needs dims; define it in the configuration file".into(),
        ),
        ("create node_set m host = h", "node set \"m\" needs nodes".into()),
        (
            "create node_set m nodes = z, host = h, colour = red",
            "not \"colour\"".into(),
        ),
        ("create node_set m nodes = \"z,z\", host = h", "listed twice".into()),
        ("set queue batch node_sets = nosuch", "node set \"nosuch\" does not exist".into()),
        ("set node_group g sets += nosuch", "node set \"nosuch\" does not exist".into()),
        ("unset node_set s1 nodes", "a node set always has nodes".into()),
    ] {
        let message = fails(script, &config, &st);
        assert!(message.contains(&says), "{script}: {message}");
    }
    // Operators may not touch node sets; everyone may list them.
    let err = run_as(
        Role::Operator,
        "create node_set m nodes = z, host = h",
        &mut config.clone(),
        &st,
    )
    .unwrap_err();
    assert!(err.message.contains("manager rights"), "{err}");
    run_as(Role::User, "list node_set s1", &mut config.clone(), &st).unwrap();
}

#[test]
fn print_server_creates_sets_before_what_names_them() {
    let st = state(2);
    let mut config = st.config().clone();
    run_as(
        Role::Manager,
        "create node_set s1 nodes = \"a[1-4],b@h2,c@h2\", host = h, ncpus = 4, features = \"x,y\"\n\
         create node_group g sets = s1\n\
         set queue batch node_sets = s1",
        &mut config,
        &st,
    )
    .unwrap();
    let printed = print_server(&config);
    assert!(
        printed.contains(
            "create node_set s1 nodes = \"a[1-4]@h,b@h2,c@h2\", ncpus = 4, features = \"x,y\"\n"
        ),
        "{printed}"
    );
    let set_at = printed.find("create node_set").unwrap();
    assert!(set_at < printed.find("create node_group").unwrap());
    let mut rebuilt = Config::default();
    run_as(Role::Manager, &printed, &mut rebuilt, &st).unwrap();
    assert_eq!(rebuilt, config);
}

#[test]
fn a_set_takes_resources_available_for_host_level_resources() {
    let st = state(2);
    let mut config = st.config().clone();
    run_as(
        Role::Manager,
        "create resource scratch type = size, flag = nh\n\
         create resource model type = string, flag = h\n\
         create resource matlab type = long, flag = q\n\
         create node_set big nodes = \"b[1-2]\", host = hb, resources_available.scratch = 400gb\n\
         set node_set big resources_available.model = skylake",
        &mut config,
        &st,
    )
    .unwrap();
    let attrs = &config.node_sets["big"].attrs;
    assert_eq!(attrs.resources["scratch"], "400gb");
    assert_eq!(attrs.resources["model"], "skylake");
    let out = run_as(Role::Manager, "list node_set big", &mut config, &st).unwrap();
    assert!(
        out.output
            .contains("attributes = model=skylake, scratch=400gb"),
        "{}",
        out.output
    );
    let printed = print_server(&config);
    assert!(
        printed.contains(
            "create node_set big nodes = \"b1,b2\", host = hb, resources_available.model = \
             skylake, resources_available.scratch = 400gb\n"
        ),
        "{printed}"
    );
    assert!(
        printed.find("create resource scratch") < printed.find("create node_set big"),
        "resources come first: {printed}"
    );
    // The printed form restores.
    let mut restored = st.config().clone();
    let over = super::super::print_server_over(&config, st.config());
    run_as(Role::Manager, &over, &mut restored, &st).unwrap();
    assert_eq!(restored.node_sets["big"], config.node_sets["big"]);

    for (script, says) in [
        (
            "set node_set big resources_available.scratch = lots",
            "resources_available.scratch: write a size",
        ),
        (
            "set node_set big resources_available.matlab = 2",
            "is not a host resource (flag = q)",
        ),
        (
            "set node_set big resources_available.nosuch = 2",
            "resource \"nosuch\" is not defined",
        ),
        (
            "delete resource scratch",
            "named by node set big's resources_available.scratch",
        ),
    ] {
        assert!(fails(script, &config, &st).contains(says), "{script}");
    }
    run_as(
        Role::Manager,
        "unset node_set big resources_available.scratch",
        &mut config,
        &st,
    )
    .unwrap();
    assert!(
        !config.node_sets["big"]
            .attrs
            .resources
            .contains_key("scratch")
    );
}

// Found while fuzzing (fuzz/fuzz_targets/qmgr.rs): zero padding as long
// as the script made 100,000 names of 2 KB each (40 s, a gigabyte), and
// 200 ranges twenty million nodes (out of memory).
#[test]
fn fuzz_node_ranges_are_bounded_in_width_length_and_number() {
    let padded = format!("n[{}1-99999]", "0".repeat(2000));
    assert!(expand(&padded).unwrap_err().contains("not a node range"));
    assert_eq!(expand("n[0000000001-0000000003]").unwrap().len(), 3);
    let long = format!("{}[0-2]", "n".repeat(250));
    assert!(expand(&long).unwrap_err().contains("at most 255"));
    let many: Vec<String> = (0..11).map(|i| format!("n{i}x[0-99999]")).collect();
    let err = parse_nodes(&many.join(","), Some("h")).unwrap_err();
    assert!(err.contains("more than 1000000 nodes"), "{err}");
}
