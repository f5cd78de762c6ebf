fn main() -> std::process::ExitCode {
    qmesh_cli::spunpause::main()
}
