//! The node-hours each group has been charged: in all (against its
//! allocation) and decayed (for fair share).
//!
//! A charge is nodes × wall-clock seconds actually run / 3600, as ANL and
//! EPCC charge (not CPU time). Decayed usage halves every
//! `fairshare_half_life`: usage × 2^(−Δt / half-life). Every group is kept
//! decayed to one common instant, moved forward at each charge, so the
//! groups' parts of the total (all fair share needs) are read without any
//! arithmetic on time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::time::Time;

/// What every group has been charged. Stored by the daemon as one record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// The instant every group's `decayed` is decayed to.
    pub decayed_at: Option<Time>,
    pub groups: BTreeMap<String, GroupUsage>,
}

/// One group's usage, in node-hours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupUsage {
    /// Charged in all, never decayed.
    pub used: f64,
    /// Charged, decayed to [`Usage::decayed_at`].
    pub decayed: f64,
}

/// 2^(−seconds / half-life).
fn decay(seconds: f64, half_life: u64) -> f64 {
    (-seconds / half_life.max(1) as f64).exp2()
}

fn seconds_between(from: Time, to: Time) -> f64 {
    (to - from).num_milliseconds() as f64 / 1000.0
}

impl Usage {
    /// Charges `node_hours` to `group`, run up to `at`.
    pub fn charge(&mut self, group: &str, node_hours: f64, at: Time, half_life: u64) {
        let weight = match self.decayed_at {
            Some(t) if at > t => {
                let factor = decay(seconds_between(t, at), half_life);
                for g in self.groups.values_mut() {
                    g.decayed *= factor;
                }
                self.decayed_at = Some(at);
                1.0
            }
            // An end reported late: it has decayed since.
            Some(t) => decay(seconds_between(at, t), half_life),
            None => {
                self.decayed_at = Some(at);
                1.0
            }
        };
        let entry = self.groups.entry(group.to_string()).or_default();
        entry.used += node_hours;
        entry.decayed += node_hours * weight;
    }

    /// Node-hours charged to `group` in all.
    pub fn used(&self, group: &str) -> f64 {
        self.groups.get(group).map_or(0.0, |g| g.used)
    }

    /// `group`'s decayed usage at the common instant.
    pub fn decayed(&self, group: &str) -> f64 {
        self.groups.get(group).map_or(0.0, |g| g.decayed)
    }

    /// Every group's decayed usage at the common instant.
    pub fn total_decayed(&self) -> f64 {
        self.groups.values().map(|g| g.decayed).sum()
    }

    /// `group`'s decayed usage at `now`.
    pub fn decayed_at(&self, group: &str, now: Time, half_life: u64) -> f64 {
        let value = self.decayed(group);
        match self.decayed_at {
            Some(t) if now > t => value * decay(seconds_between(t, now), half_life),
            _ => value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::t;

    const WEEK: u64 = 7 * 24 * 3600;

    #[test]
    fn usage_halves_every_half_life() {
        let mut u = Usage::default();
        u.charge("c1", 100.0, t(0), WEEK);
        assert_eq!(u.decayed_at("c1", t(0), WEEK), 100.0);
        let one = u.decayed_at("c1", t(WEEK as i64), WEEK);
        assert!((one - 50.0).abs() < 1e-9, "{one}");
        let two = u.decayed_at("c1", t(2 * WEEK as i64), WEEK);
        assert!((two - 25.0).abs() < 1e-9, "{two}");
        assert_eq!(u.used("c1"), 100.0, "the total is never decayed");
    }

    #[test]
    fn a_charge_decays_the_others_to_its_time() {
        let mut u = Usage::default();
        u.charge("c1", 100.0, t(0), WEEK);
        u.charge("c2", 10.0, t(WEEK as i64), WEEK);
        assert!((u.decayed("c1") - 50.0).abs() < 1e-9);
        assert_eq!(u.decayed("c2"), 10.0);
        assert!((u.total_decayed() - 60.0).abs() < 1e-9);
        // A late report counts for what it would have decayed to.
        u.charge("c2", 20.0, t(0), WEEK);
        assert!((u.decayed("c2") - 20.0).abs() < 1e-9);
        assert_eq!(u.used("c2"), 30.0);
    }

    #[test]
    fn it_round_trips_through_json() {
        let mut u = Usage::default();
        u.charge("c1", 1.5, t(7), WEEK);
        let text = serde_json::to_string(&u).unwrap();
        assert_eq!(serde_json::from_str::<Usage>(&text).unwrap(), u);
    }
}
