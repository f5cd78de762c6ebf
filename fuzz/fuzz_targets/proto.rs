//! Every request message the daemon's gRPC services accept, decoded with
//! prost as tonic decodes them; the first byte picks the message, the rest
//! is its encoding. Where the daemon turns a message into core terms with
//! pure functions, those run too: a submission is converted, its sizes
//! checked and prepared against the embedded configuration's state (queue,
//! resources, run options, array, dependencies); an alteration is
//! converted; job ids are parsed; an agent's end of job is read.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use prost::Message;
use qmesh_proto::v1;
use qmeshd::convert;

fn ids(ids: &[String]) {
    for id in ids {
        let _ = qmesh_core::array::Named::parse(id, "srv");
    }
}

fn submit(req: v1::SubmitRequest) {
    let (submission, payload) = convert::submission(req);
    if qmesh_core::submit::sizes::check(&submission, &payload).is_err() {
        return;
    }
    let now = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
    common::with_state(|state, _| {
        let _ = state.prepare(submission, &common::user(), now);
    });
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, bytes)) = data.split_first() else {
        return;
    };
    match which % 20 {
        0 => {
            if let Ok(m) = v1::SubmitRequest::decode(bytes) {
                submit(m);
            }
        }
        1 => {
            if let Ok(m) = v1::StatusRequest::decode(bytes) {
                ids(&m.job_ids);
            }
        }
        2 => {
            if let Ok(m) = v1::JobsRequest::decode(bytes) {
                ids(&m.job_ids);
            }
        }
        3 => {
            let _ = v1::QueueStatusRequest::decode(bytes);
        }
        4 => {
            if let Ok(m) = v1::WaitRequest::decode(bytes) {
                ids(&[m.job_id]);
            }
        }
        5 => {
            let _ = v1::PlanRequest::decode(bytes);
        }
        6 => {
            if let Ok(m) = v1::WhenRequest::decode(bytes) {
                ids(&[m.job_id]);
            }
        }
        7 => {
            let _ = v1::UsageRequest::decode(bytes);
        }
        8 => {
            let _ = v1::NodesRequest::decode(bytes);
        }
        9 => {
            if let Ok(m) = v1::MoveRequest::decode(bytes) {
                ids(&m.job_ids);
            }
        }
        10 => {
            if let Ok(m) = v1::SignalRequest::decode(bytes) {
                ids(&m.job_ids);
            }
        }
        11 => {
            let _ = v1::ServerStatusRequest::decode(bytes);
        }
        12 => {
            if let Ok(m) = v1::RerunRequest::decode(bytes) {
                ids(&m.job_ids);
            }
        }
        13 => {
            if let Ok(m) = v1::OrderRequest::decode(bytes) {
                ids(&[m.first, m.second]);
            }
        }
        14 => {
            if let Ok(m) = v1::RunRequest::decode(bytes) {
                ids(&m.job_ids);
            }
        }
        15 => {
            if let Ok(m) = v1::TraceRequest::decode(bytes) {
                ids(&[m.job_id]);
            }
        }
        16 => {
            let _ = v1::TaskFrame::decode(bytes);
        }
        17 => {
            if let Ok(m) = v1::AlterRequest::decode(bytes) {
                ids(&m.job_ids);
                let _ = convert::alteration(&m);
            }
        }
        18 => {
            if let Ok(m) = v1::QmgrRequest::decode(bytes) {
                let _ = qmesh_core::qmgr::parse_script(&m.script);
            }
        }
        _ => {
            if let Ok(v1::AgentMessage {
                kind: Some(v1::agent_message::Kind::Finished(f)),
            }) = v1::AgentMessage::decode(bytes)
            {
                let _ = convert::job_exit(&f);
            }
        }
    }
});
