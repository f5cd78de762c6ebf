fn main() -> std::process::ExitCode {
    qmesh_cli::qrun::main()
}
