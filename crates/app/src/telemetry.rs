//! Exporting the spans of [`trace`](toolhost_engine::trace) with OpenTelemetry OTLP over HTTP
//! (protobuf), when an endpoint is configured. Off by default.
//!
//! Data flows: `OtlpConfig::resolve` (flag, then `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
//! then `OTEL_EXPORTER_OTLP_ENDPOINT`) → `Telemetry::start` (batch span processor on
//! its own thread, service name `toolhost`) → a `tracing` [`Dispatch`] that sends the
//! spans with target [`trace::TARGET`](toolhost_runtime::trace::TARGET) to it (and everything else
//! to the `TOOLHOST_LOG` log on stderr) → `Telemetry::shutdown` flushes.
//!
//! Only spans are exported, never events: the sandbox's audit events and guest log lines
//! carry paths and messages, and spans themselves carry only ids, names, numbers and kinds.
//! A collector that cannot be reached never fails or holds up a run: exports happen on the
//! processor's thread, the first failure is kept, and `Telemetry::shutdown` waits at
//! most `SHUTDOWN_TIMEOUT` for the last batch.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use reqwest::Url;
use tracing::Dispatch;
use tracing::dispatcher::DefaultGuard;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;

/// The most [`Telemetry::shutdown`] waits for the last batch to be sent.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Why traces cannot be set up or were not all exported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TelemetryError {
    #[error("{origin} `{value}` is not a usable OTLP endpoint: {reason}")]
    BadEndpoint {
        /// `--otlp-endpoint` or the environment variable it came from.
        origin: String,
        value: String,
        reason: String,
    },
    #[error("cannot set up the OTLP exporter for `{endpoint}`: {reason}")]
    Exporter { endpoint: String, reason: String },
    #[error("traces were not all exported to `{endpoint}`: {reason}")]
    Export { endpoint: String, reason: String },
}

/// Where spans go: the full URL of the collector's traces endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpConfig {
    pub endpoint: Url,
}

