//! The Prometheus endpoint (`[daemon] metrics_listen`): scraped over
//! HTTP as Prometheus would, and read with a Prometheus text-format
//! parser (the `prometheus-parse` crate), not with string matching.

use std::io::{Read, Write};

use prometheus_parse::{Scrape, Value};

use crate::agents::free_port;
use crate::harness::Daemon;

/// GET /metrics; the body.
fn scrape(port: u16) -> String {
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to /metrics");
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").expect("an HTTP reply");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text"),
        "{head}"
    );
    body.to_string()
}

fn parse(body: &str) -> Scrape {
    Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("a Prometheus text scrape")
}

/// The gauge with these labels, if the scrape has it.
fn gauge(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .and_then(|s| match s.value {
            Value::Gauge(v) | Value::Untyped(v) => Some(v),
            _ => None,
        })
}

/// A histogram's count of observations.
fn observations(scrape: &Scrape, name: &str) -> f64 {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name)
        .and_then(|s| match &s.value {
            Value::Histogram(buckets) => buckets.last().map(|b| b.count),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no histogram {name}"))
}

#[test]
fn the_metrics_endpoint_says_what_the_daemon_holds() {
    let port = free_port();
    let d = Daemon::start_with(Some(&format!(
        r#"
[daemon]
metrics_listen = "127.0.0.1:{port}"

[agents]
local = true
local_host = "localhost"

[server]
default_queue = "batch"

[[queue]]
name = "batch"
node_sets = ["c"]

[[node_set]]
name = "c"
count = 4
host = "localhost"
"#
    )));
    d.await_node_state("c00", "free");
    let started = d.fifo("started");
    d.script(
        "hold.sh",
        &format!("#!/bin/sh\necho up > {}\nsleep 600\n", started.display()),
    );
    let running = d.qsub(&["-l", "nodes=3", "hold.sh"]);
    d.read_fifo(&started);
    let waiting = d.qsub(&["-l", "nodes=2", "hold.sh"]);
    let held = d.qsub(&["-h", "hold.sh"]);

    let body = scrape(port);
    assert!(
        body.trim_end().ends_with("# EOF"),
        "OpenMetrics ends with # EOF:\n{body}"
    );
    let m = parse(&body);
    let jobs = |state| gauge(&m, "qmesh_jobs", &[("state", state), ("queue", "batch")]);
    assert_eq!(jobs("running"), Some(1.0), "{body}");
    assert_eq!(jobs("queued"), Some(1.0), "{body}");
    assert_eq!(jobs("held"), Some(1.0), "{body}");
    let nodes = |state| gauge(&m, "qmesh_nodes", &[("state", state), ("node_set", "c")]);
    assert_eq!(nodes("job-busy"), Some(3.0), "{body}");
    assert_eq!(nodes("free"), Some(1.0), "{body}");
    assert_eq!(
        gauge(&m, "qmesh_agents_connected", &[]),
        Some(1.0),
        "{body}"
    );
    assert_eq!(
        gauge(&m, "qmesh_utilization_ratio", &[]),
        Some(0.75),
        "{body}"
    );
    let oldest = gauge(&m, "qmesh_oldest_queued_job_wait_seconds", &[]).unwrap();
    assert!(oldest >= 0.0, "{body}");
    assert!(
        observations(&m, "qmesh_submission_duration_seconds") >= 3.0,
        "{body}"
    );
    assert!(
        observations(&m, "qmesh_store_flush_duration_seconds") >= 1.0,
        "{body}"
    );
    assert!(
        observations(&m, "qmesh_scheduling_pass_duration_seconds") >= 1.0,
        "{body}"
    );
    assert!(
        observations(&m, "qmesh_scheduling_pass_starts") >= 1.0,
        "{body}"
    );
    for doc in [
        "qmesh_jobs",
        "qmesh_nodes",
        "qmesh_scheduling_pass_duration_seconds",
    ] {
        assert!(m.docs.contains_key(doc), "{doc} has no HELP:\n{body}");
    }

    // The gauges follow the state: what ended is no longer counted.
    d.ok("qdel", &[&running, &waiting, &held]);
    d.wait_job(&running);
    let m = parse(&scrape(port));
    assert_eq!(
        gauge(
            &m,
            "qmesh_jobs",
            &[("state", "running"), ("queue", "batch")]
        ),
        None
    );
    assert_eq!(gauge(&m, "qmesh_utilization_ratio", &[]), Some(0.0));
}
