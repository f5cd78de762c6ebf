//! TLS on the agents' TCP port with the site's own PKI, which takes the
//! place of the daemon's cluster CA: the daemon shows the site's
//! certificate, and with the site's client CA configured it takes only
//! agents whose client certificate that CA signed. Every other agent is
//! refused and logged with its address; the cluster key must still be
//! proven as well. (The daemon's own CA: `trust.rs`.)

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use crate::agents::{free_port, remote_config};
use crate::harness::{Daemon, bin};

/// A cluster CA, the daemon's certificate, an agent's certificate from
/// the cluster CA and one from another CA, as PEM files.
struct Pki {
    _dir: tempfile::TempDir,
    ca: PathBuf,
    server: (PathBuf, PathBuf),
    agent: (PathBuf, PathBuf),
    rogue: (PathBuf, PathBuf),
}

fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

/// A certificate for `names` that `issuer` signed, for `usage`; written
/// to `dir` as `label.pem` and `label.key`.
fn leaf(
    dir: &Path,
    label: &str,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
    issuer: &Issuer<'static, KeyPair>,
) -> (PathBuf, PathBuf) {
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name.push(DnType::CommonName, label);
    params.extended_key_usages = vec![usage];
    params.use_authority_key_identifier_extension = true;
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    let (cert_path, key_path) = (
        dir.join(format!("{label}.pem")),
        dir.join(format!("{label}.key")),
    );
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    (cert_path, key_path)
}

fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let (ca_pem, cluster) = ca("qmesh cluster CA");
    let (_, other) = ca("some other CA");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let server = leaf(
        dir.path(),
        "qmeshd",
        &["localhost", "127.0.0.1"],
        ExtendedKeyUsagePurpose::ServerAuth,
        &cluster,
    );
    let agent = leaf(
        dir.path(),
        "remote1",
        &["remote1"],
        ExtendedKeyUsagePurpose::ClientAuth,
        &cluster,
    );
    let rogue = leaf(
        dir.path(),
        "rogue",
        &["remote1"],
        ExtendedKeyUsagePurpose::ClientAuth,
        &other,
    );
    Pki {
        _dir: dir,
        ca,
        server,
        agent,
        rogue,
    }
}

/// A qmesh-agent for host remote1 reaching `server`, with the cluster key
/// and `tls` (its TLS options); `label` names its spool and log.
fn agent(d: &Daemon, server: &str, key: &Path, label: &str, tls: &[&Path]) -> Child {
    let log = std::fs::File::create(d.root.path().join(format!("agent-{label}.log"))).unwrap();
    let flags = ["--tls-ca-file", "--tls-cert-file", "--tls-key-file"];
    let mut cmd = Command::new(bin("qmesh-agent"));
    cmd.args(["--server", server, "--host", "remote1"])
        .arg("--spool")
        .arg(d.root.path().join(format!("spool-{label}")))
        .arg("--tmpdir-base")
        .arg(d.tmpdir_base())
        .arg("--cluster-key-file")
        .arg(key)
        .arg("--relay-socket")
        .arg(d.root.path().join(format!("relay-{label}.sock")));
    for (flag, path) in flags.iter().zip(tls) {
        cmd.arg(flag).arg(path);
    }
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start qmesh-agent")
}

/// Waits until the daemon's log says `needle` `count` times (or more).
fn await_log(d: &Daemon, needle: &str, count: usize) {
    d.await_in_log(&d.log_path(), needle, count);
}

fn config(port: u16, key: &Path, pki: &Pki) -> String {
    let tls = format!(
        "tls_cert_file = \"{}\"\ntls_key_file = \"{}\"\ntls_client_ca_file = \"{}\"\n",
        pki.server.0.display(),
        pki.server.1.display(),
        pki.ca.display(),
    );
    remote_config(port, key, &tls)
}

#[test]
fn only_an_agent_with_a_certificate_of_the_cluster_ca_is_taken() {
    let pki = pki();
    let port = free_port();
    let key = pki.ca.with_file_name("cluster.key");
    std::fs::write(&key, "s3cret-key\n").unwrap();
    let mut d = Daemon::start_with(Some(&config(port, &key, &pki)));
    // The agents refused keep trying, and say so.
    d.allowed_errors.push("agent-".into());
    let https = format!("https://localhost:{port}");

    d.script("where.sh", "#!/bin/sh\ncat $PBS_NODEFILE\n");
    let id = d.qsub(&["-lP", "2", "where.sh"]);

    // No client certificate, one another CA signed, and no TLS at all:
    // each is refused, and the daemon logs why.
    let mut others = Vec::new();
    others.push(agent(&d, &https, &key, "nocert", &[&pki.ca]));
    await_log(&d, "agent refused: it presented no client certificate", 1);
    let rogue = [&*pki.ca, &pki.rogue.0, &pki.rogue.1];
    others.push(agent(&d, &https, &key, "rogue", &rogue));
    await_log(
        &d,
        "agent refused: its client certificate is not signed by the cluster CA",
        1,
    );
    let plain = format!("http://127.0.0.1:{port}");
    others.push(agent(&d, &plain, &key, "plain", &[]));
    await_log(&d, "agent refused: it does not speak TLS", 1);
    let job = d.job_json(&id);
    assert_eq!(job["job_state"], "Q", "no agent taken yet: {job}");
    assert_eq!(job["reason"], "NodesDown", "{job}");
    let log = std::fs::read_to_string(d.log_path()).unwrap();
    assert!(
        log.contains("peer=127.0.0.1:"),
        "a refusal names the address:\n{log}"
    );

    let good = [&*pki.ca, &pki.agent.0, &pki.agent.1];
    let mut real = agent(&d, &https, &key, "real", &good);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}");
    let seq = id.split('.').next().unwrap();
    let nodes = std::fs::read_to_string(d.work.join(format!("where.sh.o{seq}"))).unwrap();
    assert_eq!(nodes, "r00\nr01\n");

    for child in others.iter_mut().chain([&mut real]) {
        crate::agents::stop_agent(child);
    }
    d.stop();
}

#[test]
fn a_tls_file_that_cannot_be_read_stops_the_daemon_with_its_name() {
    let pki = pki();
    let key = pki.ca.with_file_name("cluster.key");
    std::fs::write(&key, "k\n").unwrap();
    let missing = pki.ca.with_file_name("no-such-key.pem");
    let text = config(free_port(), &key, &pki).replace(
        &pki.server.1.display().to_string(),
        &missing.display().to_string(),
    );
    let path = pki.ca.with_file_name("qmesh.toml");
    std::fs::write(&path, text).unwrap();
    let out = Command::new(bin("qmeshd"))
        .arg("--config")
        .arg(&path)
        .arg("--check-config")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("no-such-key.pem"), "{stderr}");
    assert!(stderr.contains("TLS key"), "{stderr}");
}
