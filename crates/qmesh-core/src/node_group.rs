//! Node groups: the ordered node sets a queue draws from, by period.
//!
//! The SDSC Paragon split its mesh into node sets and gave each queue a
//! node group, an ordered list of sets; groups may overlap, and which sets
//! a group holds can change with the time of day: set 3 served only short
//! jobs in prime time and went back into the pool at night. A group here is
//! a default list of sets plus, per calendar period, the list that replaces
//! it while that period is active (the first active one in the group's
//! order wins). The order of a list is the order sets are tried in (seed
//! 2.2: the fullest set that holds the whole request first, then spill over
//! in this order).

use serde::{Deserialize, Serialize};

/// A node group (`qmgr -c "create node_group short sets = s1,s2"`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeGroup {
    pub name: String,
    /// The sets, in selection order, while none of `periods` is active.
    #[serde(default)]
    pub sets: Vec<String>,
    /// Per period, in order: the first active period's sets replace `sets`
    /// (`set node_group short sets.prime = s1,s2,s3`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub periods: Vec<PeriodSets>,
}

/// The sets a group holds while a period is active.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeriodSets {
    pub period: String,
    pub sets: Vec<String>,
}

impl NodeGroup {
    pub fn new(name: &str) -> NodeGroup {
        NodeGroup {
            name: name.to_string(),
            ..NodeGroup::default()
        }
    }

    /// The sets the group holds when `active` says which periods are on.
    pub fn sets_in(&self, active: impl Fn(&str) -> bool) -> &[String] {
        self.periods
            .iter()
            .find(|p| active(&p.period))
            .map_or(&self.sets[..], |p| &p.sets[..])
    }

    /// Every set the group holds in some period: what its jobs may ever
    /// reach.
    pub fn every_set(&self) -> impl Iterator<Item = &String> {
        let mut seen: Vec<&String> = Vec::new();
        for set in self
            .sets
            .iter()
            .chain(self.periods.iter().flat_map(|p| &p.sets))
        {
            if !seen.contains(&set) {
                seen.push(set);
            }
        }
        seen.into_iter()
    }

    /// The sets of one period (`None`: the default list), for qmgr.
    pub fn sets_of(&self, period: Option<&str>) -> Option<&[String]> {
        match period {
            None => Some(&self.sets),
            Some(name) => self
                .periods
                .iter()
                .find(|p| p.period == name)
                .map(|p| &p.sets[..]),
        }
    }

    /// Replaces the sets of one period (`None`: the default list); an
    /// empty list for a period removes the period's entry.
    pub fn set_sets(&mut self, period: Option<&str>, sets: Vec<String>) {
        match period {
            None => self.sets = sets,
            Some(name) => {
                let at = self.periods.iter().position(|p| p.period == name);
                match (at, sets.is_empty()) {
                    (Some(i), true) => {
                        self.periods.remove(i);
                    }
                    (Some(i), false) => self.periods[i].sets = sets,
                    (None, true) => {}
                    (None, false) => self.periods.push(PeriodSets {
                        period: name.to_string(),
                        sets,
                    }),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sdsc_short() -> NodeGroup {
        let mut g = NodeGroup::new("short");
        g.set_sets(None, vec!["set1".into(), "set2".into()]);
        g.set_sets(
            Some("prime"),
            vec!["set3".into(), "set1".into(), "set2".into()],
        );
        g
    }

    #[test]
    fn the_first_active_period_replaces_the_default_sets() {
        let g = sdsc_short();
        assert_eq!(g.sets_in(|p| p == "prime"), ["set3", "set1", "set2"]);
        assert_eq!(g.sets_in(|_| false), ["set1", "set2"]);
        let every: Vec<&String> = g.every_set().collect();
        assert_eq!(every, ["set1", "set2", "set3"]);
    }

    #[test]
    fn an_empty_list_removes_a_period() {
        let mut g = sdsc_short();
        g.set_sets(Some("prime"), Vec::new());
        assert!(g.periods.is_empty());
        assert_eq!(g.sets_of(Some("prime")), None);
        assert_eq!(
            g.sets_of(None),
            Some(&["set1".to_string(), "set2".to_string()][..])
        );
    }
}
