use serde_json::json;

use super::*;

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        other => panic!("not an object: {other}"),
    }
}

/// The redacted arguments, and that none of `secrets` is left in them.
fn shown(schema: &Value, args: &Value, secrets: &[&str]) -> Value {
    let schema = obj(schema.clone());
    let out = redact_secrets(&schema, args).into_owned();
    let text = out.to_string();
    for s in secrets {
        assert!(!text.contains(s), "{s} left in {text}");
    }
    out
}

#[test]
fn direct_properties_are_redacted_at_any_depth() {
    let schema = json!({"type": "object", "properties": {
        "user": {"type": "string"},
        "token": {"type": "string", "writeOnly": true},
        "pw": {"type": "string", "format": "password"},
        "auth": {"type": "object", "properties": {"key": {"type": "string", "x-secret": true}}}
    }});
    let args = json!({"user": "u", "token": "t0k", "pw": "hunter2", "auth": {"key": "k3y", "n": 1}, "extra": 2});
    assert_eq!(
        shown(&schema, &args, &["t0k", "hunter2", "k3y"]),
        json!({"user": "u", "token": REDACTED, "pw": REDACTED, "auth": {"key": REDACTED, "n": 1}, "extra": 2})
    );
    // Nothing secret present: nothing copied.
    let plain = json!({"user": "u", "auth": {"n": 1}});
    assert!(matches!(
        redact_secrets(&obj(schema), &plain),
        Cow::Borrowed(_)
    ));
}

#[test]
fn a_pydantic_optional_secret_is_redacted_and_its_null_shown() {
    // What pydantic emits for `token: Optional[SecretStr] = None`.
    let schema = json!({"type": "object", "properties": {"token": {
        "anyOf": [{"type": "string", "format": "password", "writeOnly": true}, {"type": "null"}],
        "default": null, "title": "Token"
    }}});
    assert_eq!(
        shown(&schema, &json!({"token": "sk-live-123"}), &["sk-live-123"]),
        json!({"token": REDACTED})
    );
    let none = json!({"token": null});
    assert!(matches!(
        redact_secrets(&obj(schema.clone()), &none),
        Cow::Borrowed(_)
    ));
    // An invalid value where the secret goes is hidden too.
    assert_eq!(
        shown(&schema, &json!({"token": 123_456}), &["123456"]),
        json!({"token": REDACTED})
    );
}

#[test]
fn one_of_and_all_of_branches_count() {
    let schema = json!({"type": "object", "properties": {
        "a": {"oneOf": [{"type": "integer"}, {"type": "string", "x-secret": true}]},
        "b": {"allOf": [{"type": "string"}, {"writeOnly": true}]}
    }});
    assert_eq!(
        shown(
            &schema,
            &json!({"a": "s3cret-a", "b": "s3cret-b"}),
            &["s3cret"]
        ),
        json!({"a": REDACTED, "b": REDACTED})
    );
    assert_eq!(shown(&schema, &json!({"a": 5}), &[]), json!({"a": 5}));
}

#[test]
fn array_items_and_prefix_items_are_followed() {
    let schema = json!({"type": "object", "properties": {
        "keys": {"type": "array", "items": {"type": "string", "writeOnly": true}},
        "pairs": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "value": {"type": "string", "format": "password"}
        }}},
        "tuple": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "string", "x-secret": true}]},
        "old": {"type": "array", "items": [{"type": "string"}], "additionalItems": {"writeOnly": true}}
    }});
    let args = json!({
        "keys": ["k-one", "k-two"],
        "pairs": [{"name": "n", "value": "v-secret"}],
        "tuple": ["shown", "t-secret"],
        "old": ["shown", "o-secret"]
    });
    assert_eq!(
        shown(
            &schema,
            &args,
            &["k-one", "k-two", "v-secret", "t-secret", "o-secret"]
        ),
        json!({
            "keys": [REDACTED, REDACTED],
            "pairs": [{"name": "n", "value": REDACTED}],
            "tuple": ["shown", REDACTED],
            "old": ["shown", REDACTED]
        })
    );
}

