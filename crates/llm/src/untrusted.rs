//! The one way tool data enters a prompt: a delimited `<untrusted-data>` block, shared by
//! the step-wise history ([`prompt`](super::prompt)) and the ReAct transcript.

use serde_json::Value;

use toolhost_engine::plan::StepId;

/// `v` as a data block for step `id` (with a `part` attribute unless empty).
pub(crate) fn untrusted(id: &StepId, part: &str, v: &Value) -> String {
    // `<` only occurs inside JSON strings, where `\u003c` means the same character.
    let text = v.to_string().replace('<', "\\u003c");
    let part = if part.is_empty() {
        String::new()
    } else {
        format!(" part=\"{part}\"")
    };
    format!("<untrusted-data step=\"{id}\"{part}>\n{text}\n</untrusted-data>")
}
