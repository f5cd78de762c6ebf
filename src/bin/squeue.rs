fn main() -> std::process::ExitCode {
    qmesh_cli::squeue::main()
}
