//! `sinfo --json` in Slurm 22.05's shape (openapi v0.0.38): `meta`,
//! `errors` and `nodes`, each node with 22.05's keys in its order. Values
//! qmesh has no counterpart for are Slurm's own "none" (0, "", null).

use super::view::{SLURM_VERSION, SlurmNode};
use crate::output::Tree;

pub fn document(nodes: &[&SlurmNode]) -> Tree {
    let mut parts = SLURM_VERSION
        .split('.')
        .map(|p| p.parse::<i64>().unwrap_or(0));
    let (major, minor, micro) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    let meta = Tree::Map(vec![
        (
            "plugin".into(),
            Tree::Map(vec![
                ("type".into(), Tree::text("openapi/v0.0.38")),
                ("name".into(), Tree::text("Slurm OpenAPI v0.0.38")),
            ]),
        ),
        (
            "Slurm".into(),
            Tree::Map(vec![
                (
                    "version".into(),
                    Tree::Map(vec![
                        ("major".into(), Tree::int(major)),
                        ("micro".into(), Tree::int(micro)),
                        ("minor".into(), Tree::int(minor)),
                    ]),
                ),
                ("release".into(), Tree::text(SLURM_VERSION)),
            ]),
        ),
    ]);
    Tree::Map(vec![
        ("meta".into(), meta),
        ("errors".into(), Tree::List(Vec::new())),
        (
            "nodes".into(),
            Tree::List(nodes.iter().map(|n| node(n)).collect()),
        ),
    ])
}

fn node(n: &SlurmNode) -> Tree {
    let int = |v: u64| Tree::int(i64::try_from(v).unwrap_or(i64::MAX));
    let texts = |v: &[&str]| Tree::List(v.iter().map(|s| Tree::text(*s)).collect());
    let features = n.features.join(",");
    let gres = if n.gpus > 0 {
        format!("gpu:{}", n.gpus)
    } else {
        String::new()
    };
    let gres_used = if n.gpus > 0 {
        format!("gpu:{}", n.gpus_alloc)
    } else {
        String::new()
    };
    let alloc_tres = n.alloc_tres();
    Tree::Map(vec![
        ("architecture".into(), Tree::text("")),
        ("burstbuffer_network_address".into(), Tree::text("")),
        ("boards".into(), Tree::int(1)),
        ("boot_time".into(), Tree::int(0)),
        ("comment".into(), Tree::text("")),
        ("cores".into(), int(u64::from(n.cpus))),
        ("cpu_binding".into(), Tree::int(0)),
        (
            "cpu_load".into(),
            Tree::int(n.load.map_or(0, |l| (l * 100.0).round() as i64)),
        ),
        ("extra".into(), Tree::text("")),
        ("free_memory".into(), Tree::int(0)),
        ("cpus".into(), int(u64::from(n.cpus))),
        ("last_busy".into(), Tree::int(0)),
        ("features".into(), Tree::text(&features)),
        ("active_features".into(), Tree::text(&features)),
        ("gres".into(), Tree::text(gres)),
        ("gres_drained".into(), Tree::text("N/A")),
        ("gres_used".into(), Tree::text(gres_used)),
        ("mcs_label".into(), Tree::text("")),
        ("name".into(), Tree::text(&n.name)),
        ("next_state_after_reboot".into(), Tree::text("invalid")),
        ("address".into(), Tree::text(&n.host)),
        ("hostname".into(), Tree::text(&n.host)),
        (
            "state".into(),
            Tree::text(n.state.base_name().to_ascii_lowercase()),
        ),
        ("state_flags".into(), texts(&n.state.flags())),
        (
            "next_state_after_reboot_flags".into(),
            Tree::List(Vec::new()),
        ),
        ("operating_system".into(), Tree::text("")),
        ("owner".into(), Tree::Null),
        (
            "partitions".into(),
            Tree::List(n.partitions.iter().map(Tree::text).collect()),
        ),
        ("port".into(), Tree::int(0)),
        ("real_memory".into(), int(n.mem_mb)),
        ("reason".into(), Tree::text(&n.reason)),
        ("reason_changed_at".into(), Tree::int(0)),
        ("reason_set_by_user".into(), Tree::text("")),
        ("slurmd_start_time".into(), Tree::int(0)),
        ("sockets".into(), Tree::int(1)),
        ("threads".into(), Tree::int(1)),
        ("temporary_disk".into(), Tree::int(0)),
        ("weight".into(), Tree::int(1)),
        ("tres".into(), Tree::text(n.cfg_tres())),
        ("slurmd_version".into(), Tree::text(SLURM_VERSION)),
        ("alloc_memory".into(), int(n.mem_alloc_mb)),
        ("alloc_cpus".into(), int(u64::from(n.cpus_alloc))),
        (
            "idle_cpus".into(),
            int(u64::from(n.cpus.saturating_sub(n.cpus_alloc))),
        ),
        (
            "tres_used".into(),
            if alloc_tres.is_empty() {
                Tree::Null
            } else {
                Tree::text(alloc_tres)
            },
        ),
        ("tres_weighted".into(), Tree::Float(0.0)),
    ])
}
