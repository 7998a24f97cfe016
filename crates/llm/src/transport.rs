//! POSTing JSON to a provider: a per-request timeout, retries with exponential backoff and
//! jitter on 429, 5xx, connection errors and timeouts, `Retry-After` honoured (seconds or
//! an HTTP-date), and all of it inside a deadline (the run's remaining wall time).

use std::ops::ControlFlow;
use std::time::{Duration, Instant, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde_json::Value;

use super::LlmError;
use super::config::{ApiKey, LlmConfig};

/// How a request is retried and how long it may take.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub timeout: Duration,
    pub max_retries: u32,
    pub backoff: Duration,
    pub max_backoff: Duration,
    pub max_retry_after: Duration,
}

impl RetryPolicy {
    pub fn of(c: &LlmConfig) -> RetryPolicy {
        RetryPolicy {
            timeout: Duration::from_millis(c.timeout_ms),
            max_retries: c.max_retries,
            backoff: Duration::from_millis(c.backoff_ms),
            max_backoff: Duration::from_millis(c.max_backoff_ms),
            max_retry_after: Duration::from_millis(c.max_retry_after_ms),
        }
    }

    /// The wait before retry `attempt` (0-based): `backoff · 2^attempt`, capped, with
    /// "equal jitter" (uniform in the upper half) so clients that failed together spread out.
    fn wait(&self, attempt: u32) -> Duration {
        let full = self
            .backoff
            .saturating_mul(1u32 << attempt.min(20))
            .min(self.max_backoff);
        let half = full / 2;
        let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        half + Duration::from_nanos(fastrand::u64(0..=nanos))
    }
}

/// What a planner request is waiting for, told to whoever shows the run (the progress
/// display), so a person sees why nothing moves without turning on debug logging.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Waiting {
    /// Attempt `attempt` of at most `attempts` failed for `why`; the next starts after
    /// `wait` (what the server's `Retry-After` asked for when `retry_after`).
    Retry {
        attempt: u32,
        attempts: u32,
        why: String,
        wait: Duration,
        retry_after: bool,
    },
    /// Attempt `attempt` has had no answer for `elapsed`; it gives up at `timeout`.
    Slow {
        attempt: u32,
        elapsed: Duration,
        timeout: Duration,
    },
}

impl std::fmt::Display for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = |d: &Duration| format!("{:.1} s", d.as_secs_f64());
        match self {
            Waiting::Retry {
                attempt,
                attempts,
                why,
                wait,
                retry_after,
            } => write!(
                f,
                "attempt {attempt} of {attempts} failed ({why}); attempt {} in {}{}",
                attempt + 1,
                secs(wait),
                if *retry_after {
                    " (as the server's Retry-After asks)"
                } else {
                    ""
                }
            ),
            Waiting::Slow {
                attempt,
                elapsed,
                timeout,
            } => write!(
                f,
                "attempt {attempt}: no answer yet after {} (gives up at {})",
                secs(elapsed),
                secs(timeout)
            ),
        }
    }
}

/// Called with each [`Waiting`] of a planner's requests.
pub type OnWait = std::sync::Arc<dyn Fn(&Waiting) + Send + Sync>;

/// How often a request with no answer yet is reported.
const SLOW_EVERY: Duration = Duration::from_secs(5);

/// An HTTP client for one provider.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
    policy: RetryPolicy,
    key: Option<ApiKey>,
    on_wait: Option<OnWait>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("policy", &self.policy)
            .field("key", &self.key)
            .field("on_wait", &self.on_wait.is_some())
            .finish_non_exhaustive()
    }
}

/// A non-retryable answer: the status and (redacted, cut) body.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub status: u16,
    pub body: String,
}

