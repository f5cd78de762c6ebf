//! Compiles `proto/qmesh.proto` with the protoc shipped by `protoc-bin-vendored`,
//! so a fresh machine needs no system protoc. Also writes the file descriptor
//! set, which the daemon exports for gRPC reflection-style tools.
//!
//! The messages the agent keeps in its spool as they came (a launch order,
//! a job's end) derive serde too, so that its `launch.json` and
//! `result.json` hold the wire's message itself and a field added to the
//! wire reaches the job with no copy in between
//! (`crates/qmesh-agent/src/record/`).

use std::path::PathBuf;

/// The messages kept in the agent's spool as JSON. Their field names are
/// then the files' keys: renaming one (harmless on the wire) changes
/// the spool's format. Missing fields read as their defaults. (`EnvVar`,
/// in a launch too, is written by hand: `src/spool_json.rs`.)
const KEPT_IN_SPOOL: &[&str] = &[
    ".qmesh.v1.LaunchJob",
    ".qmesh.v1.NodeShare",
    ".qmesh.v1.ProcessLimits",
    ".qmesh.v1.JobFinished",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let proto = proto_dir.join("qmesh.proto");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    println!("cargo:rerun-if-changed={}", proto.display());

    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);

    let mut builder = tonic_prost_build::configure()
        .file_descriptor_set_path(out_dir.join("qmesh_descriptor.bin"))
        // The script has a file of its own in the spool.
        .field_attribute(".qmesh.v1.LaunchJob.script", "#[serde(skip)]");
    for message in KEPT_IN_SPOOL {
        // Fields left at their defaults are not written (and read back as
        // them): the shepherd reads what a job sets, not forty empties.
        builder = builder
            .type_attribute(
                message,
                "#[derive(serde::Serialize, serde::Deserialize)]\n#[serde(default)]",
            )
            .field_attribute(
                message,
                "#[serde(skip_serializing_if = \"crate::spool_json::is_default\")]",
            );
    }
    builder.compile_with_config(config, &[&proto], &[&proto_dir])?;

    // The services once more, as the daemon serves them: the same
    // messages (those above), but a listing goes out as bytes encoded
    // once for every caller who asks the same thing (`src/served.rs`).
    // Its client takes a listing in without decoding it (benchmarks).
    let served_dir = out_dir.join("served");
    std::fs::create_dir_all(&served_dir)?;
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .out_dir(&served_dir)
        .extern_path(".qmesh.v1", "crate::v1")
        .extern_path(".qmesh.v1.StatusReply", "crate::served::EncodedStatusReply")
        .compile_with_config(config, &[&proto], &[&proto_dir])?;
    Ok(())
}
