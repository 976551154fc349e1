//! HTTP clients for every provider (reqwest with rustls).
//!
//! One [`HttpClient`] speaks to any of the five APIs; its [`Provider`] decides the endpoint, the
//! authentication header and the stream framing, while the codecs decide the request and response
//! bodies. Keys come from the environment ([`ClientConfig::from_env`]) and the base URL is
//! configurable, so any OpenAI-compatible server (llama.cpp, vLLM, LM Studio, Ollama's `/v1`)
//! works with [`Provider::OpenAiChat`].
//!
//! - Non-streaming: [`HttpClient::send`] returns the JSON body and the [`Usage`] it reports.
//! - Bodies with cached declarations: [`HttpClient::send_body`] and [`HttpClient::stream_body`]
//!   take a [`RequestBody`], whose pre-serialized tool declarations are written as they are.
//! - Streaming: [`HttpClient::stream`] returns an [`EventStream`] of JSON events (server-sent
//!   events, or NDJSON for Ollama) for the codec's accumulator, with the usage they report.
//! - Failures: [`HttpError`] names the provider, the status, the provider's message, and what to
//!   do. 408/409/429/5xx and connection failures are retried per [`RetryPolicy`], honouring
//!   `Retry-After`.

mod body;
mod client;
mod error;
mod framing;
mod provider;
mod retry;
mod stream;
mod usage;

pub use body::RequestBody;
pub use client::{ClientConfig, HttpClient, Reply};
pub use error::{HttpError, HttpErrorKind};
pub use framing::{NdjsonDecoder, SseDecoder, SseEvent};
pub use provider::{Provider, ProviderApi};
pub use retry::RetryPolicy;
pub use stream::EventStream;
pub use usage::Usage;
