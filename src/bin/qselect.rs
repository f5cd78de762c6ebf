fn main() -> std::process::ExitCode {
    qmesh_cli::qselect::main()
}
