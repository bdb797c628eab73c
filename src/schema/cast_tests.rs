use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

/// Casts `args` against an object schema with one property `x` of schema
/// `prop`; returns the new value of `x` (or the whole args if `x` is gone)
/// and the changes.
fn cast_x(prop: Value, x: Value) -> (Value, Vec<String>) {
    let schema = obj(json!({"type": "object", "properties": {"x": prop}}));
    let mut args = json!({ "x": x });
    let notes = cast_args(&schema, &mut args);
    let out = args.get("x").cloned().unwrap_or(args);
    (out, notes.into_iter().map(|n| n.to_string()).collect())
}

fn cast_typed(ty: &str, x: Value) -> Value {
    cast_x(json!({ "type": ty }), x).0
}

#[test]
fn strings_become_integers_when_whole() {
    assert_eq!(cast_typed("integer", json!("3")), json!(3));
    assert_eq!(cast_typed("integer", json!(" 42 ")), json!(42));
    assert_eq!(cast_typed("integer", json!("3.0")), json!(3));
    assert_eq!(cast_typed("integer", json!("-7")), json!(-7));
    assert_eq!(
        cast_typed("integer", json!("18446744073709551615")),
        json!(u64::MAX)
    );
    // Left for validation to report.
    assert_eq!(cast_typed("integer", json!("2.5")), json!("2.5"));
    assert_eq!(cast_typed("integer", json!("three")), json!("three"));
    assert_eq!(cast_typed("integer", json!("NaN")), json!("NaN"));
    assert_eq!(cast_typed("integer", json!("inf")), json!("inf"));
}

#[test]
fn integral_floats_become_integers() {
    let (v, notes) = cast_x(json!({"type": "integer"}), json!(42.0));
    assert!(v.is_i64(), "{v}");
    assert_eq!(v, json!(42));
    assert_eq!(notes, ["argument `x`: number 42.0 → integer 42"]);
    assert_eq!(cast_typed("integer", json!(2.5)), json!(2.5));
    // Too large for i64: left alone (it still validates as an integer).
    assert_eq!(cast_typed("integer", json!(1e20)), json!(1e20));
    // A number field keeps its float.
    assert_eq!(cast_typed("number", json!(42.0)), json!(42.0));
}

#[test]
fn strings_become_numbers() {
    assert_eq!(cast_typed("number", json!("2.5")), json!(2.5));
    assert_eq!(cast_typed("number", json!(" -1e3 ")), json!(-1000.0));
    assert_eq!(cast_typed("number", json!("7")), json!(7));
    assert_eq!(cast_typed("number", json!("seven")), json!("seven"));
    assert_eq!(cast_typed("number", json!("NaN")), json!("NaN"));
}

#[test]
fn strings_and_zero_one_become_booleans() {
    for t in ["true", "TRUE", "yes", "On", "1", " true "] {
        assert_eq!(cast_typed("boolean", json!(t)), json!(true), "{t}");
    }
    for f in ["false", "No", "OFF", "0"] {
        assert_eq!(cast_typed("boolean", json!(f)), json!(false), "{f}");
    }
    assert_eq!(cast_typed("boolean", json!(1)), json!(true));
    assert_eq!(cast_typed("boolean", json!(0)), json!(false));
    assert_eq!(cast_typed("boolean", json!(2)), json!(2));
    assert_eq!(cast_typed("boolean", json!("maybe")), json!("maybe"));
}

#[test]
fn numbers_and_booleans_become_strings() {
    assert_eq!(cast_typed("string", json!(3)), json!("3"));
    assert_eq!(cast_typed("string", json!(2.5)), json!("2.5"));
    assert_eq!(cast_typed("string", json!(true)), json!("true"));
    assert_eq!(cast_typed("string", json!(null)), json!(null));
    assert_eq!(cast_typed("string", json!([1])), json!([1]));
}

