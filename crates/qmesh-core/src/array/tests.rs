use super::*;
use proptest::prelude::*;

#[test]
fn pbs_pro_form_parses_with_step_and_throttle() {
    let spec = ArraySpec::parse_pbs("1-100:2%10").unwrap();
    assert_eq!(spec.count(), 50);
    assert_eq!(spec.throttle, Some(10));
    assert_eq!(spec.index_at(0), Some(1));
    assert_eq!(spec.index_at(49), Some(99));
    assert_eq!(spec.index_at(50), None);
    assert_eq!(spec.position_of(5), Some(2));
    assert_eq!(spec.position_of(4), None);
    assert_eq!(spec.indices_text(), "1-100:2");
    assert_eq!(ArraySpec::parse_pbs("0-9").unwrap().count(), 10);
}

#[test]
fn torque_form_parses_lists() {
    let spec = ArraySpec::parse_torque("1,4,9-12%2").unwrap();
    assert_eq!(spec.count(), 6);
    assert_eq!(spec.throttle, Some(2));
    let indices: Vec<u32> = (0..6).map(|p| spec.index_at(p).unwrap()).collect();
    assert_eq!(indices, [1, 4, 9, 10, 11, 12]);
    assert_eq!(spec.position_of(10), Some(3));
    assert_eq!(spec.indices_text(), "1,4,9-12");
    assert_eq!(spec.style, ArrayStyle::Torque);
}

#[test]
fn bad_arrays_say_what_to_write() {
    for (text, torque) in [
        ("1-", false),
        ("5", false),
        ("9-1", false),
        ("1-10:0", false),
        ("1-10%0", false),
        ("a-b", false),
        ("1-99999999", false),
        ("4,1", true),
        ("1-5,3", true),
        ("", true),
    ] {
        let err = if torque {
            ArraySpec::parse_torque(text)
        } else {
            ArraySpec::parse_pbs(text)
        }
        .unwrap_err()
        .to_string();
        assert!(err.contains("for example"), "{text}: {err}");
    }
}

#[test]
fn ranges_map_to_positions() {
    let spec = ArraySpec::parse_pbs("1-100:2").unwrap();
    let set = spec.positions_between(5, 9);
    assert_eq!(set.iter().cloned().collect::<Vec<_>>(), vec![2..5]);
    assert!(spec.positions_between(200, 300).is_empty());
    let t = ArraySpec::parse_torque("1,4,9-12").unwrap();
    assert_eq!(
        t.positions_between(3, 10)
            .iter()
            .cloned()
            .collect::<Vec<_>>(),
        vec![1..4]
    );
}

#[test]
fn ids_name_sub_jobs_and_ranges() {
    let id = JobId(12).sub_job(3);
    assert_eq!(id.to_string(), "12[3]");
    assert_eq!(id.seq(), 12);
    assert_eq!(id.array_parent(), Some(JobId(12)));
    assert_eq!(JobId(12).array_index(), None);
    assert_eq!(JobId(12).sub_job(0).to_string(), "12[0]");
    assert_eq!(Named::parse("12[]", "sp").unwrap(), Named::One(JobId(12)));
    assert_eq!(
        Named::parse("12[].sp", "sp").unwrap(),
        Named::One(JobId(12))
    );
    assert_eq!(Named::parse("12[3].sp", "sp").unwrap(), Named::One(id));
    assert_eq!(
        Named::parse("12[5-9]", "sp").unwrap(),
        Named::Range {
            array: JobId(12),
            first: 5,
            last: 9
        }
    );
    for bad in ["12[", "12[x]", "12[9-5]", "[3]", "12[3"] {
        assert!(Named::parse(bad, "sp").is_err(), "{bad}");
    }
}

proptest! {
    #[test]
    fn positions_and_indices_agree(first in 0u32..1000, len in 0u32..500, step in 1u32..7) {
        let spec = ArraySpec::parse_pbs(&format!("{first}-{}:{step}", first + len)).unwrap();
        for pos in 0..spec.count() {
            let index = spec.index_at(pos).unwrap();
            prop_assert_eq!(spec.position_of(index), Some(pos));
        }
        let (lo, hi) = (first + len / 3, first + len / 2);
        let between: Vec<u32> = spec.positions_between(lo, hi).iter().flat_map(|r| r.clone()).collect();
        let expect: Vec<u32> = (0..spec.count()).filter(|&p| {
            let i = spec.index_at(p).unwrap();
            (lo..=hi).contains(&i)
        }).collect();
        prop_assert_eq!(between, expect);
    }
}
