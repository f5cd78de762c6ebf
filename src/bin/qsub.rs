fn main() -> std::process::ExitCode {
    qmesh_cli::qsub::main()
}
