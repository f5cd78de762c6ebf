fn main() -> std::process::ExitCode {
    qmesh_cli::spq::main()
}
