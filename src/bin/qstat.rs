fn main() -> std::process::ExitCode {
    qmesh_cli::qstat::main()
}
