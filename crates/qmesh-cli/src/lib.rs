//! placeholder: the qmesh commands
pub mod qsub { pub fn main() -> std::process::ExitCode { std::process::ExitCode::FAILURE } }
pub mod qstat { pub fn main() -> std::process::ExitCode { std::process::ExitCode::FAILURE } }
pub mod qdel { pub fn main() -> std::process::ExitCode { std::process::ExitCode::FAILURE } }
pub mod qhold { pub fn main() -> std::process::ExitCode { std::process::ExitCode::FAILURE } }
pub mod qrls { pub fn main() -> std::process::ExitCode { std::process::ExitCode::FAILURE } }
pub mod qmgr { pub fn main() -> std::process::ExitCode { std::process::ExitCode::FAILURE } }
