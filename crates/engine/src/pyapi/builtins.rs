//! The built-in steps as objects of the Python API: `human.ask` when a person can answer
//! and `model.extract` when the run has an extractor, each shown to the planner only then
//! and each in the prelude (unless a catalog tool has its name), so that a call nobody can
//! serve reaches the host and is refused there with its reason. Their parameters follow
//! the API's naming: `input` and `answer` are Python or API names, so `input_` and
//! `answer_`; on the wire they are the plan step's `input` and `answer`.

use crate::ask;
use crate::draft::Builtins;
use crate::extract;
use crate::validate::Catalog;

use super::Body;

const HUMAN_STUB: &str = r#"class _Human:
    """The person running the task."""

    def ask(self, *, question: str, answer_: dict | None = None):
        """Asks the person a question and waits for the answer, which matches the JSON
        Schema `answer_` (default {"type": "string"}): type string (enum allowed),
        integer, number, boolean, array (with items) or object (with properties,
        required).

        Raises:
            Denied: the host refused the question.
        """
        ...


human = _Human()
"#;

const HUMAN_CALL: &str = r#"class _Human:
    def ask(self, *, question, answer_=None):
        args = {"question": question}
        if answer_ is not None:
            args["answer"] = answer_
        return _toolhost("human", "ask", args)


human = _Human()
"#;

const MODEL_STUB: &str = r#"class _Model:
    """A model with no tools that reads typed values out of text (a quarantined model)."""

    def extract(self, *, input_, instruction: str, output: dict | None = None):
        """Reads a value out of `input_` (text or a value, usually an Untrusted handle) as
        `instruction` says, typed by the JSON Schema `output` (default {"type":
        "string"}; the same types as human.ask's). The value is as untrusted as
        `input_`: read from a handle, it comes back as a handle, whose fields can be
        taken (`x.part("amount")`) and passed on to tools that accept untrusted data.

        Raises:
            Denied: the host refused the call.
            ToolError: the model's answer did not match `output` (bad_extraction).
        """
        ...


model = _Model()
"#;

const MODEL_CALL: &str = r#"class _Model:
    def extract(self, *, input_, instruction, output=None):
        args = {"input": input_, "instruction": instruction}
        if output is not None:
            args["output"] = output
        return _toolhost("model", "extract", args)


model = _Model()
"#;

/// The built-in objects to add to an API of `catalog`'s tools: for the planner
/// ([`Body::Stub`]) those `serves` can serve, for the prelude ([`Body::Call`]) both; never
/// one whose name a catalog tool has.
pub(super) fn render(out: &mut String, catalog: &Catalog, serves: Builtins, body: Body) {
    let free = |name: &str| !catalog.tools.contains_key(name);
    let (human, model) = match body {
        Body::Stub => (HUMAN_STUB, MODEL_STUB),
        Body::Call => (HUMAN_CALL, MODEL_CALL),
    };
    let shown = |served: bool| body == Body::Call || served;
    if free(ask::TOOL) && shown(serves.answers) {
        out.push_str("\n\n");
        out.push_str(human);
    }
    if free(extract::TOOL) && shown(serves.extracts) {
        out.push_str("\n\n");
        out.push_str(model);
    }
}
