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
        let request = request.into_inner();
        self.link
            .ask(|reply| Event::Qmgr {
                peer,
                request,
                reply,
            })
            .await
            .map(Response::new)
    }
}
