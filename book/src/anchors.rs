//! Headings' anchors as GitHub makes them (its `github-slugger`): the heading's text in
//! lower case, without punctuation other than `-` and `_`, spaces made `-`; the second
//! heading with the same anchor gets `-1`, the third `-2`. The book's pages use the same
//! anchors, so a link works on the code host and in the book alike.

use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};

use crate::options;

/// The anchor of one heading's text (before de-duplication).
pub fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The headings of a Markdown text: level, text and anchor, in order.
pub fn headings(markdown: &str) -> Vec<(HeadingLevel, String, String)> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashMap::<String, usize>::new();
    let mut current: Option<(HeadingLevel, String)> = None;
    for event in Parser::new_ext(markdown, options()) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => current = Some((level, String::new())),
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, text)) = &mut current {
                    text.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, text)) = current.take() {
                    let base = slug(&text);
                    let n = seen.entry(base.clone()).or_insert(0);
                    let anchor = if *n == 0 { base } else { format!("{base}-{n}") };
                    *n += 1;
                    out.push((level, text, anchor));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_githubs() {
        let md = "# toolhost\n## 60-second quickstart\n### `toolhost run`: a task\n\
                  ## Data-flow rules (taint)\n## Notes\n## Notes\n";
        let anchors: Vec<_> = headings(md).into_iter().map(|h| h.2).collect();
        assert_eq!(
            anchors,
            [
                "toolhost",
                "60-second-quickstart",
                "toolhost-run-a-task",
                "data-flow-rules-taint",
                "notes",
                "notes-1"
            ]
        );
        assert_eq!(
            slug("Measurement: AgentDojo's suites"),
            "measurement-agentdojos-suites"
        );
        assert_eq!(slug("Tools — über"), "tools--über");
    }
}
