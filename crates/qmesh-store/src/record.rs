//! How records are written: JSON inside a small versioned envelope,
//! `{"v":1,"data":...}`. JSON keeps the store readable with any sled tool and
//! lets fields be added with serde defaults; the version says how to read a
//! record when a change needs more than a default. Records of every earlier
//! version must still load (fixtures in tests/fixtures).

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::StoreError;

/// The version this qmesh writes.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Out<'a, T> {
    v: u32,
    data: &'a T,
}

#[derive(Deserialize)]
struct In<T> {
    v: u32,
    data: T,
}

pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(&Out {
        v: SCHEMA_VERSION,
        data: value,
    })
    .map_err(|e| StoreError::Io {
        what: "encode a record".into(),
        message: e.to_string(),
    })
}

pub fn decode<T: DeserializeOwned>(key: &str, bytes: &[u8]) -> Result<T, StoreError> {
    let record: In<T> = serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        key: key.to_string(),
        message: e.to_string(),
    })?;
    if record.v > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            found: record.v,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(record.data)
}
