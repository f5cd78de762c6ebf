fn main() -> std::process::ExitCode {
    qmesh_cli::pbsdsh::main()
}
