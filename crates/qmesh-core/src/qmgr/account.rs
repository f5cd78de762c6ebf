//! qmgr's accounts: `create account c1 allocation = 5000, shares = 10`,
//! `set account c1 users += alice`, `unset account c1 max_run`,
//! `delete account c1`, `list account [NAMES]`. Only managers change them.
//!
//! An account is a group: `c1-prod` charges `c1`, so names with `-` are
//! refused here with that explanation.

use super::values::{canonical, parse_count, quoted, scalar_only, update_list};
use super::vocab::{Action, Assignment, Outcome};
use crate::account::{Account, valid_account_name};
use crate::server::Config;
use crate::state::State;

/// Account attributes in the order list and print show them.
pub const ACCOUNT_ATTRS: &[(&str, &[&str])] = &[
    ("allocation", &["alloc"]),
    ("shares", &["fairshare"]),
    ("users", &["user"]),
    ("max_queued", &[]),
    ("max_run", &[]),
    ("max_node_hours", &[]),
];

fn no_account(name: &str) -> String {
    format!("account \"{name}\" does not exist; see qmgr -c \"list account\"")
}

fn account_mut<'a>(config: &'a mut Config, name: &str) -> Result<&'a mut Account, String> {
    config
        .accounts
        .get_mut(name)
        .ok_or_else(|| no_account(name))
}

fn parse_hours(name: &str, value: &str) -> Result<u64, String> {
    value.parse::<u64>().map_err(|_| {
        format!("\"{value}\" is not a value for {name}; write a whole number of node-hours")
    })
}

fn set(account: &mut Account, a: &Assignment) -> Result<(), String> {
    let name = canonical(ACCOUNT_ATTRS, &a.name, "an account")?;
    if name != "users" {
        scalar_only(name, a.op)?;
    }
    let value = a.value.as_str();
    match name {
        "allocation" => account.allocation = Some(parse_hours(name, value)?),
        "shares" => account.shares = parse_count(name, value)?,
        "users" => update_list(&mut account.users, name, a.op, value)?,
        "max_queued" => account.max_queued = Some(parse_count(name, value)?),
        "max_run" => account.max_run = Some(parse_count(name, value)?),
        "max_node_hours" => account.max_node_hours = Some(parse_hours(name, value)?),
        _ => return Err(format!("attribute {name} cannot be set on an account")),
    }
    Ok(())
}

fn unset(account: &mut Account, attr: &str) -> Result<(), String> {
    let name = canonical(ACCOUNT_ATTRS, attr, "an account")?;
    let fresh = Account::new(&account.name);
    match name {
        "allocation" => account.allocation = None,
        "shares" => account.shares = fresh.shares,
        "users" => account.users.clear(),
        "max_queued" => account.max_queued = None,
        "max_run" => account.max_run = None,
        _ => account.max_node_hours = None,
    }
    Ok(())
}

