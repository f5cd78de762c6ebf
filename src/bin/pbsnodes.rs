fn main() -> std::process::ExitCode {
    qmesh_cli::pbsnodes::main()
}
