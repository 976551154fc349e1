//! Dynamic schemas (a catalog's or an MCP server's, written by hand rather than derived) that
//! use the keywords where a compiled plan and the validator could part: recursion through
//! `$ref`, unions, patterns, formats, `multipleOf` on fractions, closed and open objects, and
//! keywords no plan expresses (which keep the validator, but must still register and hold).

/// Each a JSON Schema for a tool's arguments.
pub const DYNAMIC: &[&str] = &[
    // every keyword family a plan compiles, with a recursive definition behind an option
    r##"{
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": -3, "exclusiveMaximum": 7, "multipleOf": 2},
            "x": {"type": "number", "exclusiveMinimum": 0, "maximum": 1.5},
            "s": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-c]+$"},
            "e": {"enum": ["a", "b", 1, null, 2.5, {"k": [1]}]},
            "c": {"const": 3},
            "k": {"oneOf": [{"const": "x", "description": "X"}, {"const": "y"}]},
            "arr": {"type": "array", "items": {"type": "integer", "maximum": 3},
                    "minItems": 1, "maxItems": 3},
            "obj": {"type": "object", "properties": {"a": {"type": "string"}},
                    "required": ["a"], "additionalProperties": false},
            "map": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0},
                    "maxProperties": 2},
            "opt": {"anyOf": [{"$ref": "#/$defs/P"}, {"type": "null"}]},
            "t": {"type": ["string", "null"], "maxLength": 1}
        },
        "required": ["n", "s"],
        "$defs": {"P": {"type": "object", "properties": {
            "v": {"type": "boolean"}, "next": {"$ref": "#/$defs/P"}}}}
    }"##,
    // a recursive tree through the root itself, unions of objects, formats (annotations only)
    r##"{
        "type": "object",
        "properties": {
            "label": {"type": "string", "format": "email"},
            "when": {"type": "string", "format": "date-time"},
            "children": {"type": "array", "items": {"$ref": "#"}, "maxItems": 3},
            "value": {"anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": "^v[0-9]+$"},
                {"type": "array", "items": {"type": "number", "multipleOf": 0.5}}
            ]},
            "pick": {"oneOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}
            ]}
        },
        "additionalProperties": false
    }"##,
    // fractions: `multipleOf` on a decimal fraction, tiny and huge bounds
    r##"{
        "type": "object",
        "properties": {
            "price": {"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 1e6},
            "ratio": {"type": "number", "multipleOf": 0.1},
            "big": {"type": "integer", "minimum": -9007199254740993, "maximum": 18446744073709551615},
            "tiny": {"type": "number", "exclusiveMinimum": 1e-300, "exclusiveMaximum": 1e-290},
            "step": {"type": "integer", "multipleOf": 3, "exclusiveMinimum": -10}
        },
        "required": ["price"],
        "minProperties": 1,
        "maxProperties": 4
    }"##,
    // BFCL's dialect after conversion: plain types, enums, nested dicts, lists of dicts
    r##"{
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "The city, e.g. San Francisco, CA"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "description": "Days ahead", "default": 1},
            "coords": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
            "filters": {"type": "array", "items": {"type": "object", "properties": {
                "field": {"type": "string"}, "op": {"type": "string", "enum": ["eq", "lt", "gt"]},
                "value": {}}, "required": ["field", "op"]}}
        },
        "required": ["location"]
    }"##,
    // keywords a plan does not express (the validator checks every call)
    r##"{
        "type": "object",
        "properties": {
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                     "items": false},
            "set": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}},
            "mode": {"type": "string"},
            "level": {"type": "integer"}
        },
        "patternProperties": {"^x-": {"type": "string", "maxLength": 3}},
        "additionalProperties": false,
        "dependentRequired": {"mode": ["level"]},
        "if": {"properties": {"mode": {"const": "strict"}}, "required": ["mode"]},
        "then": {"properties": {"level": {"minimum": 5}}},
        "not": {"required": ["forbidden"]},
        "allOf": [{"propertyNames": {"maxLength": 8}}]
    }"##,
    // patterns with backtracking potential, unicode classes, anchored and not
    r##"{
        "type": "object",
        "properties": {
            "a": {"type": "string", "pattern": "^(a+)+$"},
            "b": {"type": "string", "pattern": "(x|xy)*z"},
            "c": {"type": "string", "pattern": "^\\p{L}[\\p{L}\\d_-]{0,15}$"},
            "d": {"type": "string", "pattern": "(?i)^[a-f0-9]{8}-[a-f0-9]{4}$"},
            "e": {"type": "string", "pattern": "^(?:(?:25[0-5]|2[0-4]\\d|1?\\d?\\d)\\.){3}(?:25[0-5]|2[0-4]\\d|1?\\d?\\d)$"}
        }
    }"##,
    // a linked list and a union of a `$ref` and a type list, `definitions` (draft 7 style)
    r##"{
        "type": "object",
        "properties": {
            "head": {"$ref": "#/definitions/Node"},
            "either": {"anyOf": [{"$ref": "#/definitions/Node"}, {"type": ["integer", "boolean"]}]}
        },
        "required": ["head"],
        "definitions": {
            "Node": {"type": "object",
                     "properties": {"v": {"type": "integer"},
                                    "next": {"anyOf": [{"$ref": "#/definitions/Node"}, {"type": "null"}]}},
                     "required": ["v"], "additionalProperties": false}
        }
    }"##,
    // true/false schemas and empty objects in every position
    r##"{
        "type": "object",
        "properties": {"any": true, "never": false, "empty": {}, "list": {"items": true}},
        "additionalProperties": {"type": "boolean"}
    }"##,
];
