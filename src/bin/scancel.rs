fn main() -> std::process::ExitCode {
    qmesh_cli::scancel::main()
}
