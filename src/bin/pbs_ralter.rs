fn main() -> std::process::ExitCode {
    qmesh_cli::pbs_ralter::main()
}
