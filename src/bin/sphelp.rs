fn main() -> std::process::ExitCode {
    qmesh_cli::sphelp::main()
}
