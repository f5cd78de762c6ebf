fn main() -> std::process::ExitCode {
    qmesh_cli::spwhat::main()
}
