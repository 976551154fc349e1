//! The human-centred policy: decided from the tool's safety category and the
//! configuration before anything runs. Nothing in the arguments takes part.

use crate::definition::{NoSchemaMode, Safety, ToolDefinition};
use crate::error::{ErrorCode, ToolError};

use super::config::ExecutorConfig;

/// What must happen before a call may run.
#[derive(Debug, Clone, PartialEq)]
pub enum Requirement {
    /// Refused outright (deny list, outside the allow list).
    Refused(ToolError),
    /// Runs at once.
    RunNow,
    /// A person must say yes; `first_use` when the tool's first-time gate is still closed.
    Confirm {
        /// The first-time gate must be passed as part of this confirmation.
        first_use: bool,
    },
}

/// Decides what a call of `def` needs. `gate_passed` says whether the tool's first-time gate was
/// already passed in this session (or persistently).
pub fn requirement(def: &ToolDefinition, cfg: &ExecutorConfig, gate_passed: bool) -> Requirement {
    if let Some(err) = refusal(&def.name, cfg) {
        return Requirement::Refused(err);
    }
    let gate = !gate_passed;
    let (first_use, confirm) = match def.safety {
        Safety::ReadOnly => (false, !cfg.auto_confirm_read_only),
        Safety::Create => (false, !cfg.auto_confirm_create),
        Safety::Modify => (false, true),
        Safety::External => (
            cfg.require_first_time_gate && gate,
            !cfg.auto_confirm_external,
        ),
        // no declared category: the most restrictive of all, whatever the configuration says
        Safety::Unspecified => (gate, true),
    };
    // a tool without a schema registered for human approval is always asked about
    let confirm = confirm || def.no_schema_mode() == Some(NoSchemaMode::HumanApproval);
    if confirm || first_use {
        Requirement::Confirm { first_use }
    } else {
        Requirement::RunNow
    }
}

/// The refusal of the allow and deny lists, if any. The deny list wins.
#[inline]
pub(crate) fn refusal(name: &str, cfg: &ExecutorConfig) -> Option<ToolError> {
    // most configurations have neither list: nothing to compare for them
    if cfg.deny.is_empty() && cfg.allow.is_none() {
        return None;
    }
    listed_refusal(name, cfg)
}

#[cold]
fn listed_refusal(name: &str, cfg: &ExecutorConfig) -> Option<ToolError> {
    let denied = cfg.deny.iter().any(|d| d == name);
    let not_allowed = cfg
        .allow
        .as_ref()
        .is_some_and(|allow| !allow.iter().any(|a| a == name));
    if !(denied || not_allowed) {
        return None;
    }
    let why = if denied {
        "is on the deny list"
    } else {
        "is not on the allow list"
    };
    Some(
        ToolError::new(
            ErrorCode::NOT_ALLOWED,
            format!("the tool {name:?} {why} and cannot be used"),
        )
        .recover("do not call this tool again; answer without it or tell the user it is disabled")
        .with_detail("tool", name),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(safety: Safety) -> ToolDefinition {
        let mut d = ToolDefinition::new("t", "d", &json!({"type": "object"}));
        d.safety = safety;
        d
    }

    #[test]
    fn graduated_confirmation_by_category() {
        let cfg = ExecutorConfig::default();
        assert_eq!(
            requirement(&def(Safety::ReadOnly), &cfg, false),
            Requirement::RunNow
        );
        assert_eq!(
            requirement(&def(Safety::Create), &cfg, false),
            Requirement::Confirm { first_use: false }
        );
        let auto = ExecutorConfig {
            auto_confirm_create: true,
            auto_confirm_external: true,
            ..Default::default()
        };
        assert_eq!(
            requirement(&def(Safety::Create), &auto, false),
            Requirement::RunNow
        );
        assert_eq!(
            requirement(&def(Safety::Modify), &auto, true),
            Requirement::Confirm { first_use: false }
        );
        assert_eq!(
            requirement(&def(Safety::External), &auto, false),
            Requirement::Confirm { first_use: true }
        );
        assert_eq!(
            requirement(&def(Safety::External), &auto, true),
            Requirement::RunNow
        );
        assert_eq!(
            requirement(&def(Safety::External), &cfg, true),
            Requirement::Confirm { first_use: false }
        );
        // unspecified: gated and confirmed even when everything is auto-confirmed
        assert_eq!(
            requirement(&def(Safety::Unspecified), &auto, false),
            Requirement::Confirm { first_use: true }
        );
        let no_gate = ExecutorConfig {
            require_first_time_gate: false,
            ..auto.clone()
        };
        assert_eq!(
            requirement(&def(Safety::Unspecified), &no_gate, false),
            Requirement::Confirm { first_use: true }
        );
    }

    #[test]
    fn deny_list_wins_over_allow_list() {
        let cfg = ExecutorConfig {
            allow: Some(vec!["t".into()]),
            deny: vec!["t".into()],
            ..Default::default()
        };
        let Requirement::Refused(e) = requirement(&def(Safety::ReadOnly), &cfg, true) else {
            panic!("not refused")
        };
        assert_eq!(e.code, ErrorCode::NOT_ALLOWED);
        assert!(e.message.contains("deny list"));
        let cfg = ExecutorConfig {
            allow: Some(vec!["other".into()]),
            ..Default::default()
        };
        assert!(matches!(
            requirement(&def(Safety::ReadOnly), &cfg, true),
            Requirement::Refused(_)
        ));
    }
}
