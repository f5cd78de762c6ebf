fn main() -> std::process::ExitCode {
    qmesh_cli::qdisable::main()
}
