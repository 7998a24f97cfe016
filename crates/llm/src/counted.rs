//! [`Counted`]: a planner that answers as another does (a script, typically) and is
//! charged what a model planner would be for the same requests. Each request costs the
//! prompt toolhost's model planners build for it ([`prompt::build`]: rules, the tools
//! with their schemas or typed API, budgets, history) with its answer schema, at four
//! characters a token; the bytes it shares at its start with the previous request count as
//! read from a prompt cache (a provider that caches any repeated prefix; OpenAI and
//! Anthropic cache only prefixes of 1,024 tokens or more). The answer costs its JSON, at
//! four characters a token.
//!
//! This is how `--count-tokens` (and the benchmark's `planning` group) compares planning
//! modes on the same tasks without a model: the figures are what the model would have
//! been sent and would have had to write, not a model's own count.

use toolhost_engine::planner::Ask;
use toolhost_engine::planner::PlanFuture;
use toolhost_engine::{PlanRequest, Planner, Usage};

use crate::prompt;

/// Characters per token, as the counts here charge them.
const CHARS_PER_TOKEN: usize = 4;

/// The planner `inner`, charged as a model would be (see the module doc).
pub struct Counted {
    inner: Box<dyn Planner>,
    context_chars: usize,
    /// The previous request's text: system prompt, answer schema, user message.
    last: String,
}

impl Counted {
    /// `inner`, charged for prompts cut to `context_chars` of history (a model planner's
    /// [`LlmConfig::context_chars`](crate::LlmConfig)).
    pub fn new(inner: Box<dyn Planner>, context_chars: usize) -> Counted {
        Counted {
            inner,
            context_chars,
            last: String::new(),
        }
    }

    /// The text a model planner would be sent for `req`.
    fn prompt(&self, req: &PlanRequest) -> String {
        let p = prompt::build(req, self.context_chars, 1024, None);
        format!("{}{}{}", p.system, p.strict_schema, p.user)
    }
}

impl Planner for Counted {
    fn name(&self) -> String {
        self.inner.name()
    }

    /// The inner planner's estimate, with the prompt's tokens as its input.
    fn estimate(&self, req: &PlanRequest) -> Usage {
        let mut usage = self.inner.estimate(req);
        usage.input_tokens = (self.prompt(req).len() / CHARS_PER_TOKEN) as u64;
        usage
    }

    fn plan<'a>(&'a mut self, req: &'a PlanRequest) -> PlanFuture<'a> {
        Box::pin(async move {
            let (reply, mut usage) = self.inner.plan(req).await?;
            let sent = self.prompt(req);
            let shared = sent
                .bytes()
                .zip(self.last.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            let answer = serde_json::to_string(&reply).map_or(0, |s| s.len());
            usage.input_tokens = (sent.len() / CHARS_PER_TOKEN) as u64;
            usage.cached_input_tokens = (shared / CHARS_PER_TOKEN) as u64;
            usage.output_tokens = (answer / CHARS_PER_TOKEN) as u64;
            self.last = sent;
            Ok((reply, usage))
        })
    }

    fn fast_forward(&mut self, asked: &[Ask]) {
        self.inner.fast_forward(asked);
    }
}
