fn main() -> std::process::ExitCode {
    qmesh_cli::scontrol::main()
}
