fn main() -> std::process::ExitCode {
    qmesh_cli::qmsg::main()
}
