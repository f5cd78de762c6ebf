//! Reservations in a replay (`--reservations`): they keep their nodes
//! from other jobs, short jobs backfill before them, their own jobs run
//! inside them, and a refusal is counted with the core's reason.

use super::*;
use crate::reservations::parse;
use crate::swf;

/// An SWF line: number, submit, run, procs, requested time.
fn line(n: u64, submit: i64, run: i64, procs: i64, req: i64) -> String {
    format!("{n} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 1 -1 -1 -1\n")
}

fn run(trace: &str, reservations: &str, policy: Policy) -> Replay {
    let trace = swf::read(trace.as_bytes(), "t.swf").unwrap();
    let options = Options {
        policy,
        reservations: parse(reservations, "r.txt").unwrap(),
        accounting: true,
        ..Options::default()
    };
    replay(&trace, &options).unwrap()
}

fn schedule(r: &Replay) -> Vec<(u64, i64, i64, &str)> {
    r.records
        .iter()
        .map(|r| (r.number, r.start, r.end, &*r.queue))
        .collect()
}

#[test]
fn a_reservation_delays_what_would_overlap_it_and_runs_its_own_jobs_inside() {
    // Four nodes, all reserved from 1000 for an hour (made at 0). Job 1
    // (all four, asking 4000 s) would overlap it and waits for its end;
    // job 2 (two nodes, 500 s) backfills before it; job 3 could use it
    // and is the second such job: with share 0.5 it goes to R1 and runs
    // at its start.
    let mut t = String::from("; MaxProcs: 4\n");
    t += &line(1, 10, 2000, 4, 4000);
    t += &line(2, 20, 500, 2, 500);
    t += &line(3, 30, 300, 2, 600);
    for policy in [Policy::Easy, Policy::Conservative] {
        let r = run(&t, "0 1000 1:00:00 4 share=0.5\n", policy);
        assert_eq!(
            schedule(&r),
            [
                (1, 4600, 6600, "1"),
                (2, 20, 520, "1"),
                (3, 1000, 1300, "R1")
            ],
            "{policy:?}"
        );
        let o = &r.reservations[0];
        assert_eq!((o.id, o.jobs, o.ran, o.deleted), (Some(1), 1, 1, 0));
        assert_eq!(o.occurrences.len(), 1);
        assert_eq!((o.occurrences[0].start, o.occurrences[0].end), (1000, 4600));
        assert_eq!(o.used, 600.0);
        let m = crate::metrics::reservations(&r.reservations, &r.records, r.nodes);
        assert_eq!(m.held_node_seconds, 4.0 * 3600.0);
        assert_eq!(m.used_share, 600.0 / (4.0 * 3600.0));
        assert_eq!(m.others.jobs, 2);
    }
    // Without it, job 1 starts at once and job 2 waits for it.
    let r = run(&t, "", Policy::Easy);
    assert_eq!(r.records[0].start, 10);
    assert!(r.reservations.is_empty());
}

#[test]
fn refusals_are_counted_with_the_cores_reason() {
    // Job 1 holds all four nodes until 5000 by its wall time: a
    // reservation from 100 is refused; one from 5000 is confirmed; a rule
    // without end is refused before any node is looked for.
    let mut t = String::from("; MaxProcs: 4\n");
    t += &line(1, 0, 3000, 4, 5000);
    let r = run(
        &t,
        "10 100 60 2\n10 5000 60 2\n10 6000 60 2 FREQ=DAILY\n",
        Policy::Easy,
    );
    let o = &r.reservations;
    assert!(
        o[0].refused
            .as_deref()
            .is_some_and(|why| why.contains("not free together")),
        "{o:?}"
    );
    assert_eq!(o[1].id, Some(1));
    assert!(
        o[2].refused
            .as_deref()
            .is_some_and(|why| why.contains("add COUNT=N")),
        "{o:?}"
    );
    let m = crate::metrics::reservations(&r.reservations, &r.records, r.nodes);
    assert_eq!((m.confirmed, m.refused), (1, 2));
}

