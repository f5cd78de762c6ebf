//! GPUs: how many this host has (the agent's `--gpus`, else its
//! `/dev/nvidiaN` devices), reported with every heartbeat, and which of
//! them a job launched here gets.
//!
//! A job's GPUs here are its local nodes' `shares[].gpus` together. It gets
//! the lowest indices that no other running job of this host holds; they
//! are recorded in its `launch.json`, so a restarted agent knows them, and
//! it sees them as `CUDA_VISIBLE_DEVICES` and in `PBS_GPUFILE` (Torque's
//! `HOST-gpuN` lines). A job whose end is written no longer holds any.
//! Launches are taken one at a time (the session awaits each), so two
//! jobs never choose at once.

use std::collections::BTreeSet;
use std::path::Path;

use tracing::warn;

use crate::spool::Spool;

/// `/dev/nvidiaN` devices in `dev` (not nvidiactl, nvidia-uvm...).
pub fn count_devices(dev: &Path) -> u32 {
    let Ok(entries) = std::fs::read_dir(dev) else {
        return 0;
    };
    let count = entries
        .flatten()
        .filter(|e| {
            e.file_name().to_str().is_some_and(|name| {
                name.strip_prefix("nvidia")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
        })
        .count();
    u32::try_from(count).unwrap_or(u32::MAX)
}

/// The indices held by the jobs of `spool` that have not ended.
pub fn held(spool: &Spool) -> BTreeSet<u32> {
    let mut held = BTreeSet::new();
    let Ok(dirs) = spool.scan() else {
        return held;
    };
    for dir in dirs.iter().filter(|d| !d.has_result()) {
        match dir.read_launch() {
            Ok(launch) => held.extend(launch.added.gpus),
            Err(e) => warn!(job = dir.seq, "{e}; its GPUs, if any, are taken as free"),
        }
    }
    held
}

/// The `wanted` lowest indices below `total` that are not `held`; the
/// refusal in words when there are not that many.
pub fn choose(total: u32, held: &BTreeSet<u32>, wanted: u32) -> Result<Vec<u32>, String> {
    if wanted == 0 {
        return Ok(Vec::new());
    }
    let free: Vec<u32> = (0..total).filter(|g| !held.contains(g)).collect();
    if free.len() < wanted as usize {
        return Err(if total == 0 {
            format!(
                "the job needs {wanted} GPU(s) on this host, which reports none; give its agent --gpus N"
            )
        } else {
            format!(
                "the job needs {wanted} GPU(s) on this host, but only {} of its {total} are free (running jobs hold {held:?})",
                free.len()
            )
        });
    }
    Ok(free.into_iter().take(wanted as usize).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Additions, finish};
    use qmesh_proto::v1;

    #[test]
    fn devices_are_counted_by_name() {
        let dev = tempfile::tempdir().unwrap();
        for name in [
            "nvidia0",
            "nvidia1",
            "nvidia12",
            "nvidiactl",
            "nvidia-uvm",
            "null",
        ] {
            std::fs::write(dev.path().join(name), "").unwrap();
        }
        assert_eq!(count_devices(dev.path()), 3);
        assert_eq!(count_devices(&dev.path().join("missing")), 0);
    }

    #[test]
    fn the_lowest_free_indices_are_chosen() {
        let held: BTreeSet<u32> = [0, 2].into_iter().collect();
        assert_eq!(choose(4, &held, 2).unwrap(), vec![1, 3]);
        assert_eq!(choose(4, &held, 0).unwrap(), Vec::<u32>::new());
        let e = choose(4, &held, 3).unwrap_err();
        assert!(e.contains("only 2 of its 4 are free"), "{e}");
        let e = choose(0, &BTreeSet::new(), 1).unwrap_err();
        assert!(e.contains("--gpus"), "{e}");
        assert_eq!(crate::env::visible_devices(&[1, 3]), "1,3");
    }

    #[test]
    fn running_jobs_hold_their_gpus_and_ended_ones_do_not() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let launch = |job| v1::LaunchJob {
            job,
            job_id: format!("{job}.s"),
            ..Default::default()
        };
        let with = |gpus: Vec<u32>| Additions {
            gpus,
            ..Additions::default()
        };
        spool.prepare_order(launch(1), with(vec![0, 1])).unwrap();
        let ended = spool
            .prepare_order(launch(2), with(vec![2]))
            .unwrap()
            .unwrap();
        spool.prepare_order(launch(3), with(vec![])).unwrap();
        assert_eq!(held(&spool), [0, 1, 2].into_iter().collect());
        ended
            .write_result(&finish(2, v1::FinishCause::LaunchFailed, "x".into(), 0))
            .unwrap();
        let held = held(&spool);
        assert_eq!(held, [0, 1].into_iter().collect());
        assert_eq!(choose(4, &held, 2).unwrap(), vec![2, 3]);
    }
}