#[test]
fn refs_to_defs_and_definitions_are_resolved_against_the_root() {
    let schema = json!({
        "type": "object",
        "properties": {
            "creds": {"$ref": "#/$defs/Creds"},
            "maybe": {"anyOf": [{"$ref": "#/$defs/Creds"}, {"type": "null"}]},
            "legacy": {"$ref": "#/definitions/Pin"}
        },
        "$defs": {"Creds": {"type": "object", "properties": {
            "user": {"type": "string"},
            "password": {"$ref": "#/$defs/Password"}
        }}, "Password": {"type": "string", "writeOnly": true}},
        "definitions": {"Pin": {"type": "string", "format": "password"}}
    });
    let args = json!({
        "creds": {"user": "u", "password": "p-one"},
        "maybe": {"user": "v", "password": "p-two"},
        "legacy": "9876"
    });
    assert_eq!(
        shown(&schema, &args, &["p-one", "p-two", "9876"]),
        json!({
            "creds": {"user": "u", "password": REDACTED},
            "maybe": {"user": "v", "password": REDACTED},
            "legacy": REDACTED
        })
    );
    // A null in place of an optional secret model is not secret.
    let none = json!({"maybe": null});
    assert!(matches!(
        redact_secrets(&obj(schema), &none),
        Cow::Borrowed(_)
    ));
}

#[test]
fn additional_and_pattern_properties_apply_to_names_they_cover() {
    let schema = json!({"type": "object", "properties": {
        "env": {"type": "object", "additionalProperties": {"type": "string", "writeOnly": true}},
        "headers": {
            "type": "object",
            "properties": {"accept": {"type": "string"}},
            "patternProperties": {"^x-secret-": {"x-secret": true}},
            "additionalProperties": {"type": "string"}
        }
    }});
    let args = json!({
        "env": {"API_KEY": "env-secret"},
        "headers": {"accept": "json", "x-secret-key": "hdr-secret", "x-other": "fine"}
    });
    assert_eq!(
        shown(&schema, &args, &["env-secret", "hdr-secret"]),
        json!({
            "env": {"API_KEY": REDACTED},
            "headers": {"accept": "json", "x-secret-key": REDACTED, "x-other": "fine"}
        })
    );
}

#[test]
fn reference_cycles_end_and_recursive_schemas_follow_the_data() {
    // A ref to itself and a two-step cycle: no schema to expand forever.
    let schema = json!({
        "type": "object",
        "properties": {
            "loop": {"$ref": "#/$defs/A"},
            "tree": {"$ref": "#/$defs/Node"}
        },
        "$defs": {
            "A": {"$ref": "#/$defs/B"},
            "B": {"anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#"}, {"writeOnly": true}]},
            "Node": {"type": "object", "properties": {
                "secret": {"type": "string", "x-secret": true},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }}
        }
    });
    let args = json!({
        "loop": "l-secret",
        "tree": {"secret": "s1", "children": [{"secret": "s2", "children": [{"secret": "s3"}]}]}
    });
    assert_eq!(
        shown(&schema, &args, &["l-secret", "s1", "s2", "s3"]),
        json!({
            "loop": REDACTED,
            "tree": {"secret": REDACTED, "children": [{"secret": REDACTED, "children": [{"secret": REDACTED}]}]}
        })
    );
}

#[test]
fn a_schema_too_tangled_to_follow_hides_the_value() {
    // Each level's anyOf names the next twice: 2^30 paths to the end.
    let mut defs = serde_json::Map::new();
    for i in 0..30 {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert("d30".into(), json!({"type": "string"}));
    let schema =
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs});
    assert_eq!(
        shown(&schema, &json!({"x": "plain"}), &["plain"]),
        json!({"x": REDACTED})
    );
}

#[test]
fn broken_and_remote_refs_are_no_schema() {
    let schema = json!({"type": "object", "properties": {
        "a": {"$ref": "#/$defs/missing"},
        "b": {"$ref": "https://example.com/schema.json"},
        "c": {"$ref": "#/properties/a/$ref"}
    }});
    let args = json!({"a": 1, "b": 2, "c": 3});
    assert!(matches!(
        redact_secrets(&obj(schema), &args),
        Cow::Borrowed(_)
    ));
}

#[test]
fn a_secret_marker_anywhere_is_found_once_per_schema() {
    assert!(!has_secret_marker(&obj(
        json!({"type": "object", "properties": {"a": {"type": "string"}}})
    )));
    assert!(has_secret_marker(&obj(
        json!({"type": "object", "properties": {
            "a": {"anyOf": [{"type": "null"}, {"type": "string", "writeOnly": true}]}
        }})
    )));
    assert!(has_secret_marker(&obj(
        json!({"type": "object", "$defs": {"P": {"format": "password"}}})
    )));
    assert!(!has_secret_marker(&obj(
        json!({"type": "object", "properties": {"p": {"writeOnly": false}}})
    )));
}
