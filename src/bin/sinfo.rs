fn main() -> std::process::ExitCode {
    qmesh_cli::sinfo::main()
}
