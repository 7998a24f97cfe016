//! `toolhost report RUN --html OUT`: a run's journal as one self-contained HTML page.

use std::io::Write;
use std::path::Path;

use super::{CmdResult, Failure, exit};
use toolhost_journal::{self as journal, report};

/// Write a run's report as one self-contained HTML page: the chain's verdict, the stop
/// reason, budgets, a timeline of steps in parallel lanes, each plan revision's DAG, every
/// step's capability decisions, planner calls and approvals.
///
/// The chain is verified first. A broken or torn journal is still reported, and the page
/// says so at its top; the exit code is then 8.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A run id (as printed by `toolhost run`) or a journal file.
    run: String,
    /// Where to write the page (`-` for standard output). An existing file is replaced.
    #[arg(long, value_name = "OUT")]
    html: String,
    #[command(flatten)]
    database: super::database::DatabaseArg,
}

fn write_page(out_path: &str, html: &str) -> Result<(), Failure> {
    let path = Path::new(out_path);
    let fail = |why: String| {
        Failure::new(
            exit::USAGE,
            format!("cannot write the report to `{out_path}`: {why}"),
        )
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        return Err(fail(format!(
            "the directory `{}` does not exist",
            dir.display()
        )));
    }
    if path.is_dir() {
        return Err(fail("it is a directory; give a file name".into()));
    }
    std::fs::write(path, html).map_err(|e| fail(e.to_string()))
}

pub(crate) fn run(args: Args, state: Option<std::path::PathBuf>, out: &mut dyn Write) -> CmdResult {
    let rep = match args.database.url() {
        Some(url) => toolhost_app::database::report(&url, &args.run)?,
        None => {
            let state = toolhost_app::journal::state_dir(state)?;
            let path = journal::resolve(&state, &args.run)
                .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
            report::load(&path).map_err(|e| Failure::new(exit::USAGE, e.to_string()))?
        }
    };
    let html = rep.html();
    if args.html == "-" {
        out.write_all(html.as_bytes())
            .map_err(|e| Failure::new(exit::USAGE, format!("cannot write the report: {e}")))?;
    } else {
        write_page(&args.html, &html)?;
        let _ = writeln!(
            out,
            "wrote the report of run {} to {}",
            rep.run_id(),
            args.html
        );
    }
    match &rep.verified.problem {
        None => Ok(exit::OK),
        Some(p) => Err(Failure::new(
            exit::JOURNAL,
            format!(
                "journal `{}` {}: {p} (the report says so at its top)",
                rep.path().display(),
                if p.is_torn() { "is torn" } else { "is broken" }
            ),
        )),
    }
}
