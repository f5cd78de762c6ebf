fn main() -> std::process::ExitCode {
    qmesh_cli::qrls::main()
}
