//! qstat's Status call answered beneath tonic's codec, so that a listing
//! shared by many callers (`crate::listings`) goes to each as the very
//! same bytes. Through the codec every answer is copied into its own
//! buffer and held there until its caller has read it: with a thousand
//! callers answered by one build, a thousand copies of a listing of
//! 25,000 jobs (9 MB) were a gigabyte. Here each answer's body holds a
//! reference to the one encoding.
//!
//! Every other call goes to the generated server untouched. The request
//! is read and the caller identified as tonic would (the same extensions,
//! after the same interceptors), and `JobsService::status` answers it.

use std::convert::Infallible;
use std::task::{Context, Poll};

use http_body::Frame;
use http_body_util::{BodyExt, Limited, StreamBody};
use prost::Message;
use qmesh_proto::served::jobs_server::Jobs;
use qmesh_proto::v1;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::{BoxFuture, Bytes, Service, http};
use tonic::metadata::MetadataMap;
use tonic::server::NamedService;

use super::JobsService;

const STATUS_PATH: &str = "/qmesh.v1.Jobs/Status";

/// A Status request is a few names and flags; past this it is not one.
const MAX_STATUS_REQUEST: usize = 1 << 20;

/// The Jobs server, with Status answered from the shared encoding.
#[derive(Clone)]
pub struct SharedStatusBody<S> {
    inner: S,
    jobs: JobsService,
}

impl<S> SharedStatusBody<S> {
    pub fn new(inner: S, jobs: JobsService) -> SharedStatusBody<S> {
        SharedStatusBody { inner, jobs }
    }
}

impl<S: NamedService> NamedService for SharedStatusBody<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<http::Request<Body>> for SharedStatusBody<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        if request.uri().path() != STATUS_PATH {
            return Box::pin(self.inner.call(request));
        }
        let jobs = self.jobs.clone();
        Box::pin(async move {
            Ok(answer(jobs, request)
                .await
                .unwrap_or_else(|status| status.into_http()))
        })
    }
}

async fn answer(
    jobs: JobsService,
    request: http::Request<Body>,
) -> Result<http::Response<Body>, Status> {
    let (parts, body) = request.into_parts();
    let body = Limited::new(body, MAX_STATUS_REQUEST)
        .collect()
        .await
        .map_err(|e| Status::invalid_argument(format!("a Status request could not be read: {e}")))?
        .to_bytes();
    let message = v1::StatusRequest::decode(grpc_message(&body)?)
        .map_err(|e| Status::invalid_argument(format!("a Status request does not decode: {e}")))?;
    let request = tonic::Request::from_parts(
        MetadataMap::from_headers(parts.headers),
        parts.extensions,
        message,
    );
    let listing = jobs.status(request).await?.into_inner().to_bytes();
    let length = u32::try_from(listing.len())
        .map_err(|_| Status::resource_exhausted("the listing is over 4 GB; list fewer jobs"))?;
    let mut header = [0u8; 5];
    header[1..].copy_from_slice(&length.to_be_bytes());
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    let frames: [Result<Frame<Bytes>, Status>; 3] = [
        Ok(Frame::data(Bytes::copy_from_slice(&header))),
        Ok(Frame::data(listing)),
        Ok(Frame::trailers(trailers)),
    ];
    let body = StreamBody::new(tokio_stream::iter(frames));
    http::Response::builder()
        .header("content-type", "application/grpc")
        .body(Body::new(body))
        .map_err(|e| Status::internal(format!("the listing's answer could not be made: {e}")))
}

/// The one message of a gRPC request body: a flag byte (compressed or
/// not), its length in 4 bytes, then the message.
fn grpc_message(body: &Bytes) -> Result<Bytes, Status> {
    let malformed = || Status::invalid_argument("a Status request is not one gRPC message");
    let (&flag, rest) = body.split_first().ok_or_else(malformed)?;
    if flag != 0 {
        return Err(Status::unimplemented(
            "a compressed Status request; send it uncompressed",
        ));
    }
    let length: [u8; 4] = rest
        .get(..4)
        .and_then(|l| l.try_into().ok())
        .ok_or_else(malformed)?;
    let length = u32::from_be_bytes(length) as usize;
    if body.len() != 5 + length {
        return Err(malformed());
    }
    Ok(body.slice(5..))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_body_is_one_uncompressed_message() {
        let message = v1::StatusRequest {
            brief: true,
            ..Default::default()
        }
        .encode_to_vec();
        let mut body = vec![0, 0, 0, 0, message.len() as u8];
        body.extend(&message);
        assert_eq!(grpc_message(&Bytes::from(body.clone())).unwrap(), message);
        body[0] = 1;
        assert_eq!(
            grpc_message(&Bytes::from(body.clone())).unwrap_err().code(),
            tonic::Code::Unimplemented
        );
        body[0] = 0;
        body.push(0);
        assert!(grpc_message(&Bytes::from(body)).is_err());
        assert!(grpc_message(&Bytes::from_static(&[0, 0])).is_err());
    }
}
