//! JSON for the messages the agent keeps in its spool (build.rs derives
//! serde for them): a field at its default is left out, and an
//! environment variable is a `["NAME", "VALUE"]` pair, not an object. A
//! job's environment holds every variable of `qsub -V`, and the shepherd
//! reads the launch back at every start: pairs and no empties are smaller
//! and quicker to read (the agent's first `launch.json` wrote them so
//! too).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::v1::EnvVar;

/// Whether a field is at its default, and so not written.
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl Serialize for EnvVar {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (&self.name, &self.value).serialize(s)
    }
}

impl<'de> Deserialize<'de> for EnvVar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<EnvVar, D::Error> {
        let (name, value) = <(String, String)>::deserialize(d)?;
        Ok(EnvVar { name, value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_is_a_pair() {
        let var = EnvVar {
            name: "A".into(),
            value: "1".into(),
        };
        let json = serde_json::to_string(&var).unwrap();
        assert_eq!(json, r#"["A","1"]"#);
        assert_eq!(serde_json::from_str::<EnvVar>(&json).unwrap(), var);
    }

    #[test]
    fn defaults_are_left_out_and_read_back() {
        let launch = crate::v1::LaunchJob {
            job: 3,
            umask: Some(0),
            script: b"echo hi\n".to_vec(),
            ..Default::default()
        };
        let json = serde_json::to_string(&launch).unwrap();
        assert_eq!(json, r#"{"job":3,"umask":0}"#);
        let back: crate::v1::LaunchJob = serde_json::from_str(&json).unwrap();
        assert_eq!(
            back,
            crate::v1::LaunchJob {
                script: Vec::new(),
                ..launch
            }
        );
    }
}
