//! The `@param` / `@returns` convention inside a function's doc comment.
//!
//! WIT's grammar has no place for a doc comment on a single parameter, so a function doc
//! may end with lines such as `@param expression the expression to evaluate` and
//! `@returns the value`. Those lines (and their indented continuations) are removed from
//! the function's own description.

use std::collections::BTreeMap;

#[derive(Debug, Default)]
pub(crate) struct Split {
    pub summary: Option<String>,
    pub params: BTreeMap<String, String>,
    pub returns: Option<String>,
}

enum Target {
    Summary,
    Param(String),
    Returns,
}

pub(crate) fn split(docs: Option<&str>) -> Split {
    let Some(docs) = docs else {
        return Split::default();
    };
    let mut summary = Vec::new();
    let mut params: BTreeMap<String, String> = BTreeMap::new();
    let mut returns: Option<String> = None;
    let mut target = Target::Summary;
    for line in docs.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("@param ") {
            let rest = rest.trim_start();
            let (name, text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let name = name.trim_end_matches(':').to_string();
            params.insert(name.clone(), text.trim().to_string());
            target = Target::Param(name);
        } else if let Some(rest) = trimmed
            .strip_prefix("@returns ")
            .or_else(|| trimmed.strip_prefix("@return "))
        {
            returns = Some(rest.trim().to_string());
            target = Target::Returns;
        } else {
            match &target {
                Target::Param(name) if !trimmed.is_empty() => {
                    let entry = params.get_mut(name).expect("param was inserted");
                    entry.push(' ');
                    entry.push_str(trimmed);
                }
                Target::Returns if !trimmed.is_empty() => {
                    let entry = returns.as_mut().expect("returns was set");
                    entry.push(' ');
                    entry.push_str(trimmed);
                }
                _ => {
                    target = Target::Summary;
                    summary.push(line);
                }
            }
        }
    }
    let summary = summary.join("\n").trim().to_string();
    Split {
        summary: (!summary.is_empty()).then_some(summary),
        params,
        returns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_params_and_returns() {
        let s = split(Some(
            "Evaluate.\n\n@param expression: the text\n  continued\n@returns the value",
        ));
        assert_eq!(s.summary.as_deref(), Some("Evaluate."));
        assert_eq!(s.params["expression"], "the text continued");
        assert_eq!(s.returns.as_deref(), Some("the value"));
    }

    #[test]
    fn plain_docs_are_kept_whole() {
        let s = split(Some("Line one.\nLine two."));
        assert_eq!(s.summary.as_deref(), Some("Line one.\nLine two."));
        assert!(s.params.is_empty());
    }
}
