fn main() -> std::process::ExitCode {
    qmesh_cli::qrerun::main()
}