/// Applies an account command; `Ok(false)` if `action` is not one.
pub fn apply(
    action: &Action,
    config: &mut Config,
    state: &State,
    outcome: &mut Outcome,
) -> Result<bool, String> {
    match action {
        Action::CreateAccount(names, assigns) => {
            for name in names {
                valid_account_name(name)
                    .map_err(|why| format!("bad account name \"{name}\": {why}"))?;
                if config.accounts.contains_key(name) {
                    return Err(format!("account \"{name}\" already exists"));
                }
                let mut account = Account::new(name);
                for a in assigns {
                    set(&mut account, a)?;
                }
                config.accounts.insert(name.clone(), account);
            }
        }
        Action::DeleteAccount(names) => {
            for name in names {
                account_mut(config, name)?;
                let count = state.accounting().tally().group(name);
                let jobs = count.queued + count.running;
                if jobs > 0 {
                    return Err(format!(
                        "account \"{name}\" still has {jobs} queued or running job(s); \
                         let them end or delete them first"
                    ));
                }
                config.accounts.remove(name);
            }
        }
        Action::SetAccount(names, assigns) => {
            for name in names {
                let account = account_mut(config, name)?;
                for a in assigns {
                    set(account, a)?;
                }
            }
        }
        Action::UnsetAccount(names, attrs) => {
            for name in names {
                let account = account_mut(config, name)?;
                for a in attrs {
                    unset(account, a)?;
                }
            }
        }
        Action::ListAccount(names) => {
            let names = if names.is_empty() {
                config.accounts.keys().cloned().collect()
            } else {
                names.clone()
            };
            for name in names {
                let account = config
                    .accounts
                    .get(&name)
                    .ok_or_else(|| no_account(&name))?;
                outcome.output.push_str(&list(account, state));
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The attributes that differ from a new account's, for print.
fn values(account: &Account) -> Vec<(&'static str, String)> {
    let fresh = Account::new(&account.name);
    let mut out = Vec::new();
    if let Some(a) = account.allocation {
        out.push(("allocation", a.to_string()));
    }
    if account.shares != fresh.shares {
        out.push(("shares", account.shares.to_string()));
    }
    if !account.users.is_empty() {
        out.push(("users", account.users.join(",")));
    }
    let mut opt = |name, v: Option<String>| {
        if let Some(v) = v {
            out.push((name, v));
        }
    };
    opt("max_queued", account.max_queued.map(|n| n.to_string()));
    opt("max_run", account.max_run.map(|n| n.to_string()));
    opt(
        "max_node_hours",
        account.max_node_hours.map(|n| n.to_string()),
    );
    out
}

/// `Account c1` and its attributes with the figures, in node-hours.
/// Decayed usage is given as of the last charge: qmgr reads no clock.
fn list(account: &Account, state: &State) -> String {
    let usage = state.accounting().usage();
    let at = usage.decayed_at.unwrap_or_default();
    let report = state.account_report(&account.name, at);
    let mut out = format!("Account {}\n", account.name);
    let allocation = account.allocation.map(|a| a.to_string());
    out.push_str(&format!(
        "    allocation = {}\n",
        allocation.as_deref().unwrap_or("")
    ));
    out.push_str(&format!("    shares = {}\n", account.shares));
    out.push_str(&format!("    users = {}\n", account.users.join(",")));
    for (name, value) in [
        ("max_queued", account.max_queued.map(u64::from)),
        ("max_run", account.max_run.map(u64::from)),
        ("max_node_hours", account.max_node_hours),
    ] {
        if let Some(v) = value {
            out.push_str(&format!("    {name} = {v}\n"));
        }
    }
    out.push_str(&format!("    used = {:.1}\n", report.used));
    out.push_str(&format!("    committed = {:.1}\n", report.committed));
    // From the account being changed, which may differ from the state's.
    if let Some(a) = account.allocation {
        let remaining = a as f64 - report.used - report.committed;
        out.push_str(&format!("    remaining = {remaining:.1}\n"));
    }
    out.push_str(&format!("    decayed_usage = {:.1}", report.decayed));
    if let Some(t) = usage.decayed_at {
        out.push_str(&format!(" (at {})", t.format("%Y-%m-%d %H:%M:%S UTC")));
    }
    out.push_str("\n\n");
    out
}

/// qmgr commands that recreate the accounts.
pub fn print(config: &Config) -> String {
    if config.accounts.is_empty() {
        return String::new();
    }
    let mut out = String::from("#\n# Create accounts and set their attributes.\n#\n");
    for account in config.accounts.values() {
        out.push_str(&format!("create account {}\n", account.name));
        for (name, value) in values(account) {
            out.push_str(&format!(
                "set account {} {name} = {}\n",
                account.name,
                quoted(&value)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::parse_script;
    use super::super::tests::run_as;
    use super::*;
    use crate::access::Role;
    use crate::state::tests::{caller, state, t};
    use crate::submit::Submission;

    #[test]
    fn create_set_unset_and_list() {
        let st = state(4);
        let mut config = st.config().clone();
        run_as(
            Role::Manager,
            "create account c1 allocation = 5000, shares = 10\n\
             set account c1 users += alice, users += bob, max_run = 4\n\
             set account c1 users -= bob\n\
             unset account c1 max_run",
            &mut config,
            &st,
        )
        .unwrap();
        let c1 = &config.accounts["c1"];
        assert_eq!((c1.allocation, c1.shares), (Some(5000), 10));
        assert_eq!(c1.users, vec!["alice"]);
        assert_eq!(c1.max_run, None);
        let out = run_as(Role::User, "list account c1", &mut config, &st).unwrap();
        assert_eq!(
            out.output,
            "Account c1\n    allocation = 5000\n    shares = 10\n    users = alice\n    \
             used = 0.0\n    committed = 0.0\n    remaining = 5000.0\n    decayed_usage = 0.0\n\n"
        );
    }

    #[test]
    fn the_grammar_takes_pbs_abbreviations() {
        let action = |line: &str| parse_script(line).unwrap().remove(0).action;
        assert_eq!(action("l a"), Action::ListAccount(vec![]));
        assert_eq!(
            action("d account c1,c2"),
            Action::DeleteAccount(vec!["c1".into(), "c2".into()])
        );
        assert!(
            matches!(action("c a c1 allocation=5"), Action::CreateAccount(n, a) if n == ["c1"] && a.len() == 1)
        );
        assert!(parse_script("set account c1").is_err(), "no attributes");
        assert!(parse_script("create account").is_err(), "no name");
    }

    #[test]
    fn sub_account_names_are_refused_with_the_reason() {
        let st = state(1);
        let mut config = st.config().clone();
        let err = run_as(Role::Manager, "create account c1-prod", &mut config, &st).unwrap_err();
        assert!(
            err.message
                .contains("sub-accounts charge their group: create account c1"),
            "{err}"
        );
        let err = run_as(
            Role::Manager,
            "create account c1 shares = 0",
            &mut config,
            &st,
        )
        .unwrap_err();
        assert!(err.message.contains("shares"), "{err}");
        let err = run_as(
            Role::Manager,
            "set account nosuch shares = 2",
            &mut config,
            &st,
        )
        .unwrap_err();
        assert!(
            err.message.contains("account \"nosuch\" does not exist"),
            "{err}"
        );
    }

    #[test]
    fn only_managers_change_accounts() {
        let st = state(1);
        let mut config = st.config().clone();
        let err = run_as(Role::Operator, "create account c1", &mut config, &st).unwrap_err();
        assert!(err.message.contains("manager rights"), "{err}");
        run_as(Role::Manager, "create account c1", &mut config, &st).unwrap();
        let err = run_as(
            Role::Operator,
            "set account c1 shares = 3",
            &mut config,
            &st,
        )
        .unwrap_err();
        assert!(err.message.contains("manager rights"), "{err}");
    }

    #[test]
    fn an_account_with_jobs_is_not_deleted() {
        let mut st = state(2);
        let mut config = st.config().clone();
        run_as(
            Role::Manager,
            "create account c1\ncreate account c2",
            &mut config,
            &st,
        )
        .unwrap();
        st.set_config(config.clone());
        let sub = Submission {
            script_name: "job.sh".into(),
            workdir: "/tmp".into(),
            account: Some("c1-dev".into()),
            ..Submission::default()
        };
        st.submit(sub, &caller(1, Role::User), t(0)).unwrap();
        let err = run_as(Role::Manager, "delete account c1", &mut config, &st).unwrap_err();
        assert!(
            err.message.contains("still has 1 queued or running job"),
            "{err}"
        );
        run_as(Role::Manager, "delete account c2", &mut config, &st).unwrap();
        assert!(!config.accounts.contains_key("c2"));
    }

    #[test]
    fn print_server_recreates_accounts() {
        let st = state(1);
        let mut config = st.config().clone();
        run_as(
            Role::Manager,
            "create account c1 allocation = 5000, shares = 10, users = \"alice,bob\", max_node_hours = 200",
            &mut config,
            &st,
        )
        .unwrap();
        let printed = super::super::print_server(&config);
        assert!(printed.contains("create account c1\n"), "{printed}");
        assert!(
            printed.contains("set account c1 users = \"alice,bob\"\n"),
            "{printed}"
        );
        let mut rebuilt = Config::default();
        run_as(Role::Manager, &printed, &mut rebuilt, &st).unwrap();
        assert_eq!(rebuilt, config);
    }
}
