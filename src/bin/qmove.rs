fn main() -> std::process::ExitCode {
    qmesh_cli::qmove::main()
}
