//! The `Tool` trait the `#[tool]` macro implements, the `Run` trait struct-form tools implement,
//! and the call context with its extractors (in the spirit of axum's `State<T>`).

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};
use crate::id::SharedId;

/// A tool: a canonical definition, a typed argument type, and a body.
///
/// Implemented by `#[tool]`; implement it by hand only when the macro cannot express the tool.
/// The methods are associated functions, not methods: a tool is a type, and each call receives its
/// own validated arguments, so no state leaks between calls except through [`State`].
pub trait Tool: Send + Sync + 'static {
    /// The arguments the model sends, after validation.
    type Args: DeserializeOwned + Serialize + Send + Sync + 'static;
    /// What a successful call returns.
    type Output: Serialize + Send + 'static;

    /// The tool's name, known at compile time. `#[tool]` always sets it; `toolset!` compares
    /// these to refuse duplicate names at compile time. Empty means "known only at run time"
    /// (hand-written impls may leave it), and registration still refuses duplicates then.
    const NAME: &'static str = "";

    /// The canonical argument schema as JSON text, when it is known at compile time (verbatim
    /// schemas), so provider codecs can build declarations without run-time work. `None` means:
    /// use [`Tool::definition`].
    const SCHEMA_JSON: Option<&'static str> = None;

    /// The reader `#[tool]` generates for an argument type whose deserialization it sees whole
    /// (see `hydrate::plan::fields`): the fastest hydration path. `None` (the default, and for
    /// hand-written impls) keeps the guard, which works for any argument type.
    #[doc(hidden)]
    const __READER: Option<crate::__private::fast::ReaderOf<Self::Args>> = None;

    /// The guard ([`Plan::from_str`](crate::__private::Plan::from_str)), which hydrates any
    /// argument type on the fast path. `#[tool]` sets it to `None` where its generated reader
    /// reads every call (a derived schema), so that the guard is not compiled for that tool.
    #[doc(hidden)]
    const __GUARD: Option<crate::__private::fast::GuardOf<Self::Args>> =
        Some(crate::__private::fast::guard::<Self::Args>());

    /// The canonical definition, built once on first use.
    fn definition() -> &'static ToolDefinition;

    /// Runs the tool with validated arguments.
    fn call(
        args: Self::Args,
        cx: &CallContext,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;

    /// Injected state the tool needs, checked when it is registered so that a missing
    /// `State<T>` fails at start-up rather than on the first call.
    fn required_state() -> Vec<StateRequirement> {
        Vec::new()
    }
}

/// The body of a struct-form tool: `#[tool] struct GetWeather { .. }` plus `impl Run for GetWeather`.
///
/// The struct's fields are the arguments; `run` consumes the validated instance.
pub trait Run: Sized + Send + 'static {
    /// What a successful call returns.
    type Output: Serialize + Send + 'static;
    /// The body's error; anything convertible into a [`ToolError`].
    type Error: Into<ToolError>;

    /// Runs the tool.
    fn run(
        self,
        cx: &CallContext,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;
}

/// Who started a call, recorded in the audit trail (and shown in the activity feed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Initiator {
    /// A model asked for it.
    #[default]
    Model,
    /// A person asked for it directly (command line, UI).
    User,
    /// The application itself (a schedule, a chain).
    System,
}

/// The name of the credential a call was authenticated with (a token's role such as `agent` or
/// `host`, or an application's own name for a client). The executor bounds how many operations
/// of one credential may wait for a person (`ExecutorConfig::max_pending_per_credential`), so a
/// client that opens a new session for every call still cannot fill the approvers' queue and
/// lock out the others. A server puts it in its requests' extensions for the routes that build a
/// [`CallContext`] from a request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Credential(SharedId);

impl Credential {
    /// A credential of this name.
    pub fn new(name: impl Into<SharedId>) -> Self {
        Credential(name.into())
    }

    /// Its name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

/// Application state shared with tools, keyed by type.
#[derive(Clone, Default)]
pub struct Extensions {
    map: HashMap<TypeId, (Arc<dyn Any + Send + Sync>, &'static str)>,
}

impl Extensions {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the value of type `T`.
    pub fn insert<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        self.map
            .insert(TypeId::of::<T>(), (Arc::new(value), type_name::<T>()));
    }

    /// The value of type `T`, if present.
    pub fn get<T: Clone + Send + Sync + 'static>(&self) -> Option<&T> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|(v, _)| v.downcast_ref::<T>())
    }

    /// Whether a value with this type id is present.
    pub fn contains(&self, id: TypeId) -> bool {
        self.map.contains_key(&id)
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.map.values().map(|(_, name)| name))
            .finish()
    }
}

