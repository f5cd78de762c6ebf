fn main() -> std::process::ExitCode {
    qmesh_cli::sacct::main()
}
