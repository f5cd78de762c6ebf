//! qmgr's vocabulary: the commands a script is parsed into (`Command`,
//! `Action` and its `Assignment`s, `Op`), the error that names a script's
//! line, and what running one produced (`Outcome`).
//!
//! The parser makes these and every other qmgr module reads them, so they
//! live here, below both, and this module uses nothing else of qmgr.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Assign,
    Add,
    Remove,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Assign => "=",
            Op::Add => "+=",
            Op::Remove => "-=",
        }
    }
}

/// `name op value`, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub name: String,
    pub op: Op,
    pub value: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    CreateQueue(Vec<String>, Vec<Assignment>),
    DeleteQueue(Vec<String>),
    SetQueue(Vec<String>, Vec<Assignment>),
    UnsetQueue(Vec<String>, Vec<String>),
    SetServer(Vec<Assignment>),
    UnsetServer(Vec<String>),
    /// Empty: all queues.
    ListQueue(Vec<String>),
    ListServer,
    PrintServer,
    PrintQueue(Vec<String>),
    CreateAccount(Vec<String>, Vec<Assignment>),
    DeleteAccount(Vec<String>),
    SetAccount(Vec<String>, Vec<Assignment>),
    UnsetAccount(Vec<String>, Vec<String>),
    /// Empty: all accounts.
    ListAccount(Vec<String>),
    CreateNodeGroup(Vec<String>, Vec<Assignment>),
    DeleteNodeGroup(Vec<String>),
    SetNodeGroup(Vec<String>, Vec<Assignment>),
    UnsetNodeGroup(Vec<String>, Vec<String>),
    /// Empty: all node groups.
    ListNodeGroup(Vec<String>),
    CreateNodeSet(Vec<String>, Vec<Assignment>),
    DeleteNodeSet(Vec<String>),
    SetNodeSet(Vec<String>, Vec<Assignment>),
    UnsetNodeSet(Vec<String>, Vec<String>),
    /// Empty: all node sets, the daemon file's and qmgr's.
    ListNodeSet(Vec<String>),
    /// PBS's `create node HOST`: a node set of its own (`pbs_node.rs`).
    CreateNode(Vec<String>, Vec<Assignment>),
    /// PBS's `delete node HOST`: the node set `create node` made.
    DeleteNode(Vec<String>),
    /// PBS Pro's `set sched attr = value` (`pbs_node.rs`).
    SetSched(Vec<Assignment>),
    ListSched,
    SetNode(Vec<String>, Vec<Assignment>),
    UnsetNode(Vec<String>, Vec<String>),
    ListNode(Vec<String>),
    SetCalendar(Vec<Assignment>),
    UnsetCalendar(Vec<String>),
    ListCalendar,
    Help(Option<String>),
    Quit,
    /// Reorders the queues' pending jobs in group cascade order (EPCC): it
    /// changes jobs, not the configuration.
    ReorderQueue(Vec<String>),
    /// A shutdown window command (`qmgr/shutdown.rs`).
    Shutdown(ShutdownAction),
    CreateResource(Vec<String>, Vec<Assignment>),
    DeleteResource(Vec<String>),
    SetResource(Vec<String>, Vec<Assignment>),
    UnsetResource(Vec<String>, Vec<String>),
    /// Empty: every resource the site defined.
    ListResource(Vec<String>),
    PrintResource(Vec<String>),
    /// A site hook command (`qmgr/hook.rs`).
    Hook(HookAction),
    /// `active OBJECT [NAMES]`: the names later commands use when they
    /// name none (already substituted by the parser); with no names, the
    /// active names are listed.
    Active(String, Vec<String>),
}

