//! OpenTelemetry export of the framework's spans (feature `otel`).
//!
//! The agent and the executor write plain `tracing` spans named after OpenTelemetry's GenAI
//! semantic conventions:
//!
//! ```text
//! invoke_agent {provider}        one per Agent::run / run_with_history / resume
//! ├── chat {model}               one per model request: gen_ai.provider.name,
//! │                              gen_ai.request.model, gen_ai.response.model,
//! │                              gen_ai.usage.input_tokens, gen_ai.usage.output_tokens
//! └── execute_tool {tool}        one per tool call: gen_ai.tool.name, gen_ai.tool.call.id,
//!                                the decision and the status (never the arguments)
//! ```
//!
//! This module only ships them: [`Otlp::from_env`] reads the standard variables, and
//! [`Otlp::layer`] gives a `tracing-subscriber` layer to add beside a program's own log output, or
//! [`init_from_env`] installs it alone. Spans go over OTLP/HTTP with protobuf bodies, in batches,
//! and the [`TelemetryGuard`] sends what is left when it is dropped, so a short run loses nothing.
//!
//! | variable | meaning |
//! | --- | --- |
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | the receiver's base URL (`/v1/traces` is appended); unset: no export |
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | the full traces URL, instead of the above |
//! | `OTEL_SERVICE_NAME` | the `service.name` of the spans (default: the program's own name) |
//! | `OTEL_EXPORTER_OTLP_HEADERS` | extra headers (`key=value,...`), e.g. a collector's token |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL` | must be `http/protobuf` when set: the only protocol spoken |

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tool_runtime::{ErrorCode, ToolError};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;

/// The code of an OTLP configuration that cannot be used (a malformed endpoint, another protocol).
pub const TELEMETRY_CONFIG: ErrorCode = ErrorCode::of("TELEMETRY_CONFIG");

/// The base-URL variable: set, spans are exported; unset, nothing is installed.
pub const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
const TRACES_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
const SERVICE_VAR: &str = "OTEL_SERVICE_NAME";
const PROTOCOL_VAR: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";

/// Where spans go and under which service name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Otlp {
    /// The full URL spans are posted to (`.../v1/traces`).
    pub traces_url: String,
    /// The `service.name` resource attribute.
    pub service_name: String,
}

impl Otlp {
    /// A receiver at `endpoint`, a base URL such as `http://127.0.0.1:4318` (`/v1/traces` is
    /// appended, as for `OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub fn new(endpoint: &str, service_name: impl Into<String>) -> Otlp {
        Otlp {
            traces_url: format!("{}/v1/traces", endpoint.trim_end_matches('/')),
            service_name: service_name.into(),
        }
    }

    /// The configuration the standard variables give (see the module docs), or `None` when no
    /// endpoint is set. `default_service` names the service when `OTEL_SERVICE_NAME` does not.
    pub fn from_env(default_service: &str) -> Result<Option<Otlp>, ToolError> {
        Otlp::from_vars(default_service, |k| {
            std::env::var(k).ok().filter(|v| !v.trim().is_empty())
        })
    }

    /// [`Otlp::from_env`] over any source of variables.
    pub fn from_vars(
        default_service: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Otlp>, ToolError> {
        if let Some(protocol) = var(PROTOCOL_VAR)
            && protocol.trim() != "http/protobuf"
        {
            return Err(ToolError::new(
                TELEMETRY_CONFIG,
                format!("{PROTOCOL_VAR} is {protocol:?}, but spans are only exported as OTLP/HTTP with protobuf"),
            )
            .recover(format!("unset {PROTOCOL_VAR} or set it to http/protobuf, and point the endpoint at the receiver's HTTP port (4318 by default)")));
        }
        let service = var(SERVICE_VAR).unwrap_or_else(|| default_service.to_owned());
        let otlp = match (var(TRACES_ENDPOINT_VAR), var(ENDPOINT_VAR)) {
            (Some(traces), _) => Otlp {
                traces_url: traces.trim().to_owned(),
                service_name: service,
            },
            (None, Some(base)) => Otlp::new(base.trim(), service),
            (None, None) => return Ok(None),
        };
        otlp.check()?;
        Ok(Some(otlp))
    }

    fn check(&self) -> Result<(), ToolError> {
        let url = &self.traces_url;
        let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
        let parsed = url.parse::<reqwest::Url>();
        if scheme_ok && parsed.as_ref().is_ok_and(|u| u.host_str().is_some()) {
            return Ok(());
        }
        Err(ToolError::new(
            TELEMETRY_CONFIG,
            format!("the OTLP traces endpoint {url:?} is not an http(s) URL with a host"),
        )
        .recover(format!(
            "set {ENDPOINT_VAR} to the receiver's base URL, e.g. http://127.0.0.1:4318"
        )))
    }

    /// The layer that turns this program's spans into OpenTelemetry spans and exports them, and
    /// the guard that sends the last batch when dropped. It keeps spans at `INFO` and above
    /// (the agent's and the executor's), whatever filter the program's log output has.
    pub fn layer<S>(&self) -> Result<(impl Layer<S> + use<S>, TelemetryGuard), ToolError>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        let provider = self.provider()?;
        let tracer: SdkTracer = provider.tracer("tool-calling");
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(Targets::new().with_default(LevelFilter::INFO));
        Ok((layer, TelemetryGuard { provider }))
    }

    fn provider(&self) -> Result<SdkTracerProvider, ToolError> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(self.traces_url.clone())
            .build()
            .map_err(|e| {
                ToolError::new(
                    TELEMETRY_CONFIG,
                    format!(
                        "the OTLP exporter for {} could not be built: {e}",
                        self.traces_url
                    ),
                )
                .recover(format!(
                    "check {ENDPOINT_VAR} and OTEL_EXPORTER_OTLP_HEADERS"
                ))
            })?;
        let resource = Resource::builder()
            .with_service_name(self.service_name.clone())
            .build();
        Ok(SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build())
    }
}

