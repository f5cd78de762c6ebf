fn main() -> std::process::ExitCode {
    qmesh_cli::sppause::main()
}
