fn main() -> std::process::ExitCode {
    qmesh_cli::pbsdsh::tmrsh_main()
}