/// Keeps the exporter running; dropping it exports the spans not yet sent and stops it.
#[must_use = "spans are exported only while the guard lives: bind it for the whole program"]
#[derive(Debug)]
pub struct TelemetryGuard {
    provider: SdkTracerProvider,
}

impl TelemetryGuard {
    /// Sends the finished spans not yet exported now, and waits for the receiver's answer.
    pub fn flush(&self) -> Result<(), ToolError> {
        self.provider.force_flush().map_err(|e| {
            ToolError::new(
                TELEMETRY_CONFIG,
                format!("the spans could not be exported: {e}"),
            )
            .recover("check that the OTLP receiver is running and reachable")
        })
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        // the spans of the run's last moments are still in the batch: without this, a short
        // command exits before the batch's timer sends them
        if let Err(e) = self.provider.shutdown() {
            eprintln!("warning: the last spans could not be exported over OTLP: {e}");
        }
    }
}

/// Installs the OTLP export as the program's only `tracing` subscriber when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; `None`, and
/// nothing installed, when it is not. A program with its own log output adds [`Otlp::layer`] to
/// its subscriber instead.
pub fn init_from_env(default_service: &str) -> Result<Option<TelemetryGuard>, ToolError> {
    let Some(otlp) = Otlp::from_env(default_service)? else {
        return Ok(None);
    };
    let (layer, guard) = otlp.layer()?;
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::set_global_default(subscriber).map_err(|e| {
        ToolError::new(
            TELEMETRY_CONFIG,
            format!("the OTLP export could not be installed: {e}"),
        )
        .recover("add telemetry::Otlp::layer to the subscriber the program already installs")
    })?;
    Ok(Some(guard))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn no_endpoint_means_no_export() {
        assert_eq!(Otlp::from_vars("svc", vars(&[])).unwrap(), None);
        let only_name = [(SERVICE_VAR, "x")];
        assert_eq!(Otlp::from_vars("svc", vars(&only_name)).unwrap(), None);
    }

    #[test]
    fn the_base_endpoint_gets_the_traces_path_and_the_signal_endpoint_is_used_as_is() {
        let base = [(ENDPOINT_VAR, "http://127.0.0.1:4318/")];
        let otlp = Otlp::from_vars("research", vars(&base)).unwrap().unwrap();
        assert_eq!(otlp.traces_url, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(otlp.service_name, "research");
        let both = [
            (ENDPOINT_VAR, "http://a:4318"),
            (TRACES_ENDPOINT_VAR, "http://b:9/traces"),
            (SERVICE_VAR, "agents"),
        ];
        let otlp = Otlp::from_vars("research", vars(&both)).unwrap().unwrap();
        assert_eq!(otlp.traces_url, "http://b:9/traces");
        assert_eq!(otlp.service_name, "agents");
    }

    #[test]
    fn a_bad_endpoint_or_another_protocol_is_a_configuration_error() {
        for bad in [
            vec![(ENDPOINT_VAR, "127.0.0.1:4318")],
            vec![(ENDPOINT_VAR, "http://")],
            vec![(ENDPOINT_VAR, "http://a:4318"), (PROTOCOL_VAR, "grpc")],
        ] {
            let err = Otlp::from_vars("svc", vars(&bad)).unwrap_err();
            assert_eq!(err.code, TELEMETRY_CONFIG, "{bad:?}");
            assert!(err.recover_action.is_some(), "{bad:?}");
        }
        let ok = [
            (ENDPOINT_VAR, "http://a:4318"),
            (PROTOCOL_VAR, "http/protobuf"),
        ];
        assert!(Otlp::from_vars("svc", vars(&ok)).unwrap().is_some());
    }
}
