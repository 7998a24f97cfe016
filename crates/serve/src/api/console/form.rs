//! A question's answer form, generated from its JSON Schema: an object of plain fields
//! (strings, integers, numbers, booleans; a string `enum` as a select), or one plain value.
//! Ranges, lengths and required fields become the inputs' own constraints, so the page
//! refuses what the schema refuses; the server reads the fields back into a JSON value and
//! checks it against the schema again (a forged form gains nothing). A schema using any
//! keyword outside this set gets no form ([`render`] answers `None`): the page falls back
//! to a JSON text area.

use std::fmt::Write;

use serde_json::{Map, Value};

use super::session::Form;
use toolhost_journal::report::escape as esc;

/// The keywords a field's schema may use for the form to render it faithfully.
const FIELD_KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "title",
    "description",
];
/// The keywords an object's schema may use around its fields.
const OBJECT_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "title",
    "description",
];

/// The name of the form field that carries the property `key` (the whole answer when
/// `None`).
fn field_name(key: Option<&str>) -> String {
    format!("field:{}", key.unwrap_or(""))
}

/// One input of the form: the property it fills (none for a plain-value answer), its
/// schema, whether the schema requires it.
struct Field<'a> {
    key: Option<&'a str>,
    schema: &'a Value,
    required: bool,
}

/// The fields of `schema`, when every one is plain enough to render; `None` otherwise.
fn fields(schema: &Value) -> Option<Vec<Field<'_>>> {
    let object = schema.as_object()?;
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return plain(schema).then(|| {
            vec![Field {
                key: None,
                schema,
                required: true,
            }]
        });
    }
    if object
        .keys()
        .any(|k| !OBJECT_KEYWORDS.contains(&k.as_str()))
    {
        return None;
    }
    let required: Vec<&str> = match object.get("required") {
        None => Vec::new(),
        Some(r) => r
            .as_array()?
            .iter()
            .map(Value::as_str)
            .collect::<Option<_>>()?,
    };
    let properties = object.get("properties")?.as_object()?;
    if properties.is_empty() || required.iter().any(|r| !properties.contains_key(*r)) {
        return None;
    }
    properties
        .iter()
        .map(|(key, s)| {
            plain(s).then_some(Field {
                key: Some(key),
                schema: s,
                required: required.contains(&key.as_str()),
            })
        })
        .collect()
}

/// Whether `schema` is one plain value this form renders: a typed scalar, with only the
/// keywords of [`FIELD_KEYWORDS`], an `enum` only of strings.
fn plain(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else {
        return false;
    };
    let typed = matches!(
        o.get("type").and_then(Value::as_str),
        Some("string" | "integer" | "number" | "boolean")
    );
    let enum_ok = o.get("enum").is_none_or(|e| {
        o.get("type").and_then(Value::as_str) == Some("string")
            && e.as_array()
                .is_some_and(|v| !v.is_empty() && v.iter().all(Value::is_string))
    });
    let numbers_ok = ["minimum", "maximum", "minLength", "maxLength"]
        .iter()
        .all(|k| o.get(*k).is_none_or(Value::is_number));
    typed && enum_ok && numbers_ok && o.keys().all(|k| FIELD_KEYWORDS.contains(&k.as_str()))
}

