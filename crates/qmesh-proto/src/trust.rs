//! How hosts prove they hold the cluster key without sending it.
//!
//! The daemon gives a fresh nonce (`Agent.Challenge`); the other side
//! answers with an HMAC-SHA256, keyed by the cluster key, over what it
//! states: what the proof is for, the nonce, the host it claims, the TLS
//! connection it is made on, and what else the statement names (a
//! certificate request, a relayed caller). The key itself never travels,
//! and a proof is good for one statement, on one connection, once.
//!
//! Over TLS both ends put the connection's exporter (RFC 5705, label
//! [`EXPORTER_LABEL`]) in the proof: a proof relayed by a man in the
//! middle, who holds a different TLS session with each end, does not
//! pass. Over plain TCP and the local socket there is none.
//!
//! The bytes MACed are part of the wire format: an agent and a daemon of
//! different versions must make the same ones (a test pins them).

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// The label of the TLS exporter every proof made over TLS includes.
pub const EXPORTER_LABEL: &[u8] = b"EXPORTER-qmesh-cluster-key-proof";

/// The exporter's length, in bytes.
pub const BINDING_LEN: usize = 32;

/// The name the daemon's certificate from the cluster CA bears, which
/// agents that enrolled check instead of the address they dial: the
/// cluster CA gives a server certificate to the daemon only.
pub const DAEMON_NAME: &str = "qmeshd";

/// Relayed requests' metadata: the daemon's nonce and the relay's proof,
/// in hex (`x-qmesh-*`: stripped from what a caller sends, see `relay`).
pub const NONCE_HEADER: &str = "x-qmesh-nonce";
pub const PROOF_HEADER: &str = "x-qmesh-proof";

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error(
        "the cluster key is empty; put a long random secret in the key file \
         (e.g. head -c 32 /dev/urandom | base64)"
    )]
    EmptyKey,
    #[error("the system's random number generator failed; check /dev/urandom")]
    Random,
}

/// What a proof states. Each kind has its own label, so a proof made for
/// one can never pass for another.
#[derive(Clone, Copy, Debug)]
pub enum Statement<'a> {
    /// An agent's hello: it is the agent of `host`.
    Hello {
        nonce: &'a [u8],
        host: &'a str,
        binding: &'a [u8],
    },
    /// An agent asks the cluster CA to certify `csr` (DER) for `host`;
    /// `agent_nonce` is what the daemon's answer must cover.
    Enrol {
        nonce: &'a [u8],
        host: &'a str,
        binding: &'a [u8],
        csr: &'a [u8],
        agent_nonce: &'a [u8],
    },
    /// The daemon's answer to an enrolment: this certificate and this CA
    /// come from a holder of the key, now.
    Enrolled {
        nonce: &'a [u8],
        agent_nonce: &'a [u8],
        host: &'a str,
        binding: &'a [u8],
        certificate: &'a str,
        ca: &'a str,
    },
    /// A command relayed by the agent of `host` for this caller.
    Relay {
        nonce: &'a [u8],
        host: &'a str,
        binding: &'a [u8],
        uid: u32,
        gid: u32,
        user: &'a str,
        group: &'a str,
    },
}

impl Statement<'_> {
    /// The bytes MACed: the label, then each field with its length first
    /// (so no two statements share bytes).
    fn message(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        let mut put = |field: &[u8]| {
            out.extend_from_slice(&(field.len() as u32).to_be_bytes());
            out.extend_from_slice(field);
        };
        match *self {
            Statement::Hello {
                nonce,
                host,
                binding,
            } => {
                put(b"qmesh/1 hello");
                put(nonce);
                put(host.as_bytes());
                put(binding);
            }
            Statement::Enrol {
                nonce,
                host,
                binding,
                csr,
                agent_nonce,
            } => {
                put(b"qmesh/1 enrol");
                put(nonce);
                put(host.as_bytes());
                put(binding);
                put(csr);
                put(agent_nonce);
            }
            Statement::Enrolled {
                nonce,
                agent_nonce,
                host,
                binding,
                certificate,
                ca,
            } => {
                put(b"qmesh/1 enrolled");
                put(nonce);
                put(agent_nonce);
                put(host.as_bytes());
                put(binding);
                put(certificate.as_bytes());
                put(ca.as_bytes());
            }
            Statement::Relay {
                nonce,
                host,
                binding,
                uid,
                gid,
                user,
                group,
            } => {
                put(b"qmesh/1 relay");
                put(nonce);
                put(host.as_bytes());
                put(binding);
                put(&uid.to_be_bytes());
                put(&gid.to_be_bytes());
                put(user.as_bytes());
                put(group.as_bytes());
            }
        }
        out
    }
}

/// The cluster key, ready to prove and check statements. It does not
/// print itself.
#[derive(Clone)]
pub struct ClusterKey(hmac::Key);

impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKey(..)")
    }
}

impl ClusterKey {
    /// The key as its file holds it, surrounding whitespace not part of it.
    pub fn from_file_text(text: &str) -> Result<ClusterKey, TrustError> {
        let secret = text.trim();
        if secret.is_empty() {
            return Err(TrustError::EmptyKey);
        }
        Ok(ClusterKey(hmac::Key::new(
            hmac::HMAC_SHA256,
            secret.as_bytes(),
        )))
    }

