fn main() -> std::process::ExitCode {
    qmesh_cli::qalter::main()
}
