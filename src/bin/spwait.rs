fn main() -> std::process::ExitCode {
    qmesh_cli::spwait::main()
}
