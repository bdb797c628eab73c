use serde_json::{Value, json};

use super::*;

/// The problems of `args` against `schema`, as their `Display` lines.
fn problems(schema: Value, args: Value) -> Vec<String> {
    let Value::Object(schema) = schema else {
        panic!("test schema must be an object");
    };
    let validator = jsonschema::validator_for(&Value::Object(schema.clone())).expect("schema");
    describe_errors(&schema, &validator, &args)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// One property `x` with schema `prop`, given `x`.
fn about_x(prop: Value, x: Value) -> Vec<String> {
    problems(
        json!({"type": "object", "properties": {"x": prop}}),
        json!({ "x": x }),
    )
}

#[test]
fn wrong_type_names_expected_and_got() {
    let schema = json!({"type": "object", "properties": {"count": {"type": "integer"}}});
    let validator = jsonschema::validator_for(&schema).expect("schema");
    let Value::Object(schema) = schema else {
        unreachable!()
    };
    let found = describe_errors(&schema, &validator, &json!({"count": "three"}));
    assert_eq!(
        found,
        [ArgProblem {
            pointer: "/count".into(),
            message: "expected integer, got \"three\"".into()
        }]
    );
    assert_eq!(
        found[0].to_string(),
        "argument `count`: expected integer, got \"three\""
    );
}

#[test]
fn type_lists_are_joined_with_or() {
    assert_eq!(
        about_x(json!({"type": ["integer", "null"]}), json!("s")),
        ["argument `x`: expected null or integer, got \"s\""]
    );
}

#[test]
fn missing_required_points_at_the_object() {
    let schema = json!({"type": "object", "properties": {
        "path": {"type": "string"},
        "opts": {"type": "object", "required": ["mode"]}
    }, "required": ["path"]});
    let found = problems(schema, json!({"opts": {}}));
    assert_eq!(
        found,
        [
            "missing required argument `path`",
            "argument `opts`: missing required argument `mode`"
        ]
    );
}

#[test]
fn unknown_arguments_list_the_known_ones() {
    let schema = json!({"type": "object", "properties": {"a": {}, "b": {}},
        "additionalProperties": false});
    assert_eq!(
        problems(schema, json!({"a": 1, "foo": 2, "bar": 3})),
        [
            "unknown argument `bar`; known arguments: a, b",
            "unknown argument `foo`; known arguments: a, b"
        ]
    );
}

#[test]
fn unknown_arguments_behind_a_ref_list_the_referenced_properties() {
    let schema = json!({"type": "object",
        "$defs": {"p": {"type": "object", "properties": {"x": {}}, "additionalProperties": false}},
        "properties": {"inner": {"$ref": "#/$defs/p"}}});
    assert_eq!(
        problems(schema, json!({"inner": {"y": 1}})),
        ["argument `inner`: unknown argument `y`; known arguments: x"]
    );
    let empty = json!({"type": "object", "additionalProperties": false});
    assert_eq!(
        problems(empty, json!({"y": 1})),
        ["unknown argument `y`; known arguments: none"]
    );
}

#[test]
fn enum_and_const_list_what_is_allowed() {
    assert_eq!(
        about_x(json!({"enum": ["r", "w"]}), json!("x")),
        ["argument `x`: must be one of \"r\", \"w\"; got \"x\""]
    );
    assert_eq!(
        about_x(json!({"const": 5}), json!(4)),
        ["argument `x`: must be 5; got 4"]
    );
}

#[test]
fn numeric_limits_are_stated() {
    let cases = [
        (json!({"minimum": 3}), json!(1), "must be at least 3; got 1"),
        (json!({"maximum": 3}), json!(9), "must be at most 3; got 9"),
        (
            json!({"exclusiveMinimum": 3}),
            json!(3),
            "must be greater than 3; got 3",
        ),
        (
            json!({"exclusiveMaximum": 3}),
            json!(3),
            "must be less than 3; got 3",
        ),
        (
            json!({"multipleOf": 2}),
            json!(3),
            "must be a multiple of 2; got 3",
        ),
    ];
    for (prop, x, want) in cases {
        assert_eq!(about_x(prop, x), [format!("argument `x`: {want}")]);
    }
}

#[test]
fn length_count_and_pattern_limits_are_stated() {
    let cases = [
        (
            json!({"minLength": 3}),
            json!("ab"),
            "must be at least 3 characters long; got 2",
        ),
        (
            json!({"maxLength": 1}),
            json!("éé"),
            "must be at most 1 characters long; got 2",
        ),
        (
            json!({"minItems": 2}),
            json!([1]),
            "must have at least 2 items; got 1",
        ),
        (
            json!({"maxItems": 0}),
            json!([1]),
            "must have at most 0 items; got 1",
        ),
        (
            json!({"minProperties": 1}),
            json!({}),
            "must have at least 1 keys; got 0",
        ),
        (
            json!({"maxProperties": 0}),
            json!({"a": 1}),
            "must have at most 0 keys; got 1",
        ),
        (
            json!({"pattern": "^[a-z]+$"}),
            json!("A1"),
            "must match the pattern `^[a-z]+$`; got \"A1\"",
        ),
        (
            json!({"uniqueItems": true}),
            json!([1, 1]),
            "must not contain the same item twice",
        ),
    ];
    for (prop, x, want) in cases {
        assert_eq!(
            about_x(prop.clone(), x),
            [format!("argument `x`: {want}")],
            "{prop}"
        );
    }
}

#[test]
fn other_kinds_fall_back_to_the_crate_message() {
    let found = about_x(json!({"not": {"type": "string"}}), json!("s"));
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with("argument `x`: "), "{found:?}");
    assert!(found[0].len() > "argument `x`: ".len(), "{found:?}");
}

