fn main() -> std::process::ExitCode {
    qmesh_cli::qenable::main()
}
