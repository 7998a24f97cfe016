//! `text`: counts lines, words and characters, searches with regular expressions, and
//! extracts line ranges.

pub mod ops;

toolhost_sdk::tool!();

struct Text;

impl Guest for Text {
    fn count(text: String) -> Counts {
        let c = ops::count(&text);
        Counts {
            lines: c.lines,
            words: c.words,
            chars: c.chars,
            bytes: c.bytes,
        }
    }

    fn search(
        text: String,
        pattern: String,
        max_matches: Option<u32>,
    ) -> Result<Vec<Match>, String> {
        let found = ops::search(&text, &pattern, max_matches)?;
        Ok(found
            .into_iter()
            .map(|m| Match {
                start: m.start,
                end: m.end,
                line: m.line,
                column: m.column,
                text: m.text,
                groups: m.groups,
            })
            .collect())
    }

    fn extract_lines(text: String, first: u32, last: Option<u32>) -> Result<String, String> {
        ops::extract_lines(&text, first, last)
    }
}

export!(Text);
