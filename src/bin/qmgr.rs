fn main() -> std::process::ExitCode {
    qmesh_cli::qmgr::main()
}
