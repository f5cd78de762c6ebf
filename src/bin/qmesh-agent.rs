fn main() -> std::process::ExitCode {
    qmesh_agent::main()
}
