//! The qmesh binaries. Each file in `src/bin/` is a one-line `main` that calls
//! into its crate (`qmeshd`, `qmesh-agent`, `qmesh-cli`). They are declared in
//! this top-level package so that one `cargo build` builds all of them, the
//! daemon finds its agent next to itself, and the end-to-end tests in
//! `tests/` can name every binary.
