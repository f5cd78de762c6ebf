//! The Jobs service: qsub, qstat, qdel, qhold, qrls, qmove, qsig, qstat -Q,
//! qrerun, qorder, qrun, tracejob, qalter, and the sp commands' plan, when
//! and nodes.

use qmesh_proto::served::EncodedStatusReply;
use qmesh_proto::served::jobs_server::Jobs;
use qmesh_proto::v1;

use crate::convert;
use tonic::{Request, Response, Status};

use super::{Link, reply};
use crate::event::{Event, JobAction, StatusQuery};

#[derive(Clone)]
pub struct JobsService {
    pub link: Link,
}

impl JobsService {
    async fn act(
        &self,
        request: Request<v1::JobsRequest>,
        action: JobAction,
    ) -> Result<Response<v1::JobsReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let ids = request.into_inner().job_ids;
        check_ids(&ids)?;
        if ids.is_empty() {
            return Err(Status::invalid_argument(format!(
                "name the jobs to {}",
                action.verb()
            )));
        }
        self.link
            .ask(|reply| Event::Act {
                peer,
                action,
                ids,
                reply,
            })
            .await
            .map(|outcomes| Response::new(reply::jobs(outcomes)))
    }
}

/// qhold's and qrls's `-h` letters; `None` when not given.
fn hold_list(text: &str) -> Result<Option<qmesh_core::Holds>, Status> {
    if text.is_empty() {
        return Ok(None);
    }
    qmesh_core::Holds::parse_list(text)
        .map(Some)
        .map_err(Status::invalid_argument)
}

/// qstat -u: the users named (`user@host` as `user`); empty for all.
fn user_names(user: &str, users: &[String]) -> Vec<String> {
    std::iter::once(user)
        .chain(users.iter().map(String::as_str))
        .map(|u| u.split_once('@').map_or(u, |(name, _)| name).trim())
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect()
}

/// Refuses a request naming more job ids than one may carry
/// (`qmesh_core::submit::sizes::check_job_ids`), before the task sees it.
fn check_ids(ids: &[String]) -> Result<(), Status> {
    qmesh_core::submit::sizes::check_job_ids(ids).map_err(Status::invalid_argument)
}

#[tonic::async_trait]
impl Jobs for JobsService {
    type AttachStream = super::attach::FrameStream;