impl OtlpConfig {
    /// The endpoint from `flag` (`--otlp-endpoint`), else from the standard variables read
    /// with `env`; `None` (no export) when neither is set, or when only variables are and
    /// `OTEL_SDK_DISABLED` is `true`.
    ///
    /// `flag` and `OTEL_EXPORTER_OTLP_ENDPOINT` are base URLs: `/v1/traces` is appended
    /// unless the path already ends with it. `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as
    /// it is, as the OTLP exporter specification says.
    pub fn resolve(
        flag: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<OtlpConfig>, TelemetryError> {
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(value) = flag {
            return base_url("--otlp-endpoint", value).map(Some);
        }
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        if let Some(value) = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            let endpoint = parse("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &value)?;
            return Ok(Some(OtlpConfig { endpoint }));
        }
        if let Some(value) = set("OTEL_EXPORTER_OTLP_ENDPOINT") {
            return base_url("OTEL_EXPORTER_OTLP_ENDPOINT", &value).map(Some);
        }
        Ok(None)
    }
}

fn parse(origin: &str, value: &str) -> Result<Url, TelemetryError> {
    let bad = |reason: String| TelemetryError::BadEndpoint {
        origin: origin.to_string(),
        value: value.to_string(),
        reason,
    };
    if !value.contains("://") {
        return Err(bad(
            "write it as a URL starting with `http://` or `https://`, e.g. http://localhost:4318"
                .into(),
        ));
    }
    let url = Url::parse(value.trim()).map_err(|e| bad(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(format!(
            "the scheme is `{}`; OTLP over HTTP needs `http` or `https`",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host".into()));
    }
    Ok(url)
}

fn base_url(origin: &str, value: &str) -> Result<OtlpConfig, TelemetryError> {
    let mut endpoint = parse(origin, value)?;
    if !endpoint.path().ends_with("/v1/traces") {
        let path = format!("{}/v1/traces", endpoint.path().trim_end_matches('/'));
        endpoint.set_path(&path);
    }
    Ok(OtlpConfig { endpoint })
}

/// The first export failure, shared by the exporter and [`Telemetry`].
type FirstFailure = Arc<Mutex<Option<String>>>;

/// The OTLP exporter, remembering its first failure and logging it once.
#[derive(Debug)]
struct Remembering {
    inner: opentelemetry_otlp::SpanExporter,
    endpoint: String,
    failure: FirstFailure,
}

impl SpanExporter for Remembering {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        if let Err(e) = &result {
            let mut first = self.failure.lock().unwrap_or_else(|p| p.into_inner());
            if first.is_none() {
                tracing::warn!(target: "toolhost::telemetry", endpoint = %self.endpoint, error = %e, "cannot export traces; the run goes on without them");
                *first = Some(e.to_string());
            }
        }
        result
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// A running exporter and the `tracing` dispatcher that feeds it. Dropping it shuts it
/// down (as [`Telemetry::shutdown`], without the report).
pub struct Telemetry {
    provider: SdkTracerProvider,
    dispatch: Dispatch,
    endpoint: String,
    failure: FirstFailure,
    shut_down: bool,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Starts exporting to `config`'s endpoint. The returned [`Telemetry::dispatch`] must be
    /// the default dispatcher of every thread the run's spans are made on.
    pub fn start(config: &OtlpConfig) -> Result<Telemetry, TelemetryError> {
        let endpoint = config.endpoint.to_string();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint.clone())
            .build()
            .map_err(|e| TelemetryError::Exporter {
                endpoint: endpoint.clone(),
                reason: e.to_string(),
            })?;
        let failure = FirstFailure::default();
        let exporter = Remembering {
            inner: exporter,
            endpoint: endpoint.clone(),
            failure: failure.clone(),
        };
        let resource = Resource::builder_empty()
            .with_service_name("toolhost")
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let otel = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("toolhost"))
            .with_location(false)
            .with_threads(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|m| {
                m.is_span() && m.target() == toolhost_runtime::trace::TARGET
            }));
        let log = tracing_subscriber::fmt::layer()
            .with_writer(crate::log::StderrWriter)
            .with_ansi(crate::log::stderr_is_terminal())
            .with_filter(log_filter());
        let dispatch = Dispatch::new(tracing_subscriber::registry().with(otel).with(log));
        Ok(Telemetry {
            provider,
            dispatch,
            endpoint,
            failure,
            shut_down: false,
        })
    }

    /// The dispatcher that exports the run's spans (and logs like the binary's default).
    pub fn dispatch(&self) -> &Dispatch {
        &self.dispatch
    }

    /// Makes [`Telemetry::dispatch`] the default dispatcher of the threads `builder`'s
    /// runtime starts (the thread that calls `block_on` needs
    /// [`tracing::dispatcher::with_default`] as well).
    pub fn install_on(&self, builder: &mut tokio::runtime::Builder) {
        thread_local! {
            static DEFAULT: RefCell<Option<DefaultGuard>> = const { RefCell::new(None) };
        }
        let dispatch = self.dispatch.clone();
        builder
            .on_thread_start(move || {
                let guard = tracing::dispatcher::set_default(&dispatch);
                DEFAULT.with(|d| *d.borrow_mut() = Some(guard));
            })
            .on_thread_stop(|| DEFAULT.with(|d| drop(d.borrow_mut().take())));
    }

    /// Sends what is left (waiting at most [`SHUTDOWN_TIMEOUT`]) and stops the exporter.
    /// Spans still open are not sent: call it after the run's spans have closed.
    pub fn shutdown(mut self) -> Result<(), TelemetryError> {
        self.finish()
    }

    fn finish(&mut self) -> Result<(), TelemetryError> {
        if std::mem::replace(&mut self.shut_down, true) {
            return Ok(());
        }
        let result = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
        let first = self
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let reason = first.or_else(|| result.err().map(|e| e.to_string()));
        match reason {
            None => Ok(()),
            Some(reason) => Err(TelemetryError::Export {
                endpoint: self.endpoint.clone(),
                reason,
            }),
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            tracing::warn!(target: "toolhost::telemetry", "{e}");
        }
    }
}

/// The filter of the stderr log: `TOOLHOST_LOG` (e.g. `debug`), `warn` by default.
pub fn log_filter() -> tracing_subscriber::EnvFilter {
    let directives = std::env::var("TOOLHOST_LOG").map_or_else(|_| "warn".into(), |v| scoped(&v));
    tracing_subscriber::EnvFilter::try_new(&directives)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"))
}

/// `TOOLHOST_LOG` as filter directives: a bare level (`debug`) is toolhost's own
/// (`toolhost…` targets), everything else staying at `warn`: wasmtime's and Cranelift's
/// internals at `debug` drown what the host says. Directives naming targets (`=`) or
/// several (`,`) are taken as written.
fn scoped(value: &str) -> String {
    let value = value.trim();
    if value.is_empty() {
        return "warn".into();
    }
    if value.contains(['=', ',']) {
        return value.into();
    }
    format!("warn,toolhost={value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_log_level_is_toolhost_s_own() {
        assert_eq!(scoped("debug"), "warn,toolhost=debug");
        assert_eq!(scoped(" trace "), "warn,toolhost=trace");
        assert_eq!(scoped(""), "warn");
        assert_eq!(scoped("wasmtime=debug"), "wasmtime=debug");
        assert_eq!(scoped("info,cranelift=trace"), "info,cranelift=trace");
    }

    fn resolve(flag: Option<&str>, vars: &[(&str, &str)]) -> Result<Option<String>, String> {
        OtlpConfig::resolve(flag, |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
        .map(|c| c.map(|c| c.endpoint.to_string()))
        .map_err(|e| e.to_string())
    }

    #[test]
    fn off_unless_configured() {
        assert_eq!(resolve(None, &[]), Ok(None));
        assert_eq!(
            resolve(None, &[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]),
            Ok(None)
        );
        let disabled = [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318"),
        ];
        assert_eq!(resolve(None, &disabled), Ok(None));
        assert_eq!(
            resolve(Some("http://c:4318"), &disabled),
            Ok(Some("http://c:4318/v1/traces".into()))
        );
    }

    #[test]
    fn base_urls_get_the_traces_path() {
        let base = |v: &str| resolve(Some(v), &[]).unwrap().unwrap();
        assert_eq!(
            base("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(base("http://h:1/otlp/"), "http://h:1/otlp/v1/traces");
        assert_eq!(base("https://h/v1/traces"), "https://h/v1/traces");
        let env = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://exact:4318/custom",
            ),
        ];
        assert_eq!(
            resolve(None, &env),
            Ok(Some("http://exact:4318/custom".into()))
        );
        assert_eq!(
            resolve(None, &env[..1]),
            Ok(Some("http://base:4318/v1/traces".into()))
        );
        // The flag wins over the environment.
        assert_eq!(
            resolve(Some("http://flag:1"), &env),
            Ok(Some("http://flag:1/v1/traces".into()))
        );
    }

    #[test]
    fn bad_endpoints_name_the_value_and_where_it_came_from() {
        assert_eq!(
            resolve(Some("localhost:4318"), &[]),
            Err("--otlp-endpoint `localhost:4318` is not a usable OTLP endpoint: write it as a URL starting with `http://` or `https://`, e.g. http://localhost:4318".into())
        );
        assert_eq!(
            resolve(Some("http://"), &[]),
            Err("--otlp-endpoint `http://` is not a usable OTLP endpoint: empty host".into())
        );
        assert_eq!(
            resolve(None, &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "grpc://c:4317")]),
            Err("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT `grpc://c:4317` is not a usable OTLP endpoint: the scheme is `grpc`; OTLP over HTTP needs `http` or `https`".into())
        );
    }
}
