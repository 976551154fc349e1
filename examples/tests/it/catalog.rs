//! The catalog agent without a model: struct-form tools keep their verbatim schemas and run;
//! `pick` narrows hundreds of tools to the relevant few.

use std::sync::Arc;

use serde_json::json;
use tool_runtime::executor::{ApproveAll, ExecutorConfig};
use tool_runtime::{
    CallContext, ErrorCode, ToolCall, definition::SchemaOrigin, hydrate::Arguments,
};

use examples::catalog::{self, tools::CONVERT_UNITS_SCHEMA};

#[test]
fn struct_tools_keep_their_schemas_byte_for_byte() {
    let ts = catalog::toolset();
    assert!(
        ts.len() > 300,
        "the catalog has hundreds of tools: {}",
        ts.len()
    );
    let convert = ts.get("convert_units").unwrap();
    assert_eq!(convert.parameters.get(), CONVERT_UNITS_SCHEMA);
    assert_eq!(convert.schema_origin, SchemaOrigin::Verbatim);
    let interest = ts.get("compound_interest").unwrap();
    assert_eq!(interest.schema_origin, SchemaOrigin::Verbatim);
    let file: serde_json::Value =
        serde_json::from_str(include_str!("../../schemas/compound_interest.json")).unwrap();
    let kept: serde_json::Value = serde_json::from_str(interest.parameters.get()).unwrap();
    assert_eq!(kept, file);
}

#[tokio::test]
async fn pick_narrows_the_catalog_to_the_relevant_tool() {
    let ts = catalog::toolset();
    let picked = catalog::narrow(&ts, "convert 10 miles to km units", 3)
        .await
        .unwrap();
    assert!(picked.len() <= 3 && !picked.is_empty());
    assert_eq!(
        picked[0].name(),
        "convert_units",
        "{:?}",
        picked.iter().map(|c| c.name()).collect::<Vec<_>>()
    );
    let picked = catalog::narrow(
        &ts,
        "compound interest on 1000 at 5 percent for 10 years",
        3,
    )
    .await
    .unwrap();
    assert!(
        picked.iter().any(|c| c.name() == "compound_interest"),
        "{:?}",
        picked.iter().map(|c| c.name()).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn struct_tools_run_and_the_verbatim_schema_is_enforced() {
    let e = catalog::executor(Arc::new(ApproveAll), ExecutorConfig::default()).unwrap();
    let r = e
        .call(
            &ToolCall::new(
                "1",
                "convert_units",
                Arguments::Json(json!({"value": 10, "from_unit": "mi", "to_unit": "km"})),
            ),
            CallContext::default(),
        )
        .await;
    assert_eq!(r.value().unwrap()["result"], 16.09344);
    let r = e
        .call(
            &ToolCall::new(
                "2",
                "compound_interest",
                Arguments::Json(json!({"principal": 1000, "annual_rate_percent": 5, "years": 2})),
            ),
            CallContext::default(),
        )
        .await;
    assert_eq!(r.value().unwrap()["amount"], 1102.5);
    // The file schema's enum refuses 7 periods a year, with a pointer.
    let r = e
        .call(
            &ToolCall::new("3", "compound_interest", Arguments::Json(json!({"principal": 1000, "annual_rate_percent": 5, "years": 2, "compounds_per_year": 7}))),
            CallContext::default(),
        )
        .await;
    let err = r.outcome.error().unwrap();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert_eq!(err.violations[0].pointer, "/compounds_per_year");
    let r = e
        .call(
            &ToolCall::new(
                "4",
                "convert_units",
                Arguments::Json(json!({"value": 1, "from_unit": "kg", "to_unit": "km"})),
            ),
            CallContext::default(),
        )
        .await;
    assert_eq!(
        r.outcome.error().unwrap().code.as_str(),
        "INCOMPATIBLE_UNITS"
    );
    // A catalog declaration has no body here: a clear refusal, not a crash.
    let r = e
        .call(
            &ToolCall::new(
                "5",
                "triangle_properties_get",
                Arguments::Json(json!({"side1": 3, "side2": 4, "side3": 5})),
            ),
            CallContext::default(),
        )
        .await;
    assert_eq!(r.outcome.error().unwrap().code, ErrorCode::NOT_ALLOWED);
}
