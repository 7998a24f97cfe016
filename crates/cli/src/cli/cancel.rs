//! `toolhost cancel --database URL RUN`: cancel a run of a database's queue.

use std::io::Write;

use super::database::DatabaseArg;
use super::{CmdResult, Failure, exit};
use toolhost_app::database;
use toolhost_engine::approval::{Decider, How};
use toolhost_store_pg::Cancelled;

/// Cancel a run of a PostgreSQL database: a queued run (or one waiting for a decision on
/// its unfinished steps) stops `cancelled` at once; a running one is stopped by the
/// worker or server replica holding it, which sees the request at its next lease renewal
/// (or while it waits for an approval), and names this terminal's user in its stop. Prints `cancelled RUN` or `cancelling RUN`; a run
/// that has stopped already exits 2.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The run's id.
    run: String,
    #[command(flatten)]
    database: DatabaseArg,
}

pub(crate) fn run(args: Args, out: &mut dyn Write) -> CmdResult {
    let Some(url) = args.database.url() else {
        return Err(Failure::new(
            exit::USAGE,
            "no database: pass --database URL or set TOOLHOST_DATABASE_URL",
        ));
    };
    let db = database::connect(&url)?;
    // The run's stop names who cancelled it: this terminal's user.
    let by = Decider::person(super::approve::terminal_user(), How::Terminal);
    let by = serde_json::to_string(&by).expect("a decider serialises");
    match db.cancel(&args.run, &by).map_err(database::failure)? {
        Cancelled::Stopped => {
            let _ = writeln!(out, "cancelled {}", args.run);
        }
        Cancelled::Over(status) => {
            return Err(Failure::new(
                exit::USAGE,
                format!("run {} is {status} already: nothing to cancel", args.run),
            ));
        }
        _ => {
            let _ = writeln!(out, "cancelling {}", args.run);
        }
    }
    Ok(exit::OK)
}
