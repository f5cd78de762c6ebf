//! Trust between hosts, by default: agents prove the cluster key without
//! sending it, enrol with the daemon's own cluster CA, and are held to the
//! host their certificate names. Real daemons and agents; what travels
//! between them is recorded by a TCP proxy in the middle.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use qmesh_proto::v1;

use crate::agents::{agent_at, free_port, remote_config};
use crate::harness::{Daemon, NOBODY, is_root, stderr};
use crate::login::ok_on;

/// A TCP proxy to the daemon's agents' port that keeps every byte that
/// passes, each direction apart.
struct Recorder {
    port: u16,
    /// Agents to the daemon, and back.
    up: Arc<Mutex<Vec<u8>>>,
    down: Arc<Mutex<Vec<u8>>>,
    stop: Arc<AtomicBool>,
}

impl Recorder {
    fn start(daemon_port: u16) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let recorder = Recorder {
            port,
            up: Arc::default(),
            down: Arc::default(),
            stop: Arc::default(),
        };
        let (up, down, stop) = (
            recorder.up.clone(),
            recorder.down.clone(),
            recorder.stop.clone(),
        );
        std::thread::spawn(move || {
            for agent in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(agent) = agent else { continue };
                let Ok(daemon) = TcpStream::connect(("127.0.0.1", daemon_port)) else {
                    continue;
                };
                pump(agent.try_clone().unwrap(), daemon.try_clone().unwrap(), &up);
                pump(daemon, agent, &down);
            }
        });
        recorder
    }

    fn url(&self, scheme: &str) -> String {
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    fn up(&self) -> Vec<u8> {
        self.up.lock().unwrap().clone()
    }

    fn down(&self) -> Vec<u8> {
        self.down.lock().unwrap().clone()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Copies `from` to `to`, keeping what passes, until either closes.
fn pump(mut from: TcpStream, mut to: TcpStream, record: &Arc<Mutex<Vec<u8>>>) {
    let record = record.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    record.lock().unwrap().extend_from_slice(&buf[..n]);
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Kills the agents a test started, at its end whatever happens.
struct Agents(Vec<Child>);

impl Drop for Agents {
    fn drop(&mut self) {
        for child in &mut self.0 {
            crate::agents::stop_agent(child);
        }
    }
}

/// A cluster key with enough letters that finding it by chance in the
/// recorded bytes is out of the question.
fn write_key(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{text}\n")).unwrap();
    path
}

/// Waits until the relay socket at `path` takes connections (the agent
/// has no event to await but its socket appearing).
fn await_socket(d: &Daemon, path: &Path) {
    for _ in 0..600 {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("nothing serves {}:\n{}", path.display(), d.log());
}

/// A compute agent (remote1) and a login node's agent (login1) reach the
/// daemon through the recorder; a user submits from the login node and
/// the job runs on remote1; root on remote1 lists the queue through its
/// agent's relay. Returns what was recorded, each way.
fn a_day_through_the_recorder(plain: bool) -> (Daemon, Vec<u8>, Vec<u8>, String) {
    let port = free_port();
    let keydir = tempfile::tempdir().unwrap();
    let secret = "the-cluster-key-that-must-stay-home-7f3a91c2";
    let key = write_key(keydir.path(), "cluster.key", secret);
    let tls = if plain { "tls = false\n" } else { "" };
    let d = Daemon::start_with(Some(&remote_config(port, &key, tls)));
    // The key must outlive the agents that read it.
    let key = d.root.path().join("cluster.key");
    std::fs::copy(keydir.path().join("cluster.key"), &key).unwrap();
    d.ok("qmgr", &["-c", "set server submit_hosts += login1"]);
    let recorder = Recorder::start(port);
    let server = recorder.url(if plain { "http" } else { "https" });
    let mut agents = Agents(vec![agent_at(&d, &server, "remote1", &key, "remote1", &[])]);
    agents.0.push(agent_at(
        &d,
        &server,
        "login1",
        &key,
        "login1",
        &["--submit-only"],
    ));
    d.await_node_state("r00", "free");
    let login = d.root.path().join("relay-login1.sock");
    await_socket(&d, &login);

    d.script("hello.sh", "#!/bin/sh\necho \"hello from $PBS_O_HOST\"\n");
    let work = d.work.display().to_string();
    let user = if is_root() {
        NOBODY
    } else {
        nix::unistd::getuid().as_raw()
    };
    let id = ok_on(&d, &login, user, "qsub", &["-d", &work, "hello.sh"]);
    let id = id.trim();
    assert_eq!(d.wait_job(id).exit_status, Some(0), "{}", d.log());
    let owner = d.job_json(id)["Job_Owner"].to_string();
    assert!(owner.contains("@login1"), "{owner}");
    let seq = id.split('.').next().unwrap();
    let out = std::fs::read_to_string(d.work.join(format!("hello.sh.o{seq}"))).unwrap();
    assert_eq!(out, "hello from login1\n");
    let compute = d.root.path().join("relay-remote1.sock");
    let listed = ok_on(&d, &compute, 0, "qstat", &["-x"]);
    assert!(listed.contains("hello.sh"), "{listed}");

    drop(agents);
    let (up, down) = (recorder.up(), recorder.down());
    (d, up, down, secret.to_string())
}

#[test]
fn over_plain_tcp_the_cluster_key_never_travels_only_proofs_of_it() {
    if !is_root() {
        eprintln!("skipped: the test submits as another user (needs root)");
        return;
    }
    let (mut d, up, down, secret) = a_day_through_the_recorder(true);
    // Plain TCP: the recorder reads what the agents said (the hello's
    // host, a protobuf string; before the proofs the hello carried the key
    // itself the same way).
    assert!(contains(&up, b"remote1"));
    assert!(
        up.len() > 1000 && down.len() > 1000,
        "{} {}",
        up.len(),
        down.len()
    );
    assert!(
        !contains(&up, secret.as_bytes()),
        "the key went to the daemon"
    );
    assert!(!contains(&down, secret.as_bytes()), "the key came back");

    // An agent of before the proofs, sending the key in its hello, is
    // refused, and told why.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let port = port_of(&d);
    let refused = runtime.block_on(async {
        let channel = qmesh_proto::endpoint::connect_url(&format!("http://127.0.0.1:{port}"))
            .await
            .unwrap();
        let hello = v1::AgentMessage {
            kind: Some(v1::agent_message::Kind::Hello(v1::AgentHello {
                host: "remote1".into(),
                cluster_key: secret.clone(),
                ..Default::default()
            })),
        };
        v1::agent_client::AgentClient::new(channel)
            .session(tokio_stream::iter([hello]))
            .await
            .map(|_| ())
    });
    let status = refused.expect_err("an old agent's hello was taken");
    assert_eq!(status.code(), tonic::Code::Unauthenticated, "{status:?}");
    assert!(
        status
            .message()
            .contains("sent the cluster key in the clear")
            && status.message().contains("upgrade qmesh-agent"),
        "{status:?}"
    );
    d.stop();
}

#[test]
fn an_agent_enrols_over_tls_and_the_cluster_key_never_travels() {
    if !is_root() {
        eprintln!("skipped: the test submits as another user (needs root)");
        return;
    }
    let (mut d, up, down, secret) = a_day_through_the_recorder(false);
    // Both agents enrolled: each keeps its certificate and the CA's.
    for host in ["remote1", "login1"] {
        let tls = d.root.path().join(format!("spool-{host}/tls"));
        assert!(tls.join(format!("{host}.pem")).is_file(), "{host}");
        assert_eq!(
            std::fs::read_to_string(tls.join("ca.pem")).unwrap(),
            std::fs::read_to_string(d.state_dir.join("ca/ca.pem")).unwrap()
        );
    }
    let log = std::fs::read_to_string(d.log_path()).unwrap();
    assert_eq!(log.matches("enrolled an agent").count(), 2, "{log}");
    // TLS from the first byte (a handshake record), and nothing of the
    // agents in the clear: not the key, not even their names.
    assert_eq!(up[..2], [0x16, 0x03], "not TLS");
    assert!(!contains(&up, b"remote1"), "the hello in the clear");
    assert!(!contains(&up, secret.as_bytes()));
    assert!(!contains(&down, secret.as_bytes()));
    d.stop();
}

/// A daemon over TLS with its cluster CA, for hosts remote1 (nodes r00
/// and r01) and remote2 (s00), with the key `key`.
fn two_hosts(key: &Path) -> Daemon {
    let config = remote_config(free_port(), key, "")
        + "\n[[queue]]\nname = \"other\"\nnode_sets = [\"s\"]\n\n\
           [[node_set]]\nname = \"s\"\nnodes = [\"s00\"]\nhost = \"remote2\"\n";
    Daemon::start_with(Some(&config))
}

fn port_of(d: &Daemon) -> u16 {
    std::fs::read_to_string(d.config.as_ref().unwrap())
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("listen = \"127.0.0.1:"))
        .and_then(|p| p.trim_end_matches('"').parse().ok())
        .unwrap()
}

fn node_state(d: &Daemon, node: &str) -> String {
    let out = d.ok("pbsnodes", &["-F", "json", node]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    doc["nodes"][node]["state"].as_str().unwrap().to_string()
}

#[test]
fn an_agent_with_a_wrong_key_gets_no_certificate_and_no_session() {
    let keydir = tempfile::tempdir().unwrap();
    let key = write_key(keydir.path(), "cluster.key", "right-key-4c1e8b");
    let mut d = two_hosts(&key);
    let wrong = write_key(d.root.path(), "wrong.key", "a-guess");
    let server = format!("https://127.0.0.1:{}", port_of(&d));
    let _agents = Agents(vec![agent_at(&d, &server, "remote1", &wrong, "wrong", &[])]);

    let says = "the agent for host \"remote1\" proved a wrong cluster key";
    d.await_in_log(&d.log_path(), says, 1);
    let agent_log = d.root.path().join("agent-wrong.log");
    d.await_in_log(&agent_log, "cannot enrol with the daemon", 1);
    let text = std::fs::read_to_string(&agent_log).unwrap();
    assert!(
        text.contains(says) && text.contains("--cluster-key-file"),
        "the agent's log says what to do:\n{text}"
    );
    // No certificate kept, no session: its nodes stay down.
    let tls = d.root.path().join("spool-wrong/tls");
    assert!(!tls.join("remote1.pem").exists() && !tls.join("ca.pem").exists());
    assert_eq!(node_state(&d, "r00"), "down");
    assert!(!d.log().contains("agent connected"), "{}", d.log());
    d.stop();
}

#[test]
fn a_certificate_for_one_host_opens_no_session_and_relays_nothing_for_another() {
    let keydir = tempfile::tempdir().unwrap();
    let key = write_key(keydir.path(), "cluster.key", "right-key-9d20aa");
    let mut d = two_hosts(&key);
    let key = d.root.path().join("cluster.key");
    std::fs::copy(keydir.path().join("cluster.key"), &key).unwrap();
    let server = format!("https://127.0.0.1:{}", port_of(&d));

    // remote1's agent enrols and works.
    let mut a = Agents(vec![agent_at(&d, &server, "remote1", &key, "a", &[])]);
    d.await_node_state("r00", "free");
    drop(a.0.pop().map(|mut child| {
        let _ = child.kill();
        child.wait()
    }));

    // Its certificate and key, taken to another agent that claims remote2
    // (as a host that stole them would).
    let (from, to) = (
        d.root.path().join("spool-a/tls"),
        d.root.path().join("spool-b/tls"),
    );
    std::fs::create_dir_all(&to).unwrap();
    for (src, dst) in [
        ("ca.pem", "ca.pem"),
        ("remote1.pem", "remote2.pem"),
        ("remote1.key", "remote2.key"),
    ] {
        std::fs::copy(from.join(src), to.join(dst)).unwrap();
    }
    let _b = Agents(vec![agent_at(&d, &server, "remote2", &key, "b", &[])]);
    let says = "claims host \"remote2\" but its certificate names host \"remote1\"";
    d.await_in_log(&d.log_path(), says, 1);
    d.await_in_log(&d.root.path().join("agent-b.log"), says, 1);
    assert_eq!(node_state(&d, "s00"), "down");

    // Its relay is refused too: the certificate vouches for remote1 only.
    let relay = d.root.path().join("relay-b.sock");
    await_socket(&d, &relay);
    let out = d.cmd("qstat").env("QMESH_SOCKET", &relay).output().unwrap();
    assert!(!out.status.success(), "a command was relayed for remote2");
    assert!(stderr(&out).contains(says), "{}", stderr(&out));
    d.stop();
}

#[test]
fn an_agent_enrols_again_when_the_daemon_s_ca_is_made_anew() {
    let keydir = tempfile::tempdir().unwrap();
    let key = write_key(keydir.path(), "cluster.key", "right-key-51b7e0");
    let mut d = two_hosts(&key);
    let server = format!("https://127.0.0.1:{}", port_of(&d));
    let _a = Agents(vec![agent_at(&d, &server, "remote1", &key, "a", &[])]);
    d.await_node_state("r00", "free");
    let kept = d.root.path().join("spool-a/tls/ca.pem");
    let first = std::fs::read_to_string(&kept).unwrap();

    // The daemon's state made anew, CA and all: the agent no longer
    // trusts the daemon's certificate, and proves the key again.
    d.stop();
    std::fs::remove_dir_all(d.state_dir.join("ca")).unwrap();
    d.spawn();
    let agent_log = d.root.path().join("agent-a.log");
    d.await_in_log(&agent_log, "enrolling again", 1);
    d.await_in_log(&agent_log, "session established", 2);
    d.await_node_state("r00", "free");
    let second = std::fs::read_to_string(&kept).unwrap();
    assert_ne!(first, second, "the new CA is kept");
    assert_eq!(
        second,
        std::fs::read_to_string(d.state_dir.join("ca/ca.pem")).unwrap()
    );
    d.stop();
}

/// A man in the middle without the key: it speaks TLS to the agent with a
/// certificate of its own (an enrolling agent takes any) and TLS to the
/// daemon, and passes every byte between the two.
mod mitm {
    use std::sync::Arc;

    use tokio_rustls::rustls::client::danger::{
        HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
    };
    use tokio_rustls::rustls::crypto::{CryptoProvider, ring};
    use tokio_rustls::rustls::pki_types::{
        CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime,
    };
    use tokio_rustls::rustls::{
        self, ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme,
    };
    use tokio_rustls::{TlsAcceptor, TlsConnector};

    /// Takes whatever the daemon shows.
    #[derive(Debug)]
    struct Blind(Arc<CryptoProvider>);

    impl ServerCertVerifier for Blind {
        fn verify_server_cert(
            &self,
            _: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }
        fn verify_tls12_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls12_signature(
                m,
                c,
                d,
                &self.0.signature_verification_algorithms,
            )
        }
        fn verify_tls13_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls13_signature(
                m,
                c,
                d,
                &self.0.signature_verification_algorithms,
            )
        }
        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }

    /// Serves on a port of its own until dropped; returns the port.
    pub struct Mitm {
        pub port: u16,
        _runtime: tokio::runtime::Runtime,
    }

    pub fn start(daemon_port: u16) -> Mitm {
        let provider = Arc::new(ring::default_provider());
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["qmeshd".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let mut server = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
        server.alpn_protocols = vec![b"h2".to_vec()];
        let mut client = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Blind(provider)))
            .with_no_client_auth();
        client.alpn_protocols = vec![b"h2".to_vec()];
        let (acceptor, connector) = (
            TlsAcceptor::from(Arc::new(server)),
            TlsConnector::from(Arc::new(client)),
        );
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((agent, _)) = listener.accept().await {
                let (acceptor, connector) = (acceptor.clone(), connector.clone());
                tokio::spawn(async move {
                    let Ok(mut agent) = acceptor.accept(agent).await else {
                        return;
                    };
                    let Ok(daemon) =
                        tokio::net::TcpStream::connect(("127.0.0.1", daemon_port)).await
                    else {
                        return;
                    };
                    let name = ServerName::try_from("qmeshd").unwrap();
                    let Ok(mut daemon) = connector.connect(name, daemon).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut agent, &mut daemon).await;
                });
            }
        });
        Mitm {
            port,
            _runtime: runtime,
        }
    }
}

#[test]
fn a_man_in_the_middle_without_the_key_gets_the_agent_no_certificate_and_no_false_ca() {
    let keydir = tempfile::tempdir().unwrap();
    let key = write_key(keydir.path(), "cluster.key", "right-key-c3d4e5");
    let mut d = two_hosts(&key);
    let middle = mitm::start(port_of(&d));
    let server = format!("https://127.0.0.1:{}", middle.port);
    let _a = Agents(vec![agent_at(&d, &server, "remote1", &key, "a", &[])]);
    // The agent's proof was made on its connection to the man in the
    // middle, not on the one the daemon sees: the daemon refuses it, and
    // the agent keeps nothing.
    d.await_in_log(
        &d.log_path(),
        "the agent for host \"remote1\" proved a wrong cluster key",
        1,
    );
    d.await_in_log(
        &d.root.path().join("agent-a.log"),
        "cannot enrol with the daemon",
        1,
    );
    assert!(!d.root.path().join("spool-a/tls/ca.pem").exists());
    assert_eq!(node_state(&d, "r00"), "down");
    d.stop();
}