#[test]
fn json_text_becomes_arrays_and_objects() {
    let (v, notes) = cast_x(json!({"type": "array"}), json!("[\"a\",\"b\"]"));
    assert_eq!(v, json!(["a", "b"]));
    assert_eq!(
        notes,
        [r#"argument `x`: string "[\"a\",\"b\"]" → array ["a","b"]"#]
    );
    assert_eq!(cast_typed("object", json!(" {\"k\": 1} ")), json!({"k": 1}));
    // The wrong container, or not JSON: left alone.
    assert_eq!(
        cast_typed("array", json!("{\"k\": 1}")),
        json!("{\"k\": 1}")
    );
    assert_eq!(cast_typed("object", json!("[1]")), json!("[1]"));
    assert_eq!(cast_typed("array", json!("a,b")), json!("a,b"));
}

#[test]
fn parsed_json_text_is_cast_recursively() {
    let prop = json!({"type": "array", "items": {"type": "integer"}});
    let (v, notes) = cast_x(prop, json!("[\"1\", 2]"));
    assert_eq!(v, json!([1, 2]));
    assert_eq!(notes.len(), 2);
    assert_eq!(notes[1], "argument `x.0`: string \"1\" → integer 1");
}

#[test]
fn enum_strings_match_ignoring_case() {
    let prop = json!({"type": "string", "enum": ["warm", "cold"]});
    let (v, notes) = cast_x(prop.clone(), json!("Warm"));
    assert_eq!(v, json!("warm"));
    assert_eq!(notes, ["argument `x`: string \"Warm\" → string \"warm\""]);
    assert_eq!(cast_x(prop, json!("hot")).0, json!("hot"));
    // Ambiguous: left alone.
    let prop = json!({"enum": ["A", "a"]});
    assert_eq!(cast_x(prop, json!("A ")).0, json!("A "));
    // Non-string options match their JSON text.
    assert_eq!(cast_x(json!({"enum": [1, 2]}), json!("2")).0, json!(2));
    assert_eq!(
        cast_x(json!({"enum": [null]}), json!("NULL")).0,
        json!(null)
    );
}

#[test]
fn type_lists_cast_only_values_matching_none() {
    let nullable = json!({"type": ["integer", "null"]});
    assert_eq!(cast_x(nullable.clone(), json!(null)).0, json!(null));
    assert_eq!(cast_x(nullable.clone(), json!("5")).0, json!(5));
    assert_eq!(cast_x(nullable, json!(7)).1, Vec::<String>::new());
    let either = json!({"type": ["string", "integer"]});
    assert_eq!(cast_x(either.clone(), json!("5")).0, json!("5"));
    assert_eq!(cast_x(either, json!(true)).0, json!("true"));
    // First listed type that casts wins.
    assert_eq!(
        cast_x(json!({"type": ["boolean", "integer"]}), json!("1")).0,
        json!(true)
    );
}

#[test]
fn branching_and_referencing_schemas_are_left_alone() {
    for prop in [
        json!({"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        json!({"oneOf": [{"type": "integer"}]}),
        json!({"allOf": [{"type": "integer"}]}),
        json!({"$ref": "#/$defs/n", "type": "integer"}),
    ] {
        let (v, notes) = cast_x(prop.clone(), json!("3"));
        assert_eq!(v, json!("3"), "{prop}");
        assert!(notes.is_empty(), "{prop}");
    }
}

#[test]
fn keys_are_cleaned_and_matched_ignoring_case() {
    let schema = obj(json!({"type": "object", "properties": {
        "City": {"type": "string"}, "days": {"type": "integer"}, "unit": {}
    }}));
    let mut args = json!({"City= ": "Oslo", "DAYS": "3", " unit =": "c"});
    let notes = cast_args(&schema, &mut args);
    assert_eq!(args, json!({"City": "Oslo", "days": 3, "unit": "c"}));
    let notes: Vec<String> = notes.iter().map(ToString::to_string).collect();
    assert!(
        notes.contains(&"argument `City`: renamed argument `City= ` → `City`".to_owned()),
        "{notes:?}"
    );
    assert!(notes.contains(&"argument `days`: string \"3\" → integer 3".to_owned()));
}

#[test]
fn key_matching_never_overwrites_or_guesses() {
    let schema = obj(json!({"type": "object", "properties": {
        "city": {}, "name": {}, "Name": {}
    }}));
    // `city` is already there; `NAME` matches two properties.
    let mut args = json!({"city": 1, "City": 2, "NAME": 3, "other=": 4});
    let notes = cast_args(&schema, &mut args);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(args, json!({"city": 1, "City": 2, "NAME": 3, "other=": 4}));
}

#[test]
fn closed_objects_drop_unknown_keys() {
    let schema = obj(json!({"type": "object", "properties": {"a": {}},
        "additionalProperties": false}));
    let mut args = json!({"a": 1, "b": 2, "c/d": 3});
    let notes = cast_args(&schema, &mut args);
    assert_eq!(args, json!({"a": 1}));
    assert_eq!(
        notes,
        [
            CastNote {
                pointer: "/b".into(),
                change: "dropped unknown argument `b`".into()
            },
            CastNote {
                pointer: "/c~1d".into(),
                change: "dropped unknown argument `c/d`".into()
            },
        ]
    );
}

#[test]
fn open_objects_and_pattern_properties_keep_unknown_keys() {
    let open = obj(json!({"type": "object", "properties": {"a": {}}}));
    let mut args = json!({"b": 2});
    assert!(cast_args(&open, &mut args).is_empty());
    assert_eq!(args, json!({"b": 2}));
    let patterned = obj(json!({"type": "object", "properties": {"a": {}},
        "patternProperties": {"^x_": {}}, "additionalProperties": false}));
    let mut args = json!({"x_1": 2});
    assert!(cast_args(&patterned, &mut args).is_empty());
}

#[test]
fn additional_property_schemas_cast_extra_values() {
    let schema = obj(json!({"type": "object", "additionalProperties": {"type": "integer"}}));
    let mut args = json!({"a": "1", "b": 2});
    cast_args(&schema, &mut args);
    assert_eq!(args, json!({"a": 1, "b": 2}));
}

#[test]
fn nested_objects_and_arrays_are_cast() {
    let schema = obj(json!({"type": "object", "properties": {
        "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}},
                 "additionalProperties": false},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}],
                 "items": {"type": "boolean"}},
        "tuple": {"type": "array", "items": [{"type": "integer"}]}
    }}));
    let mut args = json!({
        "opts": {"Deep": "on", "junk": 1},
        "ids": ["1", 2, "3.0"],
        "pair": [5, "1.5", "no"],
        "tuple": ["1", "2"]
    });
    let notes = cast_args(&schema, &mut args);
    assert_eq!(
        args,
        json!({
            "opts": {"deep": true},
            "ids": [1, 2, 3],
            "pair": ["5", 1.5, false],
            "tuple": [1, "2"]
        })
    );
    let pointers: Vec<&str> = notes.iter().map(|n| n.pointer.as_str()).collect();
    assert!(pointers.contains(&"/opts/junk"), "{pointers:?}");
    assert!(pointers.contains(&"/ids/2"), "{pointers:?}");
    assert!(pointers.contains(&"/pair/2"), "{pointers:?}");
}

