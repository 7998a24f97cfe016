//! Property tests: generated types and values survive value → JSON → value, the JSON
//! validates against the generated schema, and arbitrary JSON never panics the converter.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::schema::value_schema;

fn names(prefix: &'static str) -> impl Strategy<Value = Vec<String>> {
    (1usize..4).prop_map(move |n| (0..n).map(|i| format!("{prefix}-{i}")).collect())
}

fn leaf() -> impl Strategy<Value = WitType> {
    prop_oneof![
        Just(WitType::Bool),
        Just(WitType::S8),
        Just(WitType::U8),
        Just(WitType::S16),
        Just(WitType::U16),
        Just(WitType::S32),
        Just(WitType::U32),
        Just(WitType::S64),
        Just(WitType::U64),
        Just(WitType::F32),
        Just(WitType::F64),
        Just(WitType::Char),
        Just(WitType::String),
        names("case").prop_map(WitType::Enum),
        names("flag").prop_map(WitType::Flags),
    ]
}

fn wit_type() -> impl Strategy<Value = WitType> {
    leaf().prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| WitType::List(Box::new(t))),
            (inner.clone(), 1u32..4).prop_map(|(t, n)| WitType::FixedList(Box::new(t), n)),
            inner.clone().prop_map(|t| WitType::Option(Box::new(t))),
            prop::collection::vec(inner.clone(), 1..4).prop_map(|ts| WitType::Record(
                ts.into_iter()
                    .enumerate()
                    .map(|(i, t)| (format!("field-{i}"), t))
                    .collect()
            )),
            prop::collection::vec(inner.clone(), 1..4).prop_map(WitType::Tuple),
            prop::collection::vec(prop::option::of(inner.clone()), 1..4).prop_map(|cs| {
                WitType::Variant(
                    cs.into_iter()
                        .enumerate()
                        .map(|(i, t)| (format!("case-{i}"), t))
                        .collect(),
                )
            }),
            (
                prop::option::of(inner.clone()),
                prop::option::of(inner.clone())
            )
                .prop_map(|(ok, err)| {
                    WitType::Result {
                        ok: ok.map(Box::new),
                        err: err.map(Box::new),
                    }
                }),
            (
                prop_oneof![Just(WitType::String), Just(WitType::U32)],
                inner
            )
                .prop_map(|(k, v)| WitType::Map(Box::new(k), Box::new(v))),
        ]
    })
}

fn finite_f64() -> impl Strategy<Value = f64> {
    prop::num::f64::NORMAL | prop::num::f64::ZERO | prop::num::f64::SUBNORMAL
}

fn value(ty: &WitType) -> BoxedStrategy<Val> {
    match ty {
        WitType::Bool => any::<bool>().prop_map(Val::Bool).boxed(),
        WitType::S8 => any::<i8>().prop_map(Val::S8).boxed(),
        WitType::U8 => any::<u8>().prop_map(Val::U8).boxed(),
        WitType::S16 => any::<i16>().prop_map(Val::S16).boxed(),
        WitType::U16 => any::<u16>().prop_map(Val::U16).boxed(),
        WitType::S32 => any::<i32>().prop_map(Val::S32).boxed(),
        WitType::U32 => any::<u32>().prop_map(Val::U32).boxed(),
        WitType::S64 => any::<i64>().prop_map(Val::S64).boxed(),
        WitType::U64 => any::<u64>().prop_map(Val::U64).boxed(),
        WitType::F32 => (prop::num::f32::NORMAL | prop::num::f32::ZERO)
            .prop_map(Val::Float32)
            .boxed(),
        WitType::F64 => finite_f64().prop_map(Val::Float64).boxed(),
        WitType::Char => any::<char>().prop_map(Val::Char).boxed(),
        WitType::String => any::<String>().prop_map(Val::String).boxed(),
        WitType::List(t) => prop::collection::vec(value(t), 0..3)
            .prop_map(Val::List)
            .boxed(),
        WitType::FixedList(t, n) => prop::collection::vec(value(t), *n as usize)
            .prop_map(Val::FixedLengthList)
            .boxed(),
        WitType::Map(k, v) => {
            // Keys are unique in the JSON object form, so generate unique keys.
            prop::collection::vec((value(k), value(v)), 0..3)
                .prop_map(|pairs| {
                    let mut seen = Vec::new();
                    pairs
                        .into_iter()
                        .filter(|(k, _)| {
                            let fresh = !seen.contains(k);
                            seen.push(k.clone());
                            fresh
                        })
                        .collect()
                })
                .prop_map(Val::Map)
                .boxed()
        }
        WitType::Record(fields) => {
            let names: Vec<String> = fields.iter().map(|(n, _)| n.clone()).collect();
            fields
                .iter()
                .map(|(_, t)| value(t))
                .collect::<Vec<_>>()
                .prop_map(move |vals| Val::Record(names.iter().cloned().zip(vals).collect()))
                .boxed()
        }
        WitType::Tuple(ts) => ts
            .iter()
            .map(value)
            .collect::<Vec<_>>()
            .prop_map(Val::Tuple)
            .boxed(),
        WitType::Variant(cases) => {
            let options: Vec<BoxedStrategy<Val>> = cases
                .iter()
                .map(|(name, payload)| {
                    let name = name.clone();
                    match payload {
                        None => Just(Val::Variant(name, None)).boxed(),
                        Some(t) => value(t)
                            .prop_map(move |v| Val::Variant(name.clone(), Some(Box::new(v))))
                            .boxed(),
                    }
                })
                .collect();
            prop::strategy::Union::new(options).boxed()
        }
        WitType::Enum(names) => prop::sample::select(names.clone())
            .prop_map(Val::Enum)
            .boxed(),
        WitType::Option(t) => prop::option::of(value(t))
            .prop_map(|o| Val::Option(o.map(Box::new)))
            .boxed(),
        WitType::Result { ok, err } => {
            let side = |t: &Option<Box<WitType>>| match t {
                None => Just(None).boxed(),
                Some(t) => value(t).prop_map(|v| Some(Box::new(v))).boxed(),
            };
            prop_oneof![
                side(ok).prop_map(|v| Val::Result(Ok(v))),
                side(err).prop_map(|v| Val::Result(Err(v))),
            ]
            .boxed()
        }
        WitType::Flags(names) => prop::sample::subsequence(names.clone(), 0..=names.len())
            .prop_map(Val::Flags)
            .boxed(),
    }
}

