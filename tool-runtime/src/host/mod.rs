//! What a tool asks of whoever runs its call, beyond its arguments: to log, to put a question to
//! the person ([`CallContext::ask`](crate::CallContext::ask)), and to have the host's model
//! answer a prompt ([`CallContext::sample`](crate::CallContext::sample)).
//!
//! Whoever runs a call (an MCP server for its client, the executor with the terminal confirmer)
//! sets the context's [`host`](crate::CallContext::host) to a [`CallHost`] that can do some of
//! these things; what it cannot do is a structured error the tool handles
//! ([`ErrorCode::NOT_SUPPORTED_BY_CALLER`]). A context without a host costs nothing: logs go to
//! `tracing` only, and questions and sampling fail with that error.
//!
//! Nothing the model sends reaches a host: a question is answered by the person the host shows it
//! to, and the answer goes to the tool, never through the model's arguments.

mod logging;
mod question;
mod sampling;

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::error::{ErrorCode, ToolError};

pub(crate) use logging::trace as logging_trace;
pub use logging::{LogEntry, LogLevel};
pub use question::{DEFAULT_QUESTION_TIMEOUT, Form, FormError, Reply, form_schema};
pub use sampling::{Role, SampleMessage, SampleRequest, Sampled};

impl ErrorCode {
    /// Whoever runs the call cannot do what the tool asked of it: there is nobody to put a
    /// question to, or the client did not declare sampling. A tool can go on without it.
    pub const NOT_SUPPORTED_BY_CALLER: ErrorCode = ErrorCode::of("NOT_SUPPORTED_BY_CALLER");
    /// A question's type cannot be put as a flat form (a nested object, a list of free values):
    /// a fault of the tool, not of the person.
    pub const INVALID_FORM: ErrorCode = ErrorCode::of("INVALID_FORM");
    /// The person's accepted answer does not fit the question's type.
    pub const INVALID_ANSWER: ErrorCode = ErrorCode::of("INVALID_ANSWER");
}

/// Whoever runs a call, as the tool sees it: where its logs go, who answers its questions, whose
/// model samples. Every method has a default that does nothing or refuses, so a host implements
/// what it can.
pub trait CallHost: Send + Sync {
    /// Takes one log entry. Called on the tool's task: it must not block (queue it).
    fn log(&self, entry: LogEntry) {
        let _ = entry;
    }

    /// Puts `form` to the person and waits for their reply. The caller bounds the wait with the
    /// form's timeout and drops this future when it runs out, so a host that shows a form should
    /// take it down when dropped.
    fn ask<'a>(&'a self, form: &'a Form) -> BoxFuture<'a, Result<Reply<Value>, ToolError>> {
        let _ = form;
        Box::pin(async { Err(not_supported("there is nobody to ask a question")) })
    }

    /// Puts `form` to the person for the call `call_id`: a host shared by several calls (a
    /// server's page, an agent's turn) tells them apart by it. [`CallHost::ask`] by default.
    fn ask_for<'a>(
        &'a self,
        call_id: &'a str,
        form: &'a Form,
    ) -> BoxFuture<'a, Result<Reply<Value>, ToolError>> {
        let _ = call_id;
        self.ask(form)
    }

    /// Asks the host's model.
    fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
    ) -> BoxFuture<'a, Result<Sampled, ToolError>> {
        let _ = request;
        Box::pin(async { Err(not_supported("the caller offers no model to sample")) })
    }

    /// Who stopped the call, when its future was dropped before it finished and this host knows
    /// why (an MCP client that sent `notifications/cancelled` is `"the client"`). The executor
    /// writes it into the call's audit record; `None` reads as `"the caller"`.
    fn cancelled_by(&self) -> Option<String> {
        None
    }
}

/// A call context's host: cheap to clone, shared by the context's clones.
#[derive(Clone)]
pub struct Host(Arc<dyn CallHost>);

impl Host {
    /// A host that is `host`.
    pub fn new(host: impl CallHost + 'static) -> Self {
        Host(Arc::new(host))
    }

    /// A host shared with others.
    pub fn shared(host: Arc<dyn CallHost>) -> Self {
        Host(host)
    }

    /// The host itself.
    pub fn get(&self) -> &dyn CallHost {
        &*self.0
    }
}

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Host")
    }
}

