//! `--watch`: a changed policy or component is validated and swapped in without a restart;
//! a broken one is refused with a logged error and the old catalog stays. Polls file
//! metadata (no new dependency, no inotify limits); a file caught half-written fails to
//! load, is refused, and is tried again once its metadata settles.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use crate::{Catalog, Server};

/// What the watcher knows of a file: its path, length and modification time (`None`
/// when it is missing).
type Fingerprint = Vec<(PathBuf, Option<(u64, SystemTime)>)>;

fn fingerprint(files: Vec<PathBuf>) -> Fingerprint {
    let mut print: Fingerprint = files
        .into_iter()
        .map(|p| {
            let meta = std::fs::metadata(&p)
                .ok()
                .and_then(|m| Some((m.len(), m.modified().ok()?)));
            (p, meta)
        })
        .collect();
    print.sort();
    print
}

/// Builds the catalog afresh from the files (run off the async workers: loading compiles).
pub type Reload = Arc<dyn Fn() -> Result<Catalog, String> + Send + Sync>;

/// Watches the files `files()` lists (it is asked again each time, so a new component in
/// a watched directory is seen) every `every`; on a change, `reload()` builds a new
/// catalog, which replaces the server's, or the error is logged and nothing changes.
pub async fn watch(
    server: Server,
    every: Duration,
    files: impl Fn() -> Vec<PathBuf> + Send + 'static,
    reload: Reload,
    stop: CancellationToken,
) {
    let mut seen = fingerprint(files());
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            () = stop.cancelled() => return,
        }
        let now = fingerprint(files());
        if now == seen {
            continue;
        }
        seen = now;
        let reload = reload.clone();
        let built = tokio::task::spawn_blocking(move || reload())
            .await
            .unwrap_or_else(|e| Err(format!("the reload failed: {e}")));
        match built {
            Ok(catalog) => {
                let tools = catalog.len();
                server.replace_catalog(catalog).await;
                tracing::info!(
                    tools,
                    "reloaded: the changed policy and tools are served now"
                );
                eprintln!("toolhost mcp: reloaded; serving {tools} tools");
            }
            Err(e) => {
                tracing::error!(error = %e, "refused the change: the previous tools stay");
                // A load error can quote the component (a name, a docs error).
                eprintln!(
                    "toolhost mcp: refused the change, the previous tools stay: {}",
                    toolhost_runtime::terminal::line(&e)
                );
            }
        }
    }
}
