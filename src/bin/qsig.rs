fn main() -> std::process::ExitCode {
    qmesh_cli::qsig::main()
}
