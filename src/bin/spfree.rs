fn main() -> std::process::ExitCode {
    qmesh_cli::spfree::main()
}
