fn main() -> std::process::ExitCode {
    qmesh_cli::qdel::main()
}
