fn main() -> std::process::ExitCode {
    qmeshd::main()
}