#[test]
fn double_encoded_args_are_parsed() {
    let schema = obj(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
    let mut args = json!("{\"n\": \"4\"}");
    cast_args(&schema, &mut args);
    assert_eq!(args, json!({"n": 4}));
}

#[test]
fn weird_inputs_do_not_panic() {
    let schemas = [
        json!({}),
        json!({"type": 5}),
        json!({"type": ["nonsense", 3]}),
        json!({"properties": 3, "items": "x", "enum": 4, "prefixItems": {}}),
        json!({"type": "object", "properties": {"a": true, "b": false, "c": 1}}),
        json!({"type": "array", "items": [true, {"type": "integer"}]}),
        json!({"type": ["string", "integer"], "enum": [1, "a"]}),
        json!({"type": "integer", "enum": ["x"]}),
    ];
    let inputs = [
        json!(null),
        json!("x"),
        json!(3),
        json!([1, "2", {"a": "3"}]),
        json!({"a": 1, "b": [], "c": {}}),
        json!("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["),
    ];
    for s in &schemas {
        for i in &inputs {
            let mut v = i.clone();
            cast_args(&obj(s.clone()), &mut v);
            let once = v.clone();
            assert!(cast_args(&obj(s.clone()), &mut v).is_empty(), "{s} {i}");
            assert_eq!(v, once);
        }
    }
}

#[test]
fn notes_shorten_long_values() {
    let long = "9".repeat(200);
    let (_, notes) = cast_x(json!({"type": "number"}), json!(long));
    assert_eq!(notes.len(), 1);
    assert!(notes[0].chars().count() < 200, "{}", notes[0]);
    assert!(notes[0].contains('…'));
}

// --- properties --------------------------------------------------------

/// A schema exercising every cast rule.
fn prop_schema() -> JsonObject {
    obj(json!({"type": "object", "properties": {
        "i": {"type": "integer"},
        "n": {"type": "number"},
        "b": {"type": "boolean"},
        "s": {"type": "string"},
        "e": {"type": "string", "enum": ["warm", "cold"]},
        "o": {"type": ["integer", "null"]},
        "l": {"type": "array", "items": {"type": "integer"}},
        "d": {"type": "object", "properties": {"k": {"type": "boolean"}},
              "additionalProperties": false}
    }, "additionalProperties": false}))
}

/// Arbitrary JSON, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[ a-zA-Z0-9.=\\-]{0,8}".prop_map(Value::from),
        prop::sample::select(vec![
            "3",
            "3.0",
            "2.5",
            "yes",
            "Off",
            "WARM",
            "cold",
            "[1,\"2\"]",
            "{\"K\":\"on\"}",
            " 7 ",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "i", "n", "b", "s", "e", "o", "l", "d", "k", "K", "I ", "N=", "zz"
                ])
                .prop_map(str::to_owned),
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Objects with the schema's keys (and near misses) holding sloppy values.
fn sloppy_args() -> impl Strategy<Value = Value> {
    let keys = prop::sample::select(vec![
        "i", "n", "b", "s", "e", "o", "l", "d", "I ", "N=", "zz",
    ]);
    prop_oneof![
        any_json(),
        prop::collection::btree_map(keys.prop_map(str::to_owned), any_json(), 0..6)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
    ]
}

/// Objects that already validate against [`prop_schema`], built field by
/// field (including strings that look like numbers or booleans, and
/// integral floats for the integer field).
fn valid_args() -> impl Strategy<Value = Value> {
    let int = prop_oneof![
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(|f| Value::from(f.round())),
    ];
    let num = prop_oneof![
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from)
    ];
    let text = prop_oneof![
        ".{0,6}".prop_map(Value::from),
        prop::sample::select(vec!["3", "true", "[1]", "Warm"]).prop_map(Value::from),
    ];
    let fields = (
        prop::option::of(int),
        prop::option::of(num),
        prop::option::of(any::<bool>().prop_map(Value::from)),
        prop::option::of(text),
        prop::option::of(prop::sample::select(vec!["warm", "cold"]).prop_map(Value::from)),
        prop::option::of(prop::option::of(any::<i64>()).prop_map(Value::from)),
        prop::option::of(prop::collection::vec(any::<i64>(), 0..3).prop_map(Value::from)),
        prop::option::of(prop::option::of(any::<bool>()).prop_map(|k| match k {
            Some(k) => json!({ "k": k }),
            None => json!({}),
        })),
    );
    fields.prop_map(|(i, n, b, s, e, o, l, d)| {
        let pairs = [
            ("i", i),
            ("n", n),
            ("b", b),
            ("s", s),
            ("e", e),
            ("o", o),
            ("l", l),
            ("d", d),
        ];
        Value::Object(
            pairs
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
                .collect(),
        )
    })
}

