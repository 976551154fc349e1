//! What the audit trail and the previews hide: secret keys in every common spelling, properties
//! the schema marks as secret, and values whose shape gives them away, whatever their key.

use serde_json::json;
use tool_runtime::ToolSet;
use tool_runtime::definition::ToolDefinition;
use tool_runtime::executor::{REDACTED, is_secret_key, redact, redact_shapes};

/// Common names of secret arguments, in the spellings models and APIs use.
const SECRET_NAMES: &[&str] = &[
    "password",
    "Password",
    "passwd",
    "pwd",
    "user_pwd",
    "passphrase",
    "secret",
    "client_secret",
    "clientSecret",
    "token",
    "access_token",
    "refreshToken",
    "api_key",
    "apiKey",
    "api-key",
    "X-API-KEY",
    "apikey",
    "aws_access_key_id",
    "private_key",
    "privateKey",
    "signingKey",
    "credentials",
    "authorization",
    "Authorization",
    "auth",
    "auth_header",
    "bearer",
    "cookie",
    "Set-Cookie",
    "session_id",
    "sessionId",
    "credit_card",
    "creditCardNumber",
    "card_number",
    "cvv",
    "cvc",
    "ssn",
    "pin",
    "user_pin",
    "otp",
    "totp_code",
    "mfa_code",
    "jwt",
    "dsn",
    "sentry_dsn",
    "connection_string",
    "connectionString",
    "database_url",
    "DATABASE_URL",
    "db_url",
    "iban",
];

/// Names that contain a secret word's letters but are not secrets.
const PLAIN_NAMES: &[&str] = &[
    "author",
    "authority",
    "spinner",
    "pinned",
    "option",
    "topic",
    "session_count",
    "description",
    "city",
    "title",
    "keyword",
];

#[test]
fn secret_keys_are_recognised_in_every_spelling_and_plain_ones_are_not() {
    let missed: Vec<_> = SECRET_NAMES.iter().filter(|k| !is_secret_key(k)).collect();
    assert!(missed.is_empty(), "not recognised as secret: {missed:?}");
    let wrong: Vec<_> = PLAIN_NAMES.iter().filter(|k| is_secret_key(k)).collect();
    assert!(wrong.is_empty(), "plain names taken for secrets: {wrong:?}");
}

#[test]
fn values_that_look_like_credentials_are_redacted_whatever_their_key() {
    let def = ToolDefinition::new("t", "d", &json!({"type": "object"}));
    let args = json!({
        "header": "Bearer abc.def.ghi",
        "url": "postgres://admin:hunter2@db.example:5432/app?sslmode=require",
        "note": "use sk-proj-abcdefghijklmnopqrstuvwx for the call",
        "gh": "ghp_0123456789abcdefghijABCDEFGHIJ012345",
        "aws": "AKIAIOSFODNN7EXAMPLE",
        "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n-----END RSA PRIVATE KEY-----",
        "plain": "a short note about tokens and the author",
        "site": "https://example.com/path@v2"
    });
    let out = redact(&args, &def);
    let text = out.to_string();
    for secret in [
        "abc.def.ghi",
        "hunter2",
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "ghp_0123456789",
        "AKIAIOSFODNN7EXAMPLE",
        "eyJhbGciOiJIUzI1NiJ9",
        "MIIE",
    ] {
        assert!(!text.contains(secret), "{secret} survived: {text}");
    }
    assert_eq!(out["header"], format!("Bearer {REDACTED}"));
    assert_eq!(
        out["url"],
        format!("postgres://{REDACTED}@db.example:5432/app?sslmode=require")
    );
    assert_eq!(
        out["note"],
        format!("use {REDACTED} for the call"),
        "only the token goes"
    );
    assert_eq!(out["plain"], args["plain"]);
    assert_eq!(out["site"], args["site"], "a URL without user-info is kept");
    assert_eq!(redact_shapes("nothing to hide here"), None);
}

#[test]
fn properties_the_schema_marks_secret_are_redacted_at_any_depth() {
    let schema = json!({
        "type": "object",
        "properties": {
            "login": {"type": "string"},
            "word": {"type": "string", "format": "password"},
            "db": {"type": "object", "properties": {
                "handle": {"type": "string", "writeOnly": true},
                "host": {"type": "string"}
            }},
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}
        },
        "$defs": {"Item": {"type": "object", "properties": {
            "code": {"type": "string", "x-sensitive": true}
        }}}
    });
    let mut set = ToolSet::new();
    set.register_dynamic(ToolDefinition::new("connect", "Connect.", &schema), None)
        .unwrap();
    let def = set.get("connect").unwrap();
    let mut names: Vec<&str> = def.sensitive.iter().map(|s| s.as_ref()).collect();
    names.sort();
    assert_eq!(names, ["code", "handle", "word"]);
    let out = redact(
        &json!({"login": "ann", "word": "s3cret-horse", "db": {"handle": "h-77", "host": "db1"},
                "items": [{"code": "4242"}]}),
        def,
    );
    assert_eq!(
        out,
        json!({"login": "ann", "word": REDACTED, "db": {"handle": REDACTED, "host": "db1"},
               "items": [{"code": REDACTED}]})
    );
}