impl Action {
    /// Whether applying it can change the configuration.
    pub fn changes(&self) -> bool {
        matches!(
            self,
            Action::CreateQueue(..)
                | Action::DeleteQueue(..)
                | Action::SetQueue(..)
                | Action::UnsetQueue(..)
                | Action::SetServer(..)
                | Action::UnsetServer(..)
                | Action::CreateAccount(..)
                | Action::DeleteAccount(..)
                | Action::SetAccount(..)
                | Action::UnsetAccount(..)
                | Action::CreateNodeGroup(..)
                | Action::DeleteNodeGroup(..)
                | Action::SetNodeGroup(..)
                | Action::UnsetNodeGroup(..)
                | Action::CreateNodeSet(..)
                | Action::DeleteNodeSet(..)
                | Action::SetNodeSet(..)
                | Action::UnsetNodeSet(..)
                | Action::SetCalendar(..)
                | Action::UnsetCalendar(..)
                | Action::SetNode(..)
                | Action::UnsetNode(..)
                | Action::CreateNode(..)
                | Action::DeleteNode(..)
                | Action::SetSched(..)
                | Action::CreateResource(..)
                | Action::DeleteResource(..)
                | Action::SetResource(..)
                | Action::UnsetResource(..)
        ) || matches!(self, Action::Shutdown(s) if s.changes())
            || matches!(self, Action::Hook(h) if h.changes())
    }
}

/// A command on shutdown windows; the names it acts on first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShutdownAction {
    Create(Vec<String>, Vec<Assignment>),
    Delete(Vec<String>),
    Set(Vec<String>, Vec<Assignment>),
    Unset(Vec<String>, Vec<String>),
    /// Empty: every window.
    List(Vec<String>),
}

impl ShutdownAction {
    /// Whether applying it can change the configuration.
    pub fn changes(&self) -> bool {
        !matches!(self, ShutdownAction::List(_))
    }

    /// Whether only managers may do it (creating and deleting).
    pub fn needs_manager(&self) -> bool {
        matches!(self, ShutdownAction::Create(..) | ShutdownAction::Delete(_))
    }
}

/// A command on site hooks; the names it acts on first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookAction {
    Create(Vec<String>, Vec<Assignment>),
    Delete(Vec<String>),
    Set(Vec<String>, Vec<Assignment>),
    Unset(Vec<String>, Vec<String>),
    /// Empty: every hook.
    List(Vec<String>),
    /// Empty: every hook.
    Print(Vec<String>),
    /// `import hook NAME CONTENT_TYPE ENCODING DATA`: the content, already
    /// read from the file (qmgr's client reads it where it is) or from the
    /// lines after `-`.
    Import {
        name: String,
        content_type: String,
        content: Vec<u8>,
    },
    /// `export hook NAME CONTENT_TYPE ENCODING`: the content printed,
    /// as is (`default`) or as base64.
    Export {
        name: String,
        content_type: String,
        base64: bool,
    },
}

impl HookAction {
    /// Whether applying it can change the configuration.
    pub fn changes(&self) -> bool {
        !matches!(
            self,
            HookAction::List(_) | HookAction::Print(_) | HookAction::Export { .. }
        )
    }
}

/// One command and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// 1-based line of the script where the command starts.
    pub line: usize,
    pub text: String,
    pub action: Action,
}

/// A syntax or application error, naming the line and the word.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct QmgrError {
    pub line: usize,
    pub message: String,
}

/// The longest script one request may carry, in bytes: `print server`
/// of a large site is far below it, and `parse_script` refuses a longer
/// one in its own words, before the Admin service's 4 MiB message limit
/// is reached.
pub const MAX_SCRIPT_BYTES: usize = 1 << 20;
/// The most commands in one script: each runs on the configuration's
/// copy while the scheduler waits.
pub const MAX_COMMANDS: usize = 100_000;

/// What running a script produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The text of list, print and help commands.
    pub output: String,
    /// How many commands changed the configuration.
    pub applied: u32,
    /// The script asked to quit (interactive use).
    pub quit: bool,
    /// Queues to reorder in group cascade order once the script has
    /// succeeded ([`State::reorder_queue`](crate::state::State::reorder_queue));
    /// the output already says so.
    pub reorder: Vec<String>,
}
