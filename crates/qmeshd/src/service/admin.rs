//! The Admin service: qmgr.

use qmesh_proto::v1;
use qmesh_proto::v1::admin_server::Admin;
use tonic::{Request, Response, Status};

use super::Link;
use crate::event::Event;

pub struct AdminService {
    pub link: Link,
}

#[tonic::async_trait]
impl Admin for AdminService {
    async fn qmgr(
        &self,
        request: Request<v1::QmgrRequest>,
    ) -> Result<Response<v1::QmgrReply>, Status> {
        let peer = self.link.identity.peer(&request)?;
        let v1::QmgrRequest {
            script,
            source,
            check_only,
        } = request.into_inner();
        self.link
            .ask(|reply| Event::Qmgr {
                peer,
                script,
                source,
                check_only,
                reply,
            })
            .await
            .map(|(output, applied)| Response::new(v1::QmgrReply { output, applied }))
    }
}
