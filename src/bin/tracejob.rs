fn main() -> std::process::ExitCode {
    qmesh_cli::tracejob::main()
}