fn typed_value() -> impl Strategy<Value = (WitType, Val)> {
    wit_type().prop_flat_map(|t| {
        let v = value(&t);
        (Just(t), v)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn values_round_trip_through_json((ty, val) in typed_value()) {
        let j = to_json(&ty, &val);
        let back = to_val(&ty, &j).map_err(|e| TestCaseError::fail(format!("{e} for {j}")))?;
        prop_assert_eq!(back, val);
    }

    #[test]
    fn json_of_a_value_validates_against_the_schema((ty, val) in typed_value()) {
        let schema = value_schema(&ty, None);
        let j = to_json(&ty, &val);
        let validator = jsonschema::validator_for(&schema).expect("generated schemas are valid");
        let errors: Vec<String> = validator.iter_errors(&j).map(|e| e.to_string()).collect();
        prop_assert!(errors.is_empty(), "{j} against {schema}: {errors:?}");
    }

    #[test]
    fn arbitrary_json_never_panics(ty in wit_type(), j in arb_json()) {
        let _ = to_val(&ty, &j);
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        finite_f64().prop_map(Value::from),
        ".{0,8}".prop_map(Value::String),
        prop::sample::select(vec!["case-0", "flag-1", "ok", "err", "some", "NaN"])
            .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "field-0", "field-1", "case-0", "ok", "err", "some", "x"
                ])
                .prop_map(String::from),
                inner,
                0..3
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn errors_name_the_json_path_and_the_range() {
    let ty = WitType::Record(vec![(
        "ticket".into(),
        WitType::Record(vec![("retries".into(), WitType::U8)]),
    )]);
    let err = to_val(&ty, &json!({"ticket": {"retries": 300}})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "$.ticket.retries: expected integer in 0..=255, got 300"
    );

    let list = WitType::List(Box::new(WitType::S8));
    let err = to_val(&list, &json!([1, 2, "x"])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "$[2]: expected integer in -128..=127, got \"x\""
    );
}

#[test]
fn args_report_missing_and_unknown_names() {
    let params = vec![("expression".to_string(), WitType::String)];
    let err = args_to_vals(&params, &json!({})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "$: missing argument `expression` of type string"
    );
    let err = args_to_vals(&params, &json!({"expresion": "1"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "$: unknown argument `expresion`; the parameters are: expression"
    );
    let err = args_to_vals(&params, &json!([1])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "$: expected an object of named arguments, got an array of 1 items"
    );
}

#[test]
fn deep_nesting_is_refused() {
    let mut ty = WitType::U8;
    let mut j = json!(1);
    for _ in 0..100 {
        ty = WitType::List(Box::new(ty));
        j = json!([j]);
    }
    let err = to_val(&ty, &j).unwrap_err();
    assert!(err.reason.contains("nested deeper than 64"), "{err}");
}

#[test]
fn variants_results_and_nested_options_use_case_objects() {
    let v = WitType::Variant(vec![
        ("point".into(), None),
        ("circle".into(), Some(WitType::F64)),
    ]);
    assert_eq!(
        to_val(&v, &json!("point")).unwrap(),
        Val::Variant("point".into(), None)
    );
    assert_eq!(
        to_val(&v, &json!({"circle": 1.5})).unwrap(),
        Val::Variant("circle".into(), Some(Box::new(Val::Float64(1.5))))
    );
    let err = to_val(&v, &json!("circle")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "$: case `circle` needs a payload of type f64: write {\"circle\": ...}"
    );
    let nested = WitType::Option(Box::new(WitType::Option(Box::new(WitType::U8))));
    assert_eq!(
        to_json(&nested, &Val::Option(Some(Box::new(Val::Option(None))))),
        json!({"some": null})
    );
    assert_eq!(to_json(&nested, &Val::Option(None)), json!(null));
}
