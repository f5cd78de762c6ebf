fn main() -> std::process::ExitCode {
    qmesh_cli::printjob::main()
}