/// The error of a host that cannot do `what`.
pub fn not_supported(what: &str) -> ToolError {
    ToolError::new(
        ErrorCode::NOT_SUPPORTED_BY_CALLER,
        format!("{what}: whoever runs this call does not offer it"),
    )
    .recover("go on without it, or tell the user what the tool needed")
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::CallContext;

    #[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
    struct Name {
        name: String,
    }

    /// Replies with what it was given, and keeps what it was asked and told.
    #[derive(Default)]
    struct Scripted {
        reply: Option<Reply<Value>>,
        asked: Mutex<Vec<Form>>,
        logs: Mutex<Vec<LogEntry>>,
    }

    impl CallHost for Scripted {
        fn log(&self, entry: LogEntry) {
            self.logs.lock().unwrap().push(entry);
        }
        fn ask<'a>(&'a self, form: &'a Form) -> BoxFuture<'a, Result<Reply<Value>, ToolError>> {
            self.asked.lock().unwrap().push(form.clone());
            let reply = self.reply.clone();
            Box::pin(async move {
                match reply {
                    Some(reply) => Ok(reply),
                    None => futures::future::pending().await,
                }
            })
        }
    }

    fn cx(host: &Arc<Scripted>) -> CallContext {
        CallContext {
            host: Some(Host::shared(host.clone())),
            ..CallContext::new("c1")
        }
    }

    #[tokio::test]
    async fn a_question_gets_the_typed_answer_or_the_persons_refusal() {
        let host = Arc::new(Scripted {
            reply: Some(Reply::Accepted(json!({"name": "Ada"}))),
            ..Default::default()
        });
        let reply = cx(&host).ask::<Name>("Who?").await.unwrap();
        assert_eq!(reply, Reply::Accepted(Name { name: "Ada".into() }));
        let form = host.asked.lock().unwrap().pop().unwrap();
        assert_eq!(form.message, "Who?");
        assert_eq!(form.schema["properties"]["name"]["type"], "string");
        assert_eq!(form.timeout, DEFAULT_QUESTION_TIMEOUT);

        for refusal in [Reply::Declined, Reply::Cancelled] {
            let host = Arc::new(Scripted {
                reply: Some(refusal.clone()),
                ..Default::default()
            });
            let reply = cx(&host).ask::<Name>("Who?").await.unwrap();
            assert_eq!(reply.action(), refusal.action());
        }

        let host = Arc::new(Scripted {
            reply: Some(Reply::Accepted(json!({"name": 7}))),
            ..Default::default()
        });
        let err = cx(&host).ask::<Name>("Who?").await.unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_ANSWER);
    }

    #[tokio::test(start_paused = true)]
    async fn a_question_nobody_answers_times_out() {
        let host = Arc::new(Scripted::default());
        let reply = cx(&host)
            .ask_within::<Name>("Who?", Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(reply, Reply::TimedOut);
    }

    #[tokio::test]
    async fn without_a_host_questions_and_sampling_are_structured_errors_and_logs_go_nowhere() {
        let cx = CallContext::new("c1");
        cx.log(LogLevel::Info, "not sent anywhere but tracing");
        let err = cx.ask::<Name>("Who?").await.unwrap_err();
        assert_eq!(err.code, ErrorCode::NOT_SUPPORTED_BY_CALLER);
        let err = cx.sample(SampleRequest::new("hi")).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::NOT_SUPPORTED_BY_CALLER);
        // a host that only takes logs refuses the rest the same way
        let host = Arc::new(Scripted::default());
        let with_host = super::tests::cx(&host);
        with_host.log(LogLevel::Warning, format_args!("{} left", 3));
        assert_eq!(
            host.logs.lock().unwrap().as_slice(),
            [LogEntry {
                level: LogLevel::Warning,
                message: "3 left".into()
            }]
        );
        let err = with_host
            .sample(SampleRequest::new("hi"))
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::NOT_SUPPORTED_BY_CALLER);
    }

    #[tokio::test]
    async fn a_type_that_is_not_a_form_is_refused_before_anyone_is_asked() {
        #[derive(Debug, Deserialize, schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Deep {
            inner: Name,
        }
        let host = Arc::new(Scripted {
            reply: Some(Reply::Declined),
            ..Default::default()
        });
        let err = cx(&host).ask::<Deep>("Deep?").await.unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_FORM);
        assert!(err.message.contains("\"inner\""), "{}", err.message);
        assert!(host.asked.lock().unwrap().is_empty());
    }
}