/// Equal as JSON, numbers compared by value (`42.0` and `42` are the same).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

proptest! {
    #[test]
    fn casting_is_idempotent(args in sloppy_args()) {
        let schema = prop_schema();
        let mut once = args;
        cast_args(&schema, &mut once);
        let mut twice = once.clone();
        let notes = cast_args(&schema, &mut twice);
        prop_assert_eq!(&twice, &once);
        prop_assert!(notes.is_empty(), "{:?}", notes);
    }

    #[test]
    fn valid_values_keep_their_meaning(args in valid_args()) {
        let schema = prop_schema();
        let validator = jsonschema::validator_for(&Value::Object(schema.clone()))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(validator.is_valid(&args), "generator made {}", args);
        let mut cast = args.clone();
        cast_args(&schema, &mut cast);
        prop_assert!(same(&cast, &args), "{} -> {}", args, cast);
        prop_assert!(validator.is_valid(&cast));
    }

    #[test]
    fn stringified_integers_cast_back(i in any::<i64>(), u in any::<u64>()) {
        prop_assert_eq!(cast_typed("integer", Value::from(i.to_string())), Value::from(i));
        prop_assert_eq!(cast_typed("integer", Value::from(u.to_string())), Value::from(u));
    }

    #[test]
    fn stringified_numbers_cast_back(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        let back = cast_typed("number", Value::from(f.to_string()));
        prop_assert_eq!(back.as_f64(), Some(f));
    }

    #[test]
    fn stringified_booleans_cast_back(b in any::<bool>()) {
        prop_assert_eq!(cast_typed("boolean", Value::from(b.to_string())), Value::from(b));
    }
}

#[test]
fn a_cast_of_a_secret_value_notes_only_its_types() {
    let (out, notes) = cast_x(json!({"type": "string", "writeOnly": true}), json!(987_654));
    assert_eq!(out, json!("987654"));
    assert_eq!(notes, ["argument `x`: integer → string"]);
    let (_, notes) = cast_x(json!({"type": "integer", "x-secret": true}), json!("4321"));
    assert!(notes.iter().all(|n| !n.contains("4321")), "{notes:?}");
}