/// A piece of injected state a tool needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateRequirement {
    /// The state's type.
    pub type_id: TypeId,
    /// Its name, for error messages.
    pub type_name: &'static str,
}

impl StateRequirement {
    /// The requirement for `T`.
    pub fn of<T: 'static>() -> Self {
        StateRequirement {
            type_id: TypeId::of::<T>(),
            type_name: type_name::<T>(),
        }
    }
}

/// Everything about one call that is not an argument: ids, session, who started it, and the
/// application state. Tools receive it by reference or through extractors.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// The provider's call id (or a generated stable one).
    pub call_id: SharedId,
    /// Ties every record of one user request together.
    pub correlation_id: SharedId,
    /// The session the call belongs to, if any.
    pub session: Option<String>,
    /// Who started the call.
    pub initiator: Initiator,
    /// The credential the call was authenticated with, if the caller was authenticated. Calls
    /// without one (in-process, stdio) have no per-credential bound on what they park.
    pub credential: Option<Credential>,
    /// Shared application state.
    pub state: Arc<Extensions>,
    /// Where the tool's progress reports go ([`CallContext::report_progress`]), when whoever
    /// runs the call listens for them.
    pub progress: Option<crate::progress::Reporter>,
    /// Whoever runs the call, for what the tool asks of it beyond progress: logging, questions to
    /// the person, sampling the host's model ([`crate::host`]). `None`: logs go to `tracing`
    /// only, and questions and sampling are refused with a structured error.
    pub host: Option<crate::host::Host>,
    /// Marks in the store, just before the body of a tool that is neither read-only nor
    /// idempotent runs, that it started ([`crate::store::CallStart`], under the correlation
    /// id), so that whoever resumes the call's run can tell a call that never ran from one
    /// whose outcome was lost with its process. An agent that checkpoints its runs sets it. A
    /// call whose mark cannot be written is not run.
    pub record_start: bool,
}

impl CallContext {
    /// Reports how far the call is to whoever waits on it (an MCP client that asked for progress
    /// gets `notifications/progress`); nothing happens when nobody listens.
    pub fn report_progress(&self, progress: crate::progress::Progress) {
        if let Some(reporter) = &self.progress {
            reporter.report_for(&self.call_id, progress);
        }
    }

    /// Writes `message` to the call's log: a `tracing` event (target `tool_runtime::tool_log`,
    /// with the call id) and, when whoever runs the call takes logs, an entry for it (an MCP
    /// client gets `notifications/message` at or above the level it set).
    pub fn log(&self, level: crate::host::LogLevel, message: impl fmt::Display) {
        crate::host::logging_trace(level, &self.call_id, &message);
        if let Some(host) = &self.host {
            host.get().log(crate::host::LogEntry {
                level,
                message: message.to_string(),
            });
        }
    }

    /// Asks the person `message` with the form of `Q` (see [`crate::host`] for the types that
    /// can be a form) and waits for their reply, at most
    /// [`DEFAULT_QUESTION_TIMEOUT`](crate::host::DEFAULT_QUESTION_TIMEOUT).
    ///
    /// The reply comes from the person whoever runs the call shows the form to (an MCP host's
    /// user through elicitation, the terminal), never from the model. Errors: nobody to ask
    /// ([`ErrorCode::NOT_SUPPORTED_BY_CALLER`]), `Q` is not a flat form
    /// ([`ErrorCode::INVALID_FORM`]), the accepted answer does not fit `Q`
    /// ([`ErrorCode::INVALID_ANSWER`]).
    ///
    /// A question is not a confirmation: the executor's policy confirms calls before they run,
    /// and a client may answer a form on its own, so a tool does not use a question to approve
    /// its own effects. The executor keeps the results of read-only tools for a while (its
    /// cache), so the result of a read-only tool that asks is reused without asking again until
    /// it expires; the tool's own timeout bounds the wait as well.
    pub async fn ask<Q>(
        &self,
        message: impl Into<String>,
    ) -> Result<crate::host::Reply<Q>, ToolError>
    where
        Q: DeserializeOwned + schemars::JsonSchema,
    {
        self.ask_within(message, crate::host::DEFAULT_QUESTION_TIMEOUT)
            .await
    }

