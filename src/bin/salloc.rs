fn main() -> std::process::ExitCode {
    qmesh_cli::salloc::main()
}
