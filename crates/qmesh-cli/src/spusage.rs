//! spusage (ANL): the caller's accounts with their allocation, the
//! node-hours used (nodes × wall clock), those committed to queued and
//! running jobs, and what remains. `--all` lists every account (operators
//! and managers).

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::v1;

use crate::client::{self, CliError};
use crate::output::{self, Attrs, Column, Output, Tree};

/// Show the node-hour allocations of your accounts: used, committed to
/// queued and running jobs, and remaining.
///
/// Figures are node-hours: nodes × wall-clock hours a job ran, charged to
/// its group (c1-prod and c1-dev charge c1).
#[derive(Parser, Debug)]
#[command(name = "spusage", version)]
pub struct Args {
    /// Every account, not only yours (operators and managers).
    #[arg(long, short = 'a')]
    pub all: bool,
    /// Print the accounts as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    match client::block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => client::fail("spusage", &e),
    }
}

async fn run(args: &Args) -> Result<(), CliError> {
    let mut jobs = client::jobs().await?;
    let reply = jobs
        .usage(v1::UsageRequest { all: args.all })
        .await?
        .into_inner();
    output::emit(&UsageListing(reply), args.json)
        .map_err(|e| CliError::msg(format!("cannot write the listing: {e}")))
}

/// One Usage reply, ready to print.
pub struct UsageListing(pub v1::UsageReply);

const COLUMNS: [Column; 6] = [
    Column::left("ACCOUNT").at_most(20),
    Column::right("ALLOCATION"),
    Column::right("USED"),
    Column::right("COMMITTED"),
    Column::right("REMAINING"),
    Column::right("SHARES"),
];

fn hours(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |x| format!("{x:.1}"))
}

impl Output for UsageListing {
    fn text(&self) -> String {
        if self.0.accounts.is_empty() {
            return String::new();
        }
        let rows: Vec<Vec<String>> = self
            .0
            .accounts
            .iter()
            .map(|a| {
                vec![
                    a.account.clone(),
                    hours(a.allocation),
                    hours(Some(a.used)),
                    hours(Some(a.committed)),
                    hours(a.remaining),
                    a.shares.to_string(),
                ]
            })
            .collect();
        output::table(&COLUMNS, &rows)
    }

    fn json(&self) -> Tree {
        let entries = self
            .0
            .accounts
            .iter()
            .map(|a| (a.account.clone(), account_attrs(a).json()))
            .collect();
        output::document(self.0.server_time, &self.0.server, "Account", entries)
    }
}

/// One account's figures, node-hours unrounded.
fn account_attrs(a: &v1::AccountUsage) -> Attrs {
    let mut attrs = Attrs::new();
    if let Some(x) = a.allocation {
        attrs.float("allocation", x);
    }
    attrs.float("used", a.used).float("committed", a.committed);
    if let Some(x) = a.remaining {
        attrs.float("remaining", x);
    }
    attrs
        .int("shares", a.shares)
        .float("decayed_usage", a.decayed_usage)
        .text("users", a.users.join(","));
    attrs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply() -> v1::UsageReply {
        v1::UsageReply {
            accounts: vec![
                v1::AccountUsage {
                    account: "c1".into(),
                    allocation: Some(5000.0),
                    used: 4800.0,
                    committed: 99.5,
                    remaining: Some(100.5),
                    shares: 10,
                    decayed_usage: 1200.25,
                    users: vec!["alice".into(), "bob".into()],
                },
                v1::AccountUsage {
                    account: "open".into(),
                    allocation: None,
                    used: 0.0016666666666666668,
                    committed: 0.0,
                    remaining: None,
                    shares: 1,
                    decayed_usage: 0.0,
                    users: vec![],
                },
            ],
            server: "srv".into(),
            server_time: 1_700_000_000,
        }
    }

    #[test]
    fn the_table_shows_node_hours_to_one_decimal() {
        assert_eq!(
            UsageListing(reply()).text(),
            "ACCOUNT ALLOCATION   USED COMMITTED REMAINING SHARES\n\
             ------- ---------- ------ --------- --------- ------\n\
             c1          5000.0 4800.0      99.5     100.5     10\n\
             open             -    0.0       0.0         -      1\n"
        );
    }

    #[test]
    fn json_keeps_the_exact_figures() {
        let doc = serde_json::to_value(UsageListing(reply()).json()).unwrap();
        let open = &doc["Account"]["open"];
        assert_eq!(open["used"], 0.0016666666666666668);
        assert!(open.get("allocation").is_none());
        assert_eq!(doc["Account"]["c1"]["remaining"], 100.5);
        assert_eq!(doc["Account"]["c1"]["users"], "alice,bob");
        assert_eq!(doc["pbs_server"], "srv");
    }
}