    /// [`CallContext::ask`], waiting at most `timeout` for the reply.
    pub async fn ask_within<Q>(
        &self,
        message: impl Into<String>,
        timeout: std::time::Duration,
    ) -> Result<crate::host::Reply<Q>, ToolError>
    where
        Q: DeserializeOwned + schemars::JsonSchema,
    {
        use crate::host::Reply;
        let schema = crate::host::form_schema::<Q>().map_err(|e| {
            ToolError::new(
                ErrorCode::INVALID_FORM,
                format!("the question {} cannot be asked: {e}", type_name::<Q>()),
            )
        })?;
        let Some(host) = &self.host else {
            return Err(crate::host::not_supported(
                "there is nobody to ask a question",
            ));
        };
        let form = crate::host::Form {
            message: message.into(),
            schema,
            timeout,
        };
        let reply =
            match tokio::time::timeout(timeout, host.get().ask_for(&self.call_id, &form)).await {
                Ok(reply) => reply?,
                Err(_) => return Ok(Reply::TimedOut),
            };
        Ok(match reply {
            Reply::Accepted(value) => {
                Reply::Accepted(serde_json::from_value(value).map_err(|e| {
                    ToolError::new(
                        ErrorCode::INVALID_ANSWER,
                        format!("the answer does not fit {}: {e}", type_name::<Q>()),
                    )
                })?)
            }
            Reply::Declined => Reply::Declined,
            Reply::Cancelled => Reply::Cancelled,
            Reply::TimedOut => Reply::TimedOut,
        })
    }

    /// Asks the host's model (over MCP, `sampling/createMessage` to a client that declared
    /// sampling); [`ErrorCode::NOT_SUPPORTED_BY_CALLER`] when whoever runs the call offers none.
    pub async fn sample(
        &self,
        request: crate::host::SampleRequest,
    ) -> Result<crate::host::Sampled, ToolError> {
        match &self.host {
            Some(host) => host.get().sample(&request).await,
            None => Err(crate::host::not_supported(
                "the caller offers no model to sample",
            )),
        }
    }

    /// A context with the given call id and empty state; correlation id equals the call id.
    pub fn new(call_id: impl Into<SharedId>) -> Self {
        let call_id = call_id.into();
        // every context made without state shares one empty set: no allocation per call
        static EMPTY: std::sync::OnceLock<Arc<Extensions>> = std::sync::OnceLock::new();
        CallContext {
            correlation_id: call_id.clone(),
            call_id,
            session: None,
            initiator: Initiator::default(),
            credential: None,
            state: EMPTY.get_or_init(Arc::default).clone(),
            progress: None,
            host: None,
            record_start: false,
        }
    }
}

/// Something a tool function receives from the call context instead of from the model.
/// Parameters of these types never appear in the argument schema.
pub trait FromCallContext: Sized {
    /// Extracts the value.
    fn from_call_context(cx: &CallContext) -> Result<Self, ToolError>;

    /// State that must be registered for extraction to succeed.
    fn requirement() -> Option<StateRequirement> {
        None
    }
}

/// Application state of type `T`, registered with `ToolSet::with_state`.
#[derive(Debug, Clone, Copy, Default)]
pub struct State<T>(pub T);

impl<T: Clone + Send + Sync + 'static> FromCallContext for State<T> {
    fn from_call_context(cx: &CallContext) -> Result<Self, ToolError> {
        cx.state.get::<T>().cloned().map(State).ok_or_else(|| {
            ToolError::new(
                ErrorCode::MISSING_STATE,
                format!("no state of type {} was registered", type_name::<T>()),
            )
        })
    }

    fn requirement() -> Option<StateRequirement> {
        Some(StateRequirement::of::<T>())
    }
}

impl FromCallContext for CallContext {
    fn from_call_context(cx: &CallContext) -> Result<Self, ToolError> {
        Ok(cx.clone())
    }
}

/// The provider's call id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallId(pub String);

impl FromCallContext for CallId {
    fn from_call_context(cx: &CallContext) -> Result<Self, ToolError> {
        Ok(CallId(cx.call_id.to_string()))
    }
}

/// The id tying every record of one user request together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorrelationId(pub String);

impl FromCallContext for CorrelationId {
    fn from_call_context(cx: &CallContext) -> Result<Self, ToolError> {
        Ok(CorrelationId(cx.correlation_id.to_string()))
    }
}

/// The session id, if the call belongs to one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session(pub Option<String>);

impl FromCallContext for Session {
    fn from_call_context(cx: &CallContext) -> Result<Self, ToolError> {
        Ok(Session(cx.session.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Db(&'static str);

    #[test]
    fn state_is_extracted_by_type_and_missing_state_is_a_structured_error() {
        let mut ext = Extensions::new();
        ext.insert(Db("notes"));
        let cx = CallContext {
            state: Arc::new(ext),
            ..CallContext::new("c1")
        };
        let State(db) = State::<Db>::from_call_context(&cx).unwrap();
        assert_eq!(db, Db("notes"));
        let err = State::<u32>::from_call_context(&cx).unwrap_err();
        assert_eq!(err.code, ErrorCode::MISSING_STATE);
        assert_eq!(CallId::from_call_context(&cx).unwrap().0, "c1");
    }
}
