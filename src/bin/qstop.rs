fn main() -> std::process::ExitCode {
    qmesh_cli::qstop::main()
}