    async fn attach(
        &self,
        request: Request<tonic::Streaming<v1::TaskFrame>>,
    ) -> Result<Response<Self::AttachStream>, Status> {
        let peer = self.link.identity.peer(&request)?;
        super::attach::caller(&self.link, peer, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn submit(
        &self,
        request: Request<v1::SubmitRequest>,
    ) -> Result<Response<v1::SubmitReply>, Status> {
        let arrived = std::time::Instant::now();
        let peer = self.link.identity.peer(&request)?;
        let (mut submission, mut payload) = convert::submission(request.into_inner());
        self.link
            .hooks
            .queuejob(&peer, &mut submission, &mut payload)
            .await
            .map_err(|refusal| refusal.status())?;
        let answer = self
            .link
            .ask(|reply| Event::Submit {
                peer,
                submission: Box::new(submission),
                payload,
                reply,
            })
            .await
            .map(|job_id| v1::SubmitReply { job_id });
        if let Some(metrics) = &self.link.metrics {
            metrics
                .submission_duration
                .observe(arrived.elapsed().as_secs_f64());
        }
        answer.map(Response::new)
    }

    async fn status(
        &self,
        request: Request<v1::StatusRequest>,
    ) -> Result<Response<EncodedStatusReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let request = request.into_inner();
        check_ids(&request.job_ids)?;
        let query = StatusQuery {
            users: user_names(&request.user, &request.users),
            job_ids: request.job_ids,
            queues: request.queues,
            states: request.states,
            include_finished: request.include_finished,
            report_refused: request.report_refused,
            expand_arrays: request.expand_arrays,
            arrays_only: request.arrays_only,
            brief: request.brief,
            with_script: request.with_script,
        };
        // The listing every caller asking this now shares, built and
        // encoded once (`crate::listings`) ...
        let shared = self.link.listings.shared(&query, wall_second, || {
            let (peer, query) = (peer.clone(), Box::new(query.clone()));
            self.link
                .ask(|reply| Event::SharedStatus { peer, query, reply })
        });
        if let Some(encoded) = shared.await? {
            return Ok(Response::new(encoded));
        }
        // ... or, when it depends on who asks, this caller's own.
        let query = Box::new(query);
        let reply = self
            .link
            .ask(|reply| Event::Status { peer, query, reply })
            .await?;
        Ok(Response::new(EncodedStatusReply::encode_reply(&reply)))
    }

    async fn delete(
        &self,
        request: Request<v1::JobsRequest>,
    ) -> Result<Response<v1::JobsReply>, Status> {
        if request.get_ref().running_only {
            return self.act(request, JobAction::DeleteRunning).await;
        }
        let peer = self.link.identity.peer(&request)?;
        let v1::JobsRequest {
            job_ids: ids,
            force,
            purge_history,
            ..
        } = request.into_inner();
        check_ids(&ids)?;
        if ids.is_empty() {
            return Err(Status::invalid_argument("name the jobs to delete"));
        }
        self.link
            .ask(|reply| Event::Delete {
                peer,
                ids,
                force,
                purge_history,
                reply,
            })
            .await
            .map(|outcomes| Response::new(reply::jobs(outcomes)))
    }

    async fn hold(
        &self,
        request: Request<v1::JobsRequest>,
    ) -> Result<Response<v1::JobsReply>, Status> {
        let holds = hold_list(&request.get_ref().hold_types)?.unwrap_or(qmesh_core::Holds {
            user: true,
            ..qmesh_core::Holds::default()
        });
        self.act(request, JobAction::Hold(holds)).await
    }

    async fn release(
        &self,
        request: Request<v1::JobsRequest>,
    ) -> Result<Response<v1::JobsReply>, Status> {
        let holds = hold_list(&request.get_ref().hold_types)?;
        self.act(request, JobAction::Release(holds)).await
    }

    async fn signal(
        &self,
        request: Request<v1::SignalRequest>,
    ) -> Result<Response<v1::JobsReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let v1::SignalRequest {
            job_ids: ids,
            signal,
        } = request.into_inner();
        check_ids(&ids)?;
        if ids.is_empty() {
            return Err(Status::invalid_argument("name the jobs to signal"));
        }
        self.link
            .ask(|reply| Event::Signal {
                peer,
                signal,
                ids,
                reply,
            })
            .await
            .map(|outcomes| Response::new(reply::jobs(outcomes)))
    }

