use super::*;

#[test]
fn names_are_snake_cased_and_keywords_and_builtins_get_a_trailing_underscore() {
    assert_eq!(py_name("max-bytes"), "max_bytes");
    assert_eq!(py_name("read-file"), "read_file");
    assert_eq!(py_name("Upper-Case"), "upper_case");
    assert_eq!(py_name("iface.op-name"), "iface_op_name");
    // Keywords, soft keywords, builtins and the API's own names.
    for (wit, py) in [
        ("eval", "eval_"),
        ("class", "class_"),
        ("from", "from_"),
        ("type", "type_"),
        ("match", "match_"),
        ("id", "id_"),
        ("input", "input_"),
        ("list", "list_"),
        ("answer", "answer_"),
        ("self", "self_"),
        ("none", "none"),
    ] {
        assert_eq!(py_name(wit), py, "{wit}");
    }
    assert_eq!(py_name("2fa"), "_2fa");
    assert_eq!(class_name("bfcl-fs"), "_BfclFs");
}

#[test]
fn types_are_hinted_and_shaped_as_json_carries_them() {
    let rec = WitType::Record(vec![
        ("name".into(), WitType::String),
        ("size-bytes".into(), WitType::U32),
    ]);
    assert_eq!(py_type(&rec), "dict");
    assert_eq!(
        shape(&rec),
        r#"{"name": str, "size-bytes": int (0..=4294967295)}"#
    );
    assert_eq!(
        py_type(&WitType::Option(Box::new(WitType::U8))),
        "int | None"
    );
    assert_eq!(
        py_type(&WitType::Enum(vec!["asc".into(), "desc".into()])),
        r#"Literal["asc", "desc"]"#
    );
    assert_eq!(py_type(&WitType::List(Box::new(rec.clone()))), "list[dict]");
    assert_eq!(shape(&WitType::U8), "int (0..=255)");
    assert!(!worth_shaping(&WitType::String));
    assert!(worth_shaping(&rec));
}

#[test]
fn docstrings_escape_quotes_and_indent() {
    let d = docstring("says \"\"\"hi\"\"\"\nsecond line", 4);
    assert_eq!(
        d,
        "    \"\"\"says \\\"\\\"\\\"hi\\\"\\\"\\\"\n    second line\n    \"\"\""
    );
}

#[test]
fn the_builtins_are_shown_only_where_served_and_always_in_the_prelude() {
    let catalog = Catalog::default();
    let none = Builtins {
        answers: false,
        extracts: false,
    };
    let api = run_api(&catalog, none);
    assert!(
        !api.contains("class _Human") && !api.contains("class _Model"),
        "{api}"
    );
    let both = Builtins {
        answers: true,
        extracts: true,
    };
    let api = run_api(&catalog, both);
    assert!(
        api.contains("def ask(self, *, question: str, answer_: dict | None = None):"),
        "{api}"
    );
    assert!(
        api.contains("def extract(self, *, input_, instruction: str, output: dict | None = None):"),
        "{api}"
    );
    let prelude = prelude(&catalog);
    assert!(
        prelude.contains("return _toolhost(\"human\", \"ask\", args)"),
        "{prelude}"
    );
    assert!(
        prelude.contains("return _toolhost(\"model\", \"extract\", args)"),
        "{prelude}"
    );
    assert!(
        prelude.contains("def parallel(*calls, return_exceptions=False):"),
        "{prelude}"
    );
}
