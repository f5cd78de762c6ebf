fn main() -> std::process::ExitCode {
    qmesh_cli::qreport::main()
}
