use super::*;
use proptest::prelude::*;

fn run(nodes: u32, walltime: u64, ran: u64) -> Run {
    Run {
        nodes,
        walltime,
        ran,
    }
}

#[test]
fn no_history_means_no_prediction() {
    let history = RunHistory::default();
    assert_eq!(history.predict("ann", 4, 3600), None);
    assert_eq!(planned_run(3600, None), 3600, "planned with its wall time");
}

#[test]
fn the_mean_of_the_users_last_two_runs() {
    let mut history = RunHistory::default();
    history.record("ann", run(4, 3600, 1000));
    assert_eq!(
        history.predict("ann", 4, 3600),
        Some(1000),
        "one run: that one"
    );
    history.record("ann", run(4, 3600, 200));
    history.record("ann", run(8, 7200, 600));
    // The last two: 600 and 200, whatever they asked.
    assert_eq!(history.predict("ann", 4, 3600), Some(400));
    assert_eq!(history.predict("bob", 4, 3600), None, "another user's runs");
}

#[test]
fn a_prediction_never_exceeds_the_request_nor_falls_below_a_second() {
    let mut history = RunHistory::default();
    history.record("ann", run(1, 90_000, 80_000));
    history.record("ann", run(1, 90_000, 80_000));
    assert_eq!(history.predict("ann", 1, 600), Some(600));
    history.record("ann", run(1, 60, 0));
    history.record("ann", run(1, 60, 0));
    assert_eq!(history.predict("ann", 1, 600), Some(1));
    assert_eq!(
        planned_run(300, Some(900)),
        300,
        "a lowered wall time caps it"
    );
    assert_eq!(planned_run(0, None), 1);
}

#[test]
fn the_history_keeps_a_bounded_number_of_runs_per_user() {
    let mut history = RunHistory::default();
    for ran in 0..100 {
        history.record("ann", run(1, 1000, ran));
    }
    assert_eq!(history.by_user["ann"].len(), KEPT_PER_USER);
    assert_eq!(history.predict("ann", 1, 1000), Some((99 + 98) / 2));
    assert_eq!(history.users(), 1);
}

#[test]
fn like_requests_are_preferred_when_two_are_kept() {
    let mut history = RunHistory::new(Likeness::Request);
    history.record("ann", run(4, 3600, 3000));
    history.record("ann", run(4, 3600, 2000));
    history.record("ann", run(1, 60, 10));
    history.record("ann", run(1, 60, 20));
    history.record("ann", run(2, 600, 500));
    assert_eq!(
        history.predict("ann", 4, 3600),
        Some(2500),
        "the two 4-node runs"
    );
    assert_eq!(history.predict("ann", 1, 60), Some(15));
    // Only one like run: the user's last two.
    assert_eq!(history.predict("ann", 2, 600), Some((500 + 20) / 2));
    assert_eq!(
        RunHistory::default().likeness(),
        Likeness::User,
        "Tsafrir et al.'s rule is the default"
    );
}

#[test]
fn an_outlived_prediction_climbs_the_ladder_up_to_the_wall_time() {
    // Still within its prediction.
    assert_eq!(corrected(100, 50, 7200), 100);
    // Outlived: the next step of the ladder past what it has run.
    assert_eq!(corrected(100, 100, 7200), 300);
    assert_eq!(corrected(100, 301, 7200), 900);
    assert_eq!(corrected(100, 3600, 7200), 7200);
    // The wall time comes first.
    assert_eq!(corrected(100, 1000, 1500), 1500);
    // Past the ladder: the wall time.
    assert_eq!(corrected(100, 400_000, 1_000_000), 1_000_000);
    // Past its wall time (being killed): its wall time.
    assert_eq!(corrected(100, 2000, 1500), 1500);
}

proptest! {
    #[test]
    fn predictions_stay_between_a_second_and_the_request(
        runs in proptest::collection::vec((1u32..4, 1u64..100_000, 0u64..200_000), 0..20),
        nodes in 1u32..4,
        walltime in 0u64..100_000,
        request in any::<bool>(),
    ) {
        let likeness = if request { Likeness::Request } else { Likeness::User };
        let mut history = RunHistory::new(likeness);
        for (n, w, ran) in runs {
            history.record("u", run(n, w, ran));
        }
        let planned = planned_run(walltime, history.predict("u", nodes, walltime));
        prop_assert!(planned >= 1);
        prop_assert!(planned <= walltime.max(1));
    }

    #[test]
    fn a_corrected_prediction_lies_after_the_elapsed_time(
        planned in 0u64..500_000,
        elapsed in 0u64..500_000,
        walltime in 1u64..500_000,
    ) {
        let c = corrected(planned, elapsed, walltime);
        prop_assert!(c >= 1 && c <= walltime);
        if elapsed < walltime {
            prop_assert!(c > elapsed, "{c} after {elapsed}");
        }
        // It never goes down while the job runs on.
        prop_assert!(corrected(planned, elapsed + 1, walltime) >= c);
    }
}
