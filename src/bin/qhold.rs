fn main() -> std::process::ExitCode {
    qmesh_cli::qhold::main()
}
