fn main() -> std::process::ExitCode {
    qmesh_cli::spusage::main()
}