    /// The proof of `statement`.
    pub fn prove(&self, statement: &Statement<'_>) -> Vec<u8> {
        hmac::sign(&self.0, &statement.message()).as_ref().to_vec()
    }

    /// Whether `proof` proves `statement` (in constant time).
    pub fn verify(&self, statement: &Statement<'_>, proof: &[u8]) -> bool {
        hmac::verify(&self.0, &statement.message(), proof).is_ok()
    }
}

/// `N` bytes from the system's random number generator.
pub fn random<const N: usize>() -> Result<[u8; N], TrustError> {
    let mut out = [0u8; N];
    SystemRandom::new()
        .fill(&mut out)
        .map_err(|_| TrustError::Random)?;
    Ok(out)
}

/// A new cluster key's file text: 32 random bytes, in hex.
pub fn new_key_text() -> Result<String, TrustError> {
    Ok(format!("{}\n", to_hex(&random::<32>()?)))
}

/// Lower-case hex, for metadata.
/// Whether `host` can be named in a certificate (and a file name): what
/// host names are made of (letters, digits, `-`, `.`, `_`), up to 253
/// characters. The agent checks its `--host` with it, the CA what it signs.
pub fn is_certificate_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && !host.starts_with(['.', '-'])
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// The bytes of a hex string; `None` if it is not one.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    text.as_bytes()
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> ClusterKey {
        ClusterKey::from_file_text(text).unwrap()
    }

    fn hello<'a>(nonce: &'a [u8], host: &'a str, binding: &'a [u8]) -> Statement<'a> {
        Statement::Hello {
            nonce,
            host,
            binding,
        }
    }

    #[test]
    fn a_proof_passes_with_the_key_and_fails_with_another() {
        let right = key("s3cret-key\n");
        let proof = right.prove(&hello(b"n1", "h1", b""));
        assert_eq!(proof.len(), 32, "HMAC-SHA256");
        assert!(right.verify(&hello(b"n1", "h1", b""), &proof));
        // The file's newline is not part of the key.
        assert!(key("  s3cret-key  ").verify(&hello(b"n1", "h1", b""), &proof));
        assert!(!key("s3cret-kez").verify(&hello(b"n1", "h1", b""), &proof));
        assert!(!right.verify(&hello(b"n1", "h1", b""), &proof[..31]));
    }

    #[test]
    fn a_proof_is_good_for_its_nonce_host_and_connection_only() {
        let k = key("k");
        let proof = k.prove(&hello(b"nonce", "h1", b"tls-a"));
        assert!(!k.verify(&hello(b"other", "h1", b"tls-a"), &proof), "nonce");
        assert!(!k.verify(&hello(b"nonce", "h2", b"tls-a"), &proof), "host");
        assert!(!k.verify(&hello(b"nonce", "h1", b"tls-b"), &proof), "TLS");
        assert!(!k.verify(&hello(b"nonce", "h1", b""), &proof), "plain");
    }

    #[test]
    fn fields_cannot_slide_into_each_other_nor_kinds_pass_for_each_other() {
        let k = key("k");
        let proof = k.prove(&hello(b"n", "ab", b"c"));
        assert!(!k.verify(&hello(b"n", "a", b"bc"), &proof));
        let relay = |user: &'static str| Statement::Relay {
            nonce: b"n",
            host: "h1",
            binding: b"",
            uid: 1000,
            gid: 1000,
            user,
            group: "",
        };
        let proof = k.prove(&relay("alice"));
        assert!(k.verify(&relay("alice"), &proof));
        assert!(!k.verify(&relay("bob"), &proof), "another caller");
        // A hello's proof is no relayed command's, whatever the fields.
        let proof = k.prove(&hello(b"n", "h1", b""));
        assert!(!k.verify(&relay(""), &proof));
    }

    #[test]
    fn the_proof_s_bytes_are_pinned_as_part_of_the_wire_format() {
        // HMAC-SHA256 with key "k" over: len-prefixed "qmesh/1 hello",
        // "n", "h1", "" (the hex checked with Python's hmac module too).
        // Changing the encoding breaks agents of other versions: change
        // this only with a new label.
        let proof = key("k").prove(&hello(b"n", "h1", b""));
        let mut message = Vec::new();
        for field in [&b"qmesh/1 hello"[..], b"n", b"h1", b""] {
            message.extend_from_slice(&(field.len() as u32).to_be_bytes());
            message.extend_from_slice(field);
        }
        let expected = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, b"k"), &message);
        assert_eq!(proof, expected.as_ref());
        assert_eq!(
            to_hex(&proof),
            "16dcca87a99066d0d0d0be31daf16e24a22093e7e8928dd6ab97507dfc434efd"
        );
    }

    #[test]
    fn the_key_is_never_printed_and_an_empty_one_is_refused() {
        assert_eq!(format!("{:?}", key("s3cret")), "ClusterKey(..)");
        let err = ClusterKey::from_file_text(" \n").unwrap_err().to_string();
        assert!(err.contains("empty"), "{err}");
    }

    #[test]
    fn hex_goes_both_ways_and_refuses_what_is_not_hex() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(to_hex(&bytes), "0001abff");
        assert_eq!(from_hex("0001ABff").unwrap(), bytes);
        assert!(from_hex("abc").is_none());
        assert!(from_hex("zz").is_none());
        assert_eq!(new_key_text().unwrap().trim().len(), 64);
        assert_ne!(random::<16>().unwrap(), random::<16>().unwrap());
    }
}
