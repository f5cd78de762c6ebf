fn main() -> std::process::ExitCode {
    qmesh_cli::getjid::main()
}
