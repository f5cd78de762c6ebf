fn main() -> std::process::ExitCode {
    qmesh_cli::sbatch::main()
}
