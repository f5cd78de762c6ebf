//! The services as the daemon serves them: the same methods and messages
//! as [`crate::v1`], except that a `StatusReply` goes out as bytes encoded
//! beforehand ([`EncodedStatusReply`]). When a thousand `qstat` callers ask
//! for the same listing in the same instant, the daemon encodes it once
//! and every caller's connection copies the bytes; with the generated
//! `StatusReply` each connection would encode it again (about as costly as
//! building it). Clients are unchanged: on the wire it is a `StatusReply`.
//! This module's client takes a listing in without decoding its jobs, for
//! benchmarks that must measure the daemon rather than their own decoding.

use prost::bytes::{Buf, BufMut, Bytes, BytesMut};
use prost::encoding::{self, DecodeContext, WireType};
use prost::{DecodeError, Message};

#[allow(clippy::all, missing_docs)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/served/qmesh.v1.rs"));
}

pub use generated::*;

/// `StatusReply.jobs`.
const JOBS_FIELD: u32 = 1;

/// A `StatusReply` already encoded: sending it copies its bytes. Reading
/// one (a client may, through the generic decoder) keeps the fields as
/// they came, so [`EncodedStatusReply::decode_reply`] gives the message.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EncodedStatusReply {
    bytes: Bytes,
}

impl EncodedStatusReply {
    /// Encodes `reply` once; clones share the bytes.
    pub fn encode_reply(reply: &crate::v1::StatusReply) -> EncodedStatusReply {
        EncodedStatusReply {
            bytes: Bytes::from(reply.encode_to_vec()),
        }
    }

    /// The message these bytes encode.
    pub fn decode_reply(&self) -> Result<crate::v1::StatusReply, DecodeError> {
        crate::v1::StatusReply::decode(self.bytes.clone())
    }

    /// How many jobs it lists, read from the encoding without decoding
    /// them.
    pub fn job_count(&self) -> Result<usize, DecodeError> {
        let mut buf = self.bytes.clone();
        let mut jobs = 0;
        while buf.has_remaining() {
            let (tag, wire_type) = encoding::decode_key(&mut buf)?;
            jobs += usize::from(tag == JOBS_FIELD);
            encoding::skip_field(wire_type, tag, &mut buf, DecodeContext::default())?;
        }
        Ok(jobs)
    }

    /// The encoding, shared (no copy).
    pub fn to_bytes(&self) -> Bytes {
        self.bytes.clone()
    }
}

impl Message for EncodedStatusReply {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.bytes);
    }

    /// Takes the encoding whole, in one copy: checking it field by field
    /// is [`EncodedStatusReply::job_count`]'s or
    /// [`EncodedStatusReply::decode_reply`]'s work.
    fn decode(mut buf: impl Buf) -> Result<Self, DecodeError> {
        Ok(EncodedStatusReply {
            bytes: buf.copy_to_bytes(buf.remaining()),
        })
    }

    /// Appends the encoding: protobuf merges two messages by
    /// concatenating them.
    fn merge(&mut self, mut buf: impl Buf) -> Result<(), DecodeError> {
        let mut out = BytesMut::from(std::mem::take(&mut self.bytes));
        out.put(&mut buf);
        self.bytes = out.freeze();
        Ok(())
    }

    /// Keeps the field as it was encoded: its key, then its value. (A
    /// group, which a `StatusReply` never has, is skipped, as an unknown
    /// field would be.)
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        let mut out = BytesMut::from(std::mem::take(&mut self.bytes));
        match wire_type {
            WireType::Varint => {
                let value = encoding::decode_varint(buf)?;
                encoding::encode_key(tag, wire_type, &mut out);
                encoding::encode_varint(value, &mut out);
            }
            WireType::SixtyFourBit => {
                let mut value = 0u64;
                encoding::fixed64::merge(wire_type, &mut value, buf, ctx)?;
                encoding::fixed64::encode(tag, &value, &mut out);
            }
            WireType::ThirtyTwoBit => {
                let mut value = 0u32;
                encoding::fixed32::merge(wire_type, &mut value, buf, ctx)?;
                encoding::fixed32::encode(tag, &value, &mut out);
            }
            WireType::LengthDelimited => {
                let mut value = Bytes::new();
                encoding::bytes::merge(wire_type, &mut value, buf, ctx)?;
                encoding::bytes::encode(tag, &value, &mut out);
            }
            WireType::StartGroup | WireType::EndGroup => {
                encoding::skip_field(wire_type, tag, buf, ctx)?;
            }
        }
        self.bytes = out.freeze();
        Ok(())
    }

    fn encoded_len(&self) -> usize {
        self.bytes.len()
    }

    fn clear(&mut self) {
        self.bytes = Bytes::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1::{JobInfo, StatusRefusal, StatusReply};

    fn reply() -> StatusReply {
        StatusReply {
            jobs: vec![
                JobInfo {
                    id: "1.srv".into(),
                    name: "a".into(),
                    ..Default::default()
                },
                JobInfo {
                    id: "2.srv".into(),
                    exit_status: Some(-3),
                    ..Default::default()
                },
            ],
            server: "srv".into(),
            server_time: 1_700_000_000,
            refused: vec![StatusRefusal {
                name: "9".into(),
                ..Default::default()
            }],
        }
    }

    #[test]
    fn sent_bytes_are_the_replys_own() {
        let reply = reply();
        let encoded = EncodedStatusReply::encode_reply(&reply);
        assert_eq!(encoded.encode_to_vec(), reply.encode_to_vec());
        assert_eq!(encoded.encoded_len(), reply.encoded_len());
        assert_eq!(encoded.decode_reply().unwrap(), reply);
        assert_eq!(encoded.job_count().unwrap(), 2);
    }

    #[test]
    fn read_back_it_is_the_same_reply() {
        let reply = reply();
        let read = EncodedStatusReply::decode(reply.encode_to_vec().as_slice()).unwrap();
        assert_eq!(read.decode_reply().unwrap(), reply);
        let cut = EncodedStatusReply::decode(&reply.encode_to_vec()[..10]).unwrap();
        assert!(cut.job_count().is_err());
        assert!(cut.decode_reply().is_err());
    }

    #[test]
    fn read_as_a_field_or_merged_it_is_the_same_reply() {
        // As a field of another message: its length, then its fields.
        let reply = reply();
        let mut outer = Vec::new();
        encoding::message::encode(1, &reply, &mut outer);
        let mut buf = outer.as_slice();
        let (tag, wire_type) = encoding::decode_key(&mut buf).unwrap();
        let mut read = EncodedStatusReply::default();
        encoding::message::merge(wire_type, &mut read, &mut buf, DecodeContext::default()).unwrap();
        assert_eq!((tag, read.decode_reply().unwrap()), (1, reply.clone()));
        // Merged with another: the repeated fields of both, in order.
        let mut merged = EncodedStatusReply::encode_reply(&reply);
        merged.merge(reply.encode_to_vec().as_slice()).unwrap();
        assert_eq!(merged.job_count().unwrap(), 4);
    }
}
