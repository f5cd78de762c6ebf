fn main() -> std::process::ExitCode {
    qmesh_cli::qorder::main()
}
