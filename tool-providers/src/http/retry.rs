//! When and how long to wait before sending a failed request again.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// Retries for 408/409/429/5xx answers and for connection failures and timeouts.
///
/// The wait is the server's `Retry-After` (or OpenAI's `retry-after-ms`) when it sent one and it
/// is not longer than `max_retry_after`; otherwise exponential backoff from `base_delay` with full
/// jitter, capped at `max_delay`. A `Retry-After` longer than `max_retry_after` is not waited for:
/// the error goes back to the caller at once, saying how long the server asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 turns retrying off.
    pub max_retries: u32,
    /// The first backoff step.
    pub base_delay: Duration,
    /// The longest backoff step.
    pub max_delay: Duration,
    /// The longest server-requested wait that is honoured.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Default::default()
        }
    }

    /// The backoff before retry number `retry` (0-based), without a server hint.
    pub(crate) fn backoff(&self, retry: u32) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(1u32.checked_shl(retry.min(16)).unwrap_or(u32::MAX));
        let cap = exp.min(self.max_delay);
        // Full jitter: spreads the retries of many clients hit by the same overload.
        cap.mul_f64(0.5 + fastrand::f64() * 0.5)
    }
}

/// The wait a server asked for: `retry-after-ms` (OpenAI), then `Retry-After` as seconds or as an
/// HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let raw = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = raw.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(raw).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use reqwest::header::{HeaderValue, RETRY_AFTER};

    use super::*;

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h, now), None);
        h.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(2)));
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_str(&httpdate::fmt_http_date(now + Duration::from_secs(7))).unwrap(),
        );
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(7)));
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h, now), None);
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(250)));
    }

    #[test]
    fn backoff_grows_is_capped_and_jittered_within_bounds() {
        let p = RetryPolicy::default();
        for retry in 0..10 {
            let d = p.backoff(retry);
            let cap = (p.base_delay * 2u32.pow(retry)).min(p.max_delay);
            assert!(d <= cap && d >= cap / 2, "retry {retry}: {d:?} vs {cap:?}");
        }
    }
}
