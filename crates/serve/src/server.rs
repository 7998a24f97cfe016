//! Starting and stopping the server: bind, announce the address, warm up, serve until
//! SIGTERM or SIGINT, then drain (no new runs; in-flight runs finish or, after the grace
//! period, are cancelled) and stop.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::service::TowerToHyperService;
use tokio_util::sync::CancellationToken;

use crate::api::CsrfKey;
use crate::api::{AllowedHosts, AppState, router};
use crate::auth::Tokens;
use crate::backend::Backend;
use crate::config::{ConfigError, ServeConfig};
use crate::embedded::Embedded;
use crate::followers::Followers;
use crate::launch::Launcher;
use crate::metrics::Metrics;

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot listen on `{addr}`: {reason}")]
    Bind { addr: String, reason: String },
    #[error("the state directory `{path}` is not writable: {reason}")]
    StateDir { path: String, reason: String },
    /// The state directory is one others could write.
    #[error(transparent)]
    Refused(#[from] toolhost_runtime::owned::Refused),
    #[error("start-up failed: {0}")]
    Warm(String),
    #[error("the server failed: {0}")]
    Serve(String),
}

/// Serves `config` until a signal, running tasks through `launcher` and journaling under
/// `state_dir` (the embedded backend). Prints `listening on http://ADDR` (one line) to
/// `out` once bound.
pub async fn serve(
    config: ServeConfig,
    state_dir: PathBuf,
    launcher: Arc<dyn Launcher>,
    out: &mut dyn Write,
) -> Result<(), ServeError> {
    config.check()?;
    writable(&state_dir)?;
    let metrics = Arc::new(Metrics::default());
    let backend = Arc::new(Embedded::new(
        launcher,
        &state_dir,
        config.max_concurrent_runs,
        config.max_queued_runs,
        metrics.clone(),
    ));
    serve_backend(config, backend, metrics, out).await
}

/// Serves `config` until a signal with the runs of `backend` (counting what it reports in
/// `metrics`). Prints `listening on http://ADDR` (one line) to `out` once bound.
pub async fn serve_backend(
    config: ServeConfig,
    backend: Arc<dyn Backend>,
    metrics: Arc<Metrics>,
    out: &mut dyn Write,
) -> Result<(), ServeError> {
    config.check()?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| ServeError::Bind {
            addr: config.listen.to_string(),
            reason: e.to_string(),
        })?;
    let addr = listener.local_addr().map_err(|e| ServeError::Bind {
        addr: config.listen.to_string(),
        reason: e.to_string(),
    })?;
    let state = AppState {
        registry: backend.clone(),
        backend: backend.clone(),
        tokens: Arc::new(Tokens::new(&config.tokens)),
        metrics,
        hosts: Arc::new(AllowedHosts::new(&config.allowed_hosts)),
        followers: Arc::new(Followers::new(
            config.max_followers,
            config.max_followers_per_token,
        )),
        csrf: Arc::new(
            CsrfKey::new()
                .map_err(|e| ServeError::Serve(format!("no random key for the console: {e}")))?,
        ),
        evals_dir: config.evals_dir.clone(),
    };
    let _ = writeln!(out, "listening on http://{addr}");
    let _ = out.flush();
    let warming = backend.clone();
    let warm = tokio::task::spawn_blocking(move || warming.warm());
    let grace = Duration::from_millis(config.shutdown_grace_ms);
    let draining = backend.clone();
    let (failed_tx, failed_rx) = tokio::sync::oneshot::channel::<String>();
    tokio::spawn(async move {
        match warm.await {
            Ok(Ok(())) => tracing::info!("ready"),
            Ok(Err(e)) => {
                let _ = failed_tx.send(e);
            }
            Err(e) => {
                let _ = failed_tx.send(e.to_string());
            }
        }
    });
    let failure = Arc::new(std::sync::Mutex::new(None));
    let failure_set = failure.clone();
    let shutdown = async move {
        tokio::select! {
            () = signalled() => tracing::info!("shutting down: draining runs"),
            Ok(e) = failed_rx => {
                *failure_set.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            }
        }
        let _ = tokio::task::spawn_blocking(move || draining.shut_down(grace)).await;
    };
    let stop = CancellationToken::new();
    let stopping = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        stopping.cancel();
    });
    let service = TowerToHyperService::new(router(state));
    toolhost_listen::serve(listener, config.connections(), service, stop).await;
    match failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
        Some(e) => Err(ServeError::Warm(e)),
        None => Ok(()),
    }
}

/// SIGTERM or SIGINT.
async fn signalled() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).expect("a SIGTERM handler");
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// Checks that only this user can write the state directory, creates `STATE/runs` (0700)
/// and proves a file can be written there.
fn writable(state_dir: &std::path::Path) -> Result<(), ServeError> {
    toolhost_runtime::owned::private_dir(state_dir, "state directory")?;
    let fail = |e: std::io::Error| ServeError::StateDir {
        path: state_dir.display().to_string(),
        reason: e.to_string(),
    };
    let runs = state_dir.join("runs");
    toolhost_runtime::owned::create_dirs(&runs).map_err(fail)?;
    let probe = runs.join(format!(".serve-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(fail)?;
    std::fs::remove_file(&probe).map_err(fail)
}