impl Http {
    pub fn new(policy: RetryPolicy, key: Option<ApiKey>) -> Result<Http, LlmError> {
        let client = reqwest::Client::builder()
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Client(e.to_string()))?;
        Ok(Http {
            client,
            policy,
            key,
            on_wait: None,
        })
    }

    /// Reports every retry wait and slow answer to `on_wait`.
    pub fn on_wait(mut self, on_wait: Option<OnWait>) -> Http {
        self.on_wait = on_wait;
        self
    }

    fn tell(&self, w: Waiting) {
        if let Some(f) = &self.on_wait {
            f(&w);
        }
    }

    pub fn key(&self) -> Option<&ApiKey> {
        self.key.as_ref()
    }

    /// Text with the key removed, for anything that leaves this module.
    pub fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(k) => k.redact(text),
            None => text.to_string(),
        }
    }

    /// A header carrying the key, marked sensitive so that no debug print shows it.
    pub(crate) fn secret_header(&self, prefix: &str) -> Option<HeaderValue> {
        let k = self.key.as_ref()?;
        let mut v = HeaderValue::from_str(&format!("{prefix}{}", k.expose())).ok()?;
        v.set_sensitive(true);
        Some(v)
    }

    /// POSTs `body` to `url` until a 2xx (its parsed JSON), a non-retryable status
    /// (`Ok(Err(Rejected))`), or an error: retries spent, or `deadline` reached.
    pub async fn post(
        &self,
        url: &str,
        headers: &[(HeaderName, HeaderValue)],
        body: &Value,
        deadline: Instant,
    ) -> Result<Result<Value, Rejected>, LlmError> {
        let mut map = HeaderMap::new();
        for (n, v) in headers {
            map.insert(n.clone(), v.clone());
        }
        let mut attempt = 0u32;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(LlmError::WallTime { attempts: attempt });
            }
            let timeout = self.policy.timeout.min(left);
            let (why, retry_after) = match self.exchange(url, &map, body, attempt, timeout).await {
                ControlFlow::Break(done) => return done,
                ControlFlow::Continue(retry) => retry,
            };
            if attempt >= self.policy.max_retries {
                return Err(LlmError::Retries {
                    attempts: attempt + 1,
                    last: self.redact(&why),
                });
            }
            let wait = match retry_after {
                Some(w) => w.min(self.policy.max_retry_after),
                None => self.policy.wait(attempt),
            };
            if Instant::now() + wait >= deadline {
                return Err(LlmError::WallTime {
                    attempts: attempt + 1,
                });
            }
            tracing::debug!(attempt, wait_ms = wait.as_millis() as u64, why = %self.redact(&why), "retrying planner request");
            self.tell(Waiting::Retry {
                attempt: attempt + 1,
                attempts: self.policy.max_retries + 1,
                why: self.redact(&why),
                wait,
                retry_after: retry_after.is_some(),
            });
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// One attempt, within `timeout`: `Break` with what [`Self::post`] returns (the parsed
    /// 2xx body, a non-retryable status, or an error no retry can help), `Continue` with
    /// why it may be retried (a 429, a 5xx, a timeout, a failed connection) and the wait
    /// the server asked for.
    async fn exchange(
        &self,
        url: &str,
        map: &HeaderMap,
        body: &Value,
        attempt: u32,
        timeout: Duration,
    ) -> ControlFlow<Result<Result<Value, Rejected>, LlmError>, (String, Option<Duration>)> {
        let exchange = async {
            let resp = self
                .client
                .post(url)
                .headers(map.clone())
                .json(body)
                .timeout(timeout)
                .send()
                .await?;
            let status = resp.status();
            let retry_after = retry_after(resp.headers());
            Ok::<_, reqwest::Error>((status, retry_after, resp.text().await))
        };
        let sent = self.watch_slow(exchange, attempt + 1, timeout).await;
        ControlFlow::Continue(match sent {
            Ok((status, retry_after, text)) => match text {
                Ok(text) if status.is_success() => {
                    return ControlFlow::Break(serde_json::from_str(&text).map(Ok).map_err(|e| {
                        LlmError::Response(format!(
                            "the response body is not JSON ({e}): {}",
                            self.redact(&cut(&text))
                        ))
                    }));
                }
                Ok(text) if status.as_u16() == 429 || status.is_server_error() => {
                    (format!("{status}: {}", cut(&text)), retry_after)
                }
                Ok(text) => {
                    return ControlFlow::Break(Ok(Err(Rejected {
                        status: status.as_u16(),
                        body: self.redact(&cut(&text)),
                    })));
                }
                Err(e) => (format!("{status}, then reading the body: {e}"), None),
            },
            Err(e) if e.is_timeout() => {
                (format!("no answer within {} ms", timeout.as_millis()), None)
            }
            Err(e) if e.is_connect() || e.is_request() || e.is_body() => {
                (format!("connection failed: {e}"), None)
            }
            Err(e) => {
                return ControlFlow::Break(Err(LlmError::Client(self.redact(&e.to_string()))));
            }
        })
    }

    /// Awaits `exchange`, telling [`Waiting::Slow`] every [`SLOW_EVERY`] it has no answer.
    async fn watch_slow<T>(
        &self,
        exchange: impl std::future::Future<Output = T>,
        attempt: u32,
        timeout: Duration,
    ) -> T {
        if self.on_wait.is_none() {
            return exchange.await;
        }
        let started = Instant::now();
        let mut ticks =
            tokio::time::interval_at(tokio::time::Instant::now() + SLOW_EVERY, SLOW_EVERY);
        tokio::pin!(exchange);
        loop {
            tokio::select! {
                done = &mut exchange => return done,
                _ = ticks.tick() => self.tell(Waiting::Slow {
                    attempt,
                    elapsed: started.elapsed(),
                    timeout,
                }),
            }
        }
    }
}

/// `Retry-After` (RFC 9110 §10.2.3): seconds, or an HTTP-date (IMF-fixdate, or the
/// obsolete RFC 850 and asctime forms) to wait until; a date already past means now. An
/// unparseable value falls back to backoff.
fn retry_after(h: &HeaderMap) -> Option<Duration> {
    let v = h.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn cut(s: &str) -> String {
    const MAX: usize = 600;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let p = RetryPolicy {
            timeout: Duration::from_secs(1),
            max_retries: 5,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(300),
            max_retry_after: Duration::from_secs(1),
        };
        for _ in 0..20 {
            let w0 = p.wait(0);
            assert!((50..=100).contains(&w0.as_millis()), "{w0:?}");
            let w1 = p.wait(1);
            assert!((100..=200).contains(&w1.as_millis()), "{w1:?}");
            let w5 = p.wait(5);
            assert!((150..=300).contains(&w5.as_millis()), "{w5:?}");
        }
    }

    #[test]
    fn retry_after_in_seconds() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn retry_after_as_an_http_date() {
        let mut h = HeaderMap::new();
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(5));
        h.insert(RETRY_AFTER, HeaderValue::from_str(&later).unwrap());
        let wait = retry_after(&h).expect("a date");
        assert!(
            (Duration::from_secs(3)..=Duration::from_secs(5)).contains(&wait),
            "{wait:?}"
        );
    }
}