#[test]
fn jobs_left_in_its_queue_at_its_end_are_deleted_and_counted() {
    // Two nodes from 1000 to 2000 for two jobs of 800 s on both: the
    // second cannot end in time and is deleted at 2000.
    let mut t = String::from("; MaxProcs: 4\n");
    t += &line(1, 10, 800, 2, 800);
    t += &line(2, 20, 800, 2, 800);
    t += &line(3, 30, 100, 4, 100);
    let r = run(&t, "0 1000 1000 2 share=1\n", Policy::Easy);
    assert_eq!(
        schedule(&r),
        [(1, 1000, 1800, "R1"), (3, 30, 130, "1")],
        "job 3 is too large for R1 and runs outside it"
    );
    assert_eq!(r.skipped.len(), 1);
    assert_eq!(r.skipped[0].number, 2);
    assert_eq!(r.skipped[0].kind, "left in a reservation's queue");
    assert!(r.skipped[0].why.contains("R1"), "{:?}", r.skipped);
    let o = &r.reservations[0];
    assert_eq!((o.jobs, o.ran, o.deleted), (2, 1, 1));
}

/// A pseudo-random job mix (a fixed LCG: the test is the same each run).
fn mix(jobs: u64, nodes: i64) -> String {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |below: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % below
    };
    let mut t = format!("; MaxProcs: {nodes}\n");
    let mut submit = 0;
    for n in 1..=jobs {
        submit += next(1800) as i64;
        let procs = 1 + next(nodes as u64) as i64;
        let req = 60 + next(6 * 3600) as i64;
        let run = 1 + next(req as u64) as i64;
        t += &line(n, submit, run, procs, req);
    }
    t
}

/// The nodes (`n3`) of an `E` record's `exec_host`, with its queue and
/// its start and end (Unix seconds).
fn ran(text: &str) -> (String, i64, i64, Vec<String>) {
    let key = |k: &str| {
        text.split(' ')
            .find_map(|kv| kv.strip_prefix(k))
            .unwrap_or_default()
            .to_string()
    };
    let hosts = key("exec_vnode=")
        .split('+')
        .map(|chunk| {
            chunk
                .trim_matches(|c| c == '(' || c == ')')
                .split(':')
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    (
        key("queue="),
        key("start=").parse().unwrap(),
        key("end=").parse().unwrap(),
        hosts,
    )
}

#[test]
fn no_other_job_runs_on_a_reservations_nodes_during_its_occurrences() {
    // 16 nodes, 400 jobs over about four days; half the machine held six
    // hours a day (made at 0), a third of the jobs that could use it sent
    // to it.
    let t = mix(400, 16);
    for policy in [Policy::Easy, Policy::Conservative, Policy::Fcfs] {
        let r = run(
            &t,
            "0 3:00:00 6:00:00 8 FREQ=DAILY;COUNT=4 share=0.3\n",
            policy,
        );
        let o = &r.reservations[0];
        assert_eq!(o.occurrences.len(), 4, "{o:?}");
        // Under FCFS the core's SDSC blocking (the gate's `blocked`) holds
        // the reservation's jobs back too, once a job ahead cannot start:
        // its nodes stay held all the same, which is what is checked here.
        if policy != Policy::Fcfs {
            assert!(o.ran > 5, "{policy:?}: {o:?}");
        }
        let ended: Vec<_> = r
            .accounting
            .iter()
            .filter(|rec| rec.kind == qmesh_core::joblog::RecordType::Ended)
            .map(|rec| ran(&rec.text))
            .collect();
        assert_eq!(ended.len(), r.records.len());
        for (queue, start, end, hosts) in &ended {
            assert!(!hosts.is_empty() && hosts[0].starts_with('n'), "{hosts:?}");
            let on = o
                .occurrences
                .iter()
                .find(|s| s.start <= *start && *start < s.end);
            if queue == "R1" {
                // Inside an occurrence, on its nodes.
                let on = on.unwrap_or_else(|| panic!("R1 job at {start} outside R1"));
                assert!(*end <= on.end, "{policy:?}: R1 job runs past its end");
                assert!(hosts.iter().all(|h| on.nodes.contains(h)), "{hosts:?}");
                continue;
            }
            for s in &o.occurrences {
                if *start < s.end && s.start < *end {
                    assert!(
                        hosts.iter().all(|h| !s.nodes.contains(h)),
                        "{policy:?}: a {queue} job on {hosts:?} from {start} to {end} \
                         overlaps R1's {}..{} on {:?}",
                        s.start,
                        s.end,
                        s.nodes
                    );
                }
            }
        }
    }
}
