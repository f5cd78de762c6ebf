fn main() -> std::process::ExitCode {
    qmesh_cli::srun::main()
}
