fn main() -> std::process::ExitCode {
    qmesh_cli::spwhen::main()
}
