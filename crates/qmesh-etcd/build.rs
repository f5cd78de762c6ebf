//! Compiles the part of etcd's v3 API qmesh uses (`proto/etcd.proto`) with
//! the protoc shipped by `protoc-bin-vendored`: no system protoc needed.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proto");
    let proto = proto_dir.join("etcd.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .build_server(false)
        .compile_with_config(config, &[proto], &[proto_dir])?;
    Ok(())
}
