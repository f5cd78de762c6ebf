fn main() -> std::process::ExitCode {
    qmesh_cli::sprelease::main()
}
