//! What several targets share: the state of a daemon started on the
//! embedded configuration, built once per process, and its callers.

use qmesh_core::{Caller, Config, Role, State};

struct Daemon {
    state: State,
    file: Config,
}

thread_local! {
    static DAEMON: Daemon = {
        let settings = qmesh_config::Settings::embedded().expect("the embedded configuration");
        let file = settings.initial.clone();
        let state = State::new("srv", settings.initial, settings.node_sets)
            .expect("a state on the embedded configuration");
        Daemon { state, file }
    };
}

/// Runs `f` on the daemon's state and the configuration its file made.
pub fn with_state<R>(f: impl FnOnce(&State, &Config) -> R) -> R {
    DAEMON.with(|d| f(&d.state, &d.file))
}

fn caller(role: Role) -> Caller {
    Caller {
        uid: 1000,
        gid: 1000,
        user: "alice".into(),
        group: "users".into(),
        role,
    }
}

#[allow(dead_code)]
pub fn manager() -> Caller {
    caller(Role::Manager)
}

#[allow(dead_code)]
pub fn user() -> Caller {
    caller(Role::User)
}