/// The form's inputs for `schema` (labelled, with the schema's constraints as their own),
/// or `None` when the schema is not one this generator renders faithfully.
pub(crate) fn render(schema: &Value) -> Option<String> {
    let mut out = String::new();
    for (i, f) in fields(schema)?.iter().enumerate() {
        let id = format!("q-{i}");
        let name = esc(&field_name(f.key));
        let s = f.schema;
        let label = s["title"]
            .as_str()
            .or(f.key)
            .unwrap_or("Answer")
            .to_string();
        let star = if f.required { " (required)" } else { "" };
        let (hint, described) = match s["description"].as_str() {
            Some(d) => (
                format!(r#"<span class="hint" id="{id}-hint">{}</span>"#, esc(d)),
                format!(r#" aria-describedby="{id}-hint""#),
            ),
            None => (String::new(), String::new()),
        };
        let required = if f.required { " required" } else { "" };
        let _ = write!(
            out,
            r#"<div class="field"><label for="{id}">{}{star}</label>"#,
            esc(&label)
        );
        let _ = match s["type"].as_str() {
            Some("boolean") => write!(
                out,
                r#"<input type="checkbox" id="{id}" name="{name}" value="true"{described}>"#
            ),
            Some("string") if s.get("enum").is_some() => {
                let mut options = if f.required {
                    String::new()
                } else {
                    r#"<option value="">(none)</option>"#.to_string()
                };
                for v in s["enum"].as_array().into_iter().flatten() {
                    let v = esc(v.as_str().unwrap_or_default());
                    let _ = write!(options, r#"<option value="{v}">{v}</option>"#);
                }
                write!(
                    out,
                    r#"<select id="{id}" name="{name}"{required}{described}>{options}</select>"#
                )
            }
            Some("string") => write!(
                out,
                r#"<input type="text" id="{id}" name="{name}"{}{}{required}{described}>"#,
                attr("minlength", &s["minLength"]),
                attr("maxlength", &s["maxLength"]),
            ),
            number => write!(
                out,
                r#"<input type="number" id="{id}" name="{name}" step="{}"{}{}{required}{described}>"#,
                if number == Some("integer") {
                    "1"
                } else {
                    "any"
                },
                attr("min", &s["minimum"]),
                attr("max", &s["maximum"]),
            ),
        };
        let _ = write!(out, "{hint}</div>");
    }
    Some(out)
}

/// ` NAME="VALUE"` when `v` is a number.
fn attr(name: &str, v: &Value) -> String {
    v.as_number()
        .map_or(String::new(), |n| format!(r#" {name}="{n}""#))
}

/// The answer the generated form's fields say, read back by `schema`'s types; the caller
/// still checks it against the schema (ranges, enums, lengths, required fields).
pub(crate) fn answer(schema: &Value, form: &Form) -> Result<Value, String> {
    let fields =
        fields(schema).ok_or("this question's schema has no generated form: answer with JSON")?;
    let mut object = Map::new();
    for f in &fields {
        let name = field_name(f.key);
        let raw = form.get(&name).unwrap_or_default();
        let value = match f.schema["type"].as_str() {
            Some("boolean") => Some(Value::Bool(raw == "true")),
            _ if raw.is_empty() && !f.required => None,
            Some("integer") => Some(Value::from(raw.trim().parse::<i64>().map_err(|_| {
                format!(
                    "`{}` must be an integer, not {raw:?}",
                    f.key.unwrap_or("the answer")
                )
            })?)),
            Some("number") => {
                let n = raw
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64);
                Some(Value::Number(n.ok_or_else(|| {
                    format!(
                        "`{}` must be a number, not {raw:?}",
                        f.key.unwrap_or("the answer")
                    )
                })?))
            }
            _ => Some(Value::String(raw.to_string())),
        };
        match (f.key, value) {
            (None, Some(v)) => return Ok(v),
            (Some(k), Some(v)) => {
                object.insert(k.to_string(), v);
            }
            (_, None) => {}
        }
    }
    Ok(Value::Object(object))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form(pairs: &[(&str, &str)]) -> Form {
        Form::parse(serde_urlencoded::to_string(pairs).unwrap().as_bytes())
    }

    #[test]
    fn an_object_of_plain_fields_becomes_inputs_with_the_schemas_constraints() {
        let schema = json!({"type": "object", "required": ["n", "colour"], "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 100},
            "colour": {"type": "string", "enum": ["red", "<b>"]},
            "note": {"type": "string", "maxLength": 20, "description": "why"},
            "urgent": {"type": "boolean"},
        }});
        let html = render(&schema).unwrap();
        assert!(
            html.contains(
                r#"type="number" id="q-0" name="field:n" step="1" min="1" max="100" required"#
            ),
            "{html}"
        );
        assert!(html.contains(r#"<option value="&lt;b&gt;">"#), "{html}");
        assert!(
            html.contains(r#"maxlength="20" aria-describedby="q-2-hint""#),
            "{html}"
        );
        assert!(html.contains(r#"type="checkbox""#), "{html}");
        let got = answer(
            &schema,
            &form(&[
                ("field:n", "7"),
                ("field:colour", "red"),
                ("field:note", ""),
            ]),
        )
        .unwrap();
        assert_eq!(got, json!({"n": 7, "colour": "red", "urgent": false}));
        let e = answer(&schema, &form(&[("field:n", "seven")])).unwrap_err();
        assert!(e.contains("`n` must be an integer, not \"seven\""), "{e}");
    }

    #[test]
    fn a_schema_beyond_the_generator_falls_back_to_json() {
        for schema in [
            json!({"type": "object", "properties": {"a": {"type": "array"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "oneOf": []}),
            json!({"type": "integer", "enum": [1, 2]}),
            json!({"type": "object", "properties": {}}),
            json!(true),
        ] {
            assert!(render(&schema).is_none(), "{schema}");
        }
        let single = json!({"type": "number", "maximum": 2});
        assert!(
            render(&single)
                .unwrap()
                .contains(r#"step="any" max="2" required"#)
        );
        assert_eq!(
            answer(&single, &form(&[("field:", "1.5")])).unwrap(),
            json!(1.5)
        );
    }
}
