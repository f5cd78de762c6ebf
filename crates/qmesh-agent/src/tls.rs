//! TLS to the daemon's TCP port: the CA that signed the daemon's
//! certificate, and this agent's client certificate when the daemon asks
//! for one. The files are read once, at start, so a wrong path fails then.

use std::path::Path;

use tonic::transport::{Certificate, ClientTlsConfig, Identity};

use crate::error::{AgentError, Result};

/// The TLS settings for `server`: `None` for a plain `http://` or `unix://`
/// server given no TLS file. An `https://` server needs the CA.
pub fn client_config(
    server: &str,
    ca: Option<&Path>,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> Result<Option<ClientTlsConfig>> {
    let https = server.starts_with("https://");
    let any_file = ca.is_some() || cert.is_some();
    if !https {
        if any_file {
            return Err(AgentError::Config(format!(
                "--tls-ca-file and --tls-cert-file are for a daemon reached over TLS; \
                 give --server https://HOST:PORT, not {server}"
            )));
        }
        return Ok(None);
    }
    let ca = ca.ok_or_else(|| {
        AgentError::Config(format!(
            "{server} is TLS: give --tls-ca-file, the CA that signed the daemon's certificate"
        ))
    })?;
    let read = |what: &'static str, path: &Path| {
        std::fs::read(path).map_err(|e| AgentError::io(what, path, e))
    };
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read("read the TLS CA file", ca)?));
    if let (Some(cert), Some(key)) = (cert, key) {
        tls = tls.identity(Identity::from_pem(
            read("read the TLS certificate file", cert)?,
            read("read the TLS key file", key)?,
        ));
    }
    Ok(Some(tls))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_files_go_with_an_https_server_only() {
        let err = client_config("http://h:1", Some(Path::new("/ca.pem")), None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("give --server https://"), "{err}");
        let err = client_config("https://h:1", None, None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("give --tls-ca-file"), "{err}");
        let err = client_config(
            "https://h:1",
            Some(Path::new("/nonexistent/ca.pem")),
            None,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
        assert!(
            client_config("unix:///s", None, None, None)
                .unwrap()
                .is_none()
        );
    }
}
