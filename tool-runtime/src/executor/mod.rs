//! The executor: policy, confirmation, timeouts, retries, rate limits, caching, audit.
