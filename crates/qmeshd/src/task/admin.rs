//! The daemon's half of qmgr: parse the whole script, run it against a copy
//! of the configuration, and keep the copy only if every command succeeded.

use qmesh_core::qmgr;
use qmesh_proto::v1;
use tonic::Status;
use tracing::info;

use super::SchedulerTask;
use crate::event::Reply;
use crate::identity::Peer;
use crate::status;

impl SchedulerTask {
    pub(super) fn qmgr(
        &mut self,
        peer: &Peer,
        request: v1::QmgrRequest,
        reply: Reply<v1::QmgrReply>,
    ) {
        let caller = self.caller(peer);
        let place = |e: qmgr::QmgrError| {
            let text = match request.source.as_str() {
                "" | "-c" | "stdin" => e.to_string(),
                file => format!("{file}, {e}"),
            };
            Status::invalid_argument(format!("{text}; nothing was changed"))
        };
        let commands = match qmgr::parse_script(&request.script) {
            Ok(c) => c,
            Err(e) => {
                let _ = reply.send(Err(place(e)));
                return;
            }
        };
        let mut config = self.state.config().clone();
        let outcome = match qmgr::run(&commands, &mut config, &self.state, &caller) {
            Ok(o) => o,
            Err(e) => {
                let _ = reply.send(Err(place(e)));
                return;
            }
        };
        let answer = v1::QmgrReply {
            output: outcome.output,
            applied: if request.check_only {
                0
            } else {
                outcome.applied
            },
        };
        if request.check_only || outcome.applied == 0 || config == *self.state.config() {
            let _ = reply.send(Ok(answer));
            return;
        }
        if let Err(e) = self.store.put_config(&config) {
            let _ = reply.send(Err(status::from_store(&e, "the configuration")));
            return;
        }
        info!(user = %caller.user, commands = outcome.applied, "configuration changed by qmgr");
        self.state.set_config(config);
        self.dirty = true;
        self.store.on_durable(Box::new(move |result| {
            let _ = reply.send(result.map(|()| answer).map_err(|e| {
                Status::unavailable(format!(
                    "the configuration changed but the store could not confirm it is on disk: {e}"
                ))
            }));
        }));
    }
}
