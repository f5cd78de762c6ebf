fn main() -> std::process::ExitCode {
    qmesh_cli::qstart::main()
}
