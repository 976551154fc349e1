//! The catalog agent's own tools, in struct form with their authors' JSON Schemas kept verbatim
//! one written inline, one read from a file at compile time.

use serde_json::{Value, json};
use tool_runtime::{CallContext, ErrorCode, ToolError, tool, tool::Run};

/// Converts a quantity between units of length, mass or temperature (e.g. miles to kilometers,
/// pounds to kilograms, fahrenheit to celsius).
#[tool(
    read_only,
    parameters = r#"{"type":"object","properties":{"value":{"type":"number","description":"The quantity to convert."},"from_unit":{"type":"string","enum":["m","km","mi","ft","kg","lb","c","f"],"description":"The unit of value."},"to_unit":{"type":"string","enum":["m","km","mi","ft","kg","lb","c","f"],"description":"The unit wanted."}},"required":["value","from_unit","to_unit"],"additionalProperties":false}"#,
    examples = [r#"{"value": 10, "from_unit": "mi", "to_unit": "km"}"#]
)]
pub struct ConvertUnits {
    /// The quantity.
    pub value: f64,
    /// Its unit.
    pub from_unit: String,
    /// The unit wanted.
    pub to_unit: String,
}

/// The verbatim schema of `convert_units`, for tests that check it is kept byte for byte.
pub const CONVERT_UNITS_SCHEMA: &str = r#"{"type":"object","properties":{"value":{"type":"number","description":"The quantity to convert."},"from_unit":{"type":"string","enum":["m","km","mi","ft","kg","lb","c","f"],"description":"The unit of value."},"to_unit":{"type":"string","enum":["m","km","mi","ft","kg","lb","c","f"],"description":"The unit wanted."}},"required":["value","from_unit","to_unit"],"additionalProperties":false}"#;

/// What a unit measures and its factor to the base unit (m, kg); temperatures are special.
fn unit(u: &str) -> Option<(&'static str, f64)> {
    Some(match u {
        "m" => ("length", 1.0),
        "km" => ("length", 1000.0),
        "mi" => ("length", 1609.344),
        "ft" => ("length", 0.3048),
        "kg" => ("mass", 1.0),
        "lb" => ("mass", 0.453_592_37),
        "c" | "f" => ("temperature", 1.0),
        _ => return None,
    })
}

impl Run for ConvertUnits {
    type Output = Value;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<Value, ToolError> {
        let (Some((qf, ff)), Some((qt, ft))) = (unit(&self.from_unit), unit(&self.to_unit)) else {
            return Err(ToolError::new(ErrorCode::INVALID_ARGUMENTS, "unknown unit")
                .recover("use one of m, km, mi, ft, kg, lb, c, f"));
        };
        if qf != qt {
            return Err(ToolError::new(
                ErrorCode::of("INCOMPATIBLE_UNITS"),
                format!("{} is a {qf} and {} a {qt}", self.from_unit, self.to_unit),
            )
            .recover("convert between units of the same quantity"));
        }
        let result = match (self.from_unit.as_str(), self.to_unit.as_str()) {
            ("c", "f") => self.value * 9.0 / 5.0 + 32.0,
            ("f", "c") => (self.value - 32.0) * 5.0 / 9.0,
            _ => self.value * ff / ft,
        };
        let result = (result * 1e6).round() / 1e6;
        Ok(
            json!({"value": self.value, "from_unit": self.from_unit, "to_unit": self.to_unit, "result": result}),
        )
    }
}

/// Computes compound interest: the final amount and the interest earned on a principal at a
/// yearly rate over some years.
#[tool(read_only, schema = "schemas/compound_interest.json")]
pub struct CompoundInterest {
    /// The amount invested.
    pub principal: f64,
    /// Yearly rate in percent.
    pub annual_rate_percent: f64,
    /// Years.
    pub years: u32,
    /// Compounding periods per year.
    pub compounds_per_year: Option<u32>,
}

impl Run for CompoundInterest {
    type Output = Value;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<Value, ToolError> {
        let n = f64::from(self.compounds_per_year.unwrap_or(1));
        let amount = self.principal
            * (1.0 + self.annual_rate_percent / 100.0 / n).powf(n * f64::from(self.years));
        let amount = (amount * 100.0).round() / 100.0;
        Ok(
            json!({"amount": amount, "interest": ((amount - self.principal) * 100.0).round() / 100.0}),
        )
    }
}