#[test]
fn every_problem_is_reported() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "boolean"}
    }, "required": ["c"]});
    assert_eq!(problems(schema, json!({"a": "x", "b": 2})).len(), 3);
}

#[test]
fn long_values_are_shortened() {
    let long = "z".repeat(500);
    let found = about_x(json!({"type": "integer"}), json!(long));
    assert_eq!(found.len(), 1);
    assert!(found[0].len() < 200, "{}", found[0]);
}

#[test]
fn pointers_in_nested_schemas_resolve_through_arrays() {
    let schema = json!({"type": "object", "properties": {"t": {"type": "array",
        "prefixItems": [{"type": "object", "properties": {"q": {}}, "additionalProperties": false}]}}});
    assert_eq!(
        problems(schema, json!({"t": [{"r": 1}]})),
        ["argument `t.0`: unknown argument `r`; known arguments: q"]
    );
}

#[test]
fn false_schemas_on_a_value_say_it_is_not_allowed() {
    assert_eq!(
        about_x(json!(false), json!({"y": 1})),
        ["argument `x`: is not allowed here"]
    );
}

#[test]
fn every_key_of_a_closed_object_without_properties_is_unknown() {
    let schema = json!({"type": "object", "properties": {
        "o": {"type": "object", "additionalProperties": false}
    }});
    assert_eq!(
        problems(schema, json!({"o": {"p": 1, "q": 2}})),
        [
            "argument `o`: unknown argument `p`; known arguments: none",
            "argument `o`: unknown argument `q`; known arguments: none"
        ]
    );
}

#[test]
fn messages_never_quote_a_secret_value() {
    let secret = json!({"type": "string", "writeOnly": true, "pattern": "^sk-", "maxLength": 8});
    for found in [
        about_x(secret.clone(), json!("hunter2-long")),
        about_x(secret.clone(), json!(123_456)),
        about_x(
            json!({"anyOf": [{"type": "string", "format": "password", "enum": ["a"]}, {"type": "null"}]}),
            json!("hunter2-long"),
        ),
    ] {
        assert!(!found.is_empty());
        for m in &found {
            assert!(!m.contains("hunter2") && !m.contains("123456"), "{m}");
        }
    }
    // The limits are still told; only the value is hidden.
    let found = about_x(secret, json!("hunter2-long"));
    assert!(
        found
            .iter()
            .any(|m| m.contains("at most 8 characters long; got 12")),
        "{found:?}"
    );
    assert!(found.iter().any(|m| m.contains("[redacted]")), "{found:?}");
}
