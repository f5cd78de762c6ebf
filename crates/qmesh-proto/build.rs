//! Compiles `proto/qmesh.proto` with the protoc shipped by `protoc-bin-vendored`,
//! so a fresh machine needs no system protoc. Also writes the file descriptor
//! set, which the daemon exports for gRPC reflection-style tools.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let proto = proto_dir.join("qmesh.proto");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    println!("cargo:rerun-if-changed={}", proto.display());

    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);

    tonic_prost_build::configure()
        .file_descriptor_set_path(out_dir.join("qmesh_descriptor.bin"))
        .compile_with_config(config, &[proto], &[proto_dir])?;
    Ok(())
}