    async fn message(
        &self,
        request: Request<v1::MessageRequest>,
    ) -> Result<Response<v1::JobsReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let v1::MessageRequest {
            job_ids: ids,
            message,
            to_output,
            to_error,
        } = request.into_inner();
        check_ids(&ids)?;
        if ids.is_empty() {
            return Err(Status::invalid_argument(
                "name the jobs to send the message to",
            ));
        }
        if message.contains('\n') || message.len() > 4096 {
            return Err(Status::invalid_argument(
                "a message is one line of at most 4096 bytes",
            ));
        }
        self.link
            .ask(|reply| Event::Message {
                peer,
                text: message,
                to_output,
                to_error,
                ids,
                reply,
            })
            .await
            .map(|outcomes| Response::new(reply::jobs(outcomes)))
    }

    async fn wait(
        &self,
        request: Request<v1::WaitRequest>,
    ) -> Result<Response<v1::JobInfo>, Status> {
        let job_id = request.into_inner().job_id;
        self.link
            .ask(|reply| Event::Wait { job_id, reply })
            .await
            .map(|snapshot| Response::new(reply::job(&snapshot)))
    }

    async fn queue_status(
        &self,
        request: Request<v1::QueueStatusRequest>,
    ) -> Result<Response<v1::QueueStatusReply>, Status> {
        let names = request.into_inner().names;
        self.link
            .ask(|reply| Event::Queues { names, reply })
            .await
            .map(|list| Response::new(reply::queues(list)))
    }

    async fn plan(
        &self,
        request: Request<v1::PlanRequest>,
    ) -> Result<Response<v1::PlanReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        self.link
            .ask(|reply| Event::Plan { peer, reply })
            .await
            .map(Response::new)
    }

    async fn when(
        &self,
        request: Request<v1::WhenRequest>,
    ) -> Result<Response<v1::WhenReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let job_id = request.into_inner().job_id;
        if job_id.is_empty() {
            return Err(Status::invalid_argument(
                "name the job whose start to foresee",
            ));
        }
        self.link
            .ask(|reply| Event::When {
                peer,
                job_id,
                reply,
            })
            .await
            .map(|when| Response::new(reply::when(when)))
    }

    async fn usage(
        &self,
        request: Request<v1::UsageRequest>,
    ) -> Result<Response<v1::UsageReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let all = request.into_inner().all;
        self.link
            .ask(|reply| Event::Usage { peer, all, reply })
            .await
            .map(|report| Response::new(reply::usage(report)))
    }

    async fn r#move(
        &self,
        request: Request<v1::MoveRequest>,
    ) -> Result<Response<v1::JobsReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let v1::MoveRequest {
            destination,
            job_ids: ids,
        } = request.into_inner();
        check_ids(&ids)?;
        if destination.is_empty() {
            return Err(Status::invalid_argument(
                "name the queue to move the jobs to: qmove QUEUE ID...",
            ));
        }
        if ids.is_empty() {
            return Err(Status::invalid_argument(format!(
                "name the jobs to move to queue \"{destination}\": qmove {destination} ID..."
            )));
        }
        self.link
            .ask(|reply| Event::Move {
                peer,
                destination,
                ids,
                reply,
            })
            .await
            .map(|outcomes| Response::new(reply::jobs(outcomes)))
    }

    async fn nodes(
        &self,
        request: Request<v1::NodesRequest>,
    ) -> Result<Response<v1::NodesReply>, Status> {
        let v1::NodesRequest { names, host } = request.into_inner();
        self.link
            .ask(|reply| Event::Nodes { names, host, reply })
            .await
            .map(Response::new)
    }

    async fn server_status(
        &self,
        _request: Request<v1::ServerStatusRequest>,
    ) -> Result<Response<v1::ServerStatusReply>, Status> {
        self.link
            .ask(|reply| Event::ServerStatus { reply })
            .await
            .map(|report| Response::new(reply::server_status(report)))
    }

    async fn rerun(
        &self,
        request: Request<v1::RerunRequest>,
    ) -> Result<Response<v1::JobsReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let v1::RerunRequest {
            job_ids: ids,
            force,
            hold,
        } = request.into_inner();
        check_ids(&ids)?;
        if ids.is_empty() {
            return Err(Status::invalid_argument(
                "name the jobs to rerun: qrerun ID...",
            ));
        }
        self.link
            .ask(|reply| Event::Rerun {
                peer,
                ids,
                how: qmesh_core::qrerun::Rerun { force, hold },
                reply,
            })
            .await
            .map(|outcomes| Response::new(reply::jobs(outcomes)))
    }

    async fn order(
        &self,
        request: Request<v1::OrderRequest>,
    ) -> Result<Response<v1::JobsReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let v1::OrderRequest { first, second } = request.into_inner();
        if first.is_empty() || second.is_empty() {
            return Err(Status::invalid_argument(
                "name the two jobs to exchange: qorder ID1 ID2",
            ));
        }
        self.link
            .ask(|reply| Event::Order {
                peer,
                first,
                second,
                reply,
            })
            .await
            .map(|outcomes| Response::new(reply::jobs(outcomes)))
    }

    async fn run(
        &self,
        request: Request<v1::RunRequest>,
    ) -> Result<Response<v1::JobsReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let v1::RunRequest {
            job_ids: ids,
            nodes,
            ..
        } = request.into_inner();
        check_ids(&ids)?;
        if ids.is_empty() {
            return Err(Status::invalid_argument(
                "name the jobs to run: qrun [-H NODES] ID...",
            ));
        }
        let nodes = (!nodes.trim().is_empty()).then_some(nodes);
        self.link
            .ask(|reply| Event::Run {
                peer,
                ids,
                nodes,
                reply,
            })
            .await
            .map(|outcomes| Response::new(reply::jobs(outcomes)))
    }

    async fn trace(
        &self,
        request: Request<v1::TraceRequest>,
    ) -> Result<Response<v1::TraceReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let v1::TraceRequest { job_id, days } = request.into_inner();
        if job_id.is_empty() {
            return Err(Status::invalid_argument(
                "name the job to trace: tracejob ID",
            ));
        }
        self.link
            .ask(|reply| Event::Trace {
                peer,
                job_id,
                days,
                reply,
            })
            .await
            .map(|trace| Response::new(reply::trace(trace)))
    }

    async fn accounting(
        &self,
        request: Request<v1::AccountingRequest>,
    ) -> Result<Response<v1::AccountingReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let request = request.into_inner();
        self.link
            .ask(|reply| Event::Accounting {
                peer,
                request,
                reply,
            })
            .await
            .map(Response::new)
    }

    async fn submit_reservation(
        &self,
        request: Request<v1::ReservationRequest>,
    ) -> Result<Response<v1::ReservationInfo>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let request = Box::new(convert::resv_request(request.get_ref())?);
        self.link
            .ask(|reply| Event::Reserve {
                peer,
                id: None,
                request,
                reply,
            })
            .await
            .map(|shown| Response::new(convert::resv_info(&shown)))
    }

    async fn alter_reservation(
        &self,
        request: Request<v1::ReservationRequest>,
    ) -> Result<Response<v1::ReservationInfo>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let id = request.get_ref().id.clone();
        if id.is_empty() || id.len() > 256 {
            return Err(Status::invalid_argument(
                "name the reservation to alter: pbs_ralter OPTIONS R12",
            ));
        }
        let request = Box::new(convert::resv_request(request.get_ref())?);
        self.link
            .ask(|reply| Event::Reserve {
                peer,
                id: Some(id),
                request,
                reply,
            })
            .await
            .map(|shown| Response::new(convert::resv_info(&shown)))
    }

    async fn reservation_status(
        &self,
        request: Request<v1::ReservationStatusRequest>,
    ) -> Result<Response<v1::ReservationStatusReply>, Status> {
        let v1::ReservationStatusRequest { ids } = request.into_inner();
        check_ids(&ids)?;
        self.link
            .ask(|reply| Event::Reservations { ids, reply })
            .await
            .map(|all| {
                Response::new(v1::ReservationStatusReply {
                    reservations: all.iter().map(convert::resv_info).collect(),
                })
            })
    }

    async fn delete_reservation(
        &self,
        request: Request<v1::ReservationStatusRequest>,
    ) -> Result<Response<v1::JobsReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let v1::ReservationStatusRequest { ids } = request.into_inner();
        check_ids(&ids)?;
        if ids.is_empty() {
            return Err(Status::invalid_argument(
                "name the reservations to delete: pbs_rdel R12",
            ));
        }
        self.link
            .ask(|reply| Event::Unreserve { peer, ids, reply })
            .await
            .map(|outcomes| Response::new(reply::jobs(outcomes)))
    }

    async fn alter(
        &self,
        request: Request<v1::AlterRequest>,
    ) -> Result<Response<v1::JobsReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let request = request.into_inner();
        check_ids(&request.job_ids)?;
        if request.job_ids.is_empty() {
            return Err(Status::invalid_argument(
                "name the jobs to alter: qalter OPTIONS ID...",
            ));
        }
        let alteration = convert::alteration(&request);
        if !self
            .link
            .hooks
            .any_at(qmesh_core::hook::HookEvent::ModifyJob)
        {
            let alteration = Box::new(alteration);
            return self
                .link
                .ask(|reply| Event::Alter {
                    peer,
                    ids: request.job_ids,
                    alteration,
                    reply,
                })
                .await
                .map(|outcomes| Response::new(reply::jobs(outcomes)));
        }
        // modifyjob hooks judge each job's alteration alone, as PBS's do.
        let mut outcomes = Vec::new();
        for id in request.job_ids {
            let mut alteration = alteration.clone();
            if let Err(refusal) = self.link.hooks.modifyjob(&peer, &id, &mut alteration).await {
                let status = refusal.status();
                outcomes.push(crate::answer::JobOutcome {
                    job_id: id,
                    refused: Some(status.message().to_string()),
                });
                continue;
            }
            let alteration = Box::new(alteration);
            let peer = peer.clone();
            outcomes.extend(
                self.link
                    .ask(|reply| Event::Alter {
                        peer,
                        ids: vec![id],
                        alteration,
                        reply,
                    })
                    .await?,
            );
        }
        Ok(Response::new(reply::jobs(outcomes)))
    }
}

/// The wall clock's second: a listing shows times to the second.
fn wall_second() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
