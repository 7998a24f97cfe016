//! Planner settings from outside the task file (a command line's flags, an API request):
//! each replaces the task's `[planner]` value, and a flag the resulting planner cannot use
//! is an error that names it.

use std::path::PathBuf;

use toolhost_engine::planner::{Mode, Usage};
use toolhost_llm::Structured;

use super::planners::{PlannerConfig, PlannerKind, kind_name};

/// Planner settings given outside the task file (command-line flags); each replaces the
/// task's value. Choosing a model `kind` here drops the task's inline script.
///
/// For an ensemble, `base_url` and `api_key_env` replace both models' values, and
/// `fast`/`strong` one model's; `model` is refused (an ensemble has two).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlannerOverrides {
    /// Replaces the task's `mode` (`--mode`), so one suite runs in every mode.
    pub mode: Option<Mode>,
    pub kind: Option<PlannerKind>,
    pub model: Option<String>,
    /// `--base-url`: an error for a planner that takes none.
    pub base_url: Option<String>,
    /// `TOOLHOST_BASE_URL`: like `base_url` where the planner takes one (a model, or an
    /// ensemble's two), ignored where it does not (a script, a cassette). A flag wins.
    pub env_base_url: Option<String>,
    pub api_key_env: Option<String>,
    /// Taken as given (relative to the working directory, not the task file).
    pub cassette: Option<PathBuf>,
    /// `--fast-model`, `--fast-base-url`: an ensemble's fast model only.
    pub fast: MemberOverrides,
    /// `--strong-model`, `--strong-base-url`: an ensemble's strong model only.
    pub strong: MemberOverrides,
}

/// Flags for one model of an ensemble.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemberOverrides {
    pub model: Option<String>,
    pub base_url: Option<String>,
}

impl MemberOverrides {
    fn is_empty(&self) -> bool {
        self.model.is_none() && self.base_url.is_none()
    }
}

impl PlannerOverrides {
    /// These overrides with `mode` replacing the task's too, if given (`--mode`).
    pub fn with_mode(self, mode: Option<Mode>) -> PlannerOverrides {
        PlannerOverrides {
            mode: mode.or(self.mode),
            ..self
        }
    }

    /// Applies the overrides to `p`; a flag the resulting planner cannot use is an error
    /// that names the flag.
    pub(super) fn apply(&self, p: &mut PlannerConfig) -> Result<(), String> {
        self.apply_kind(p);
        let set = |field: &mut Option<String>, v: &Option<String>| {
            if v.is_some() {
                field.clone_from(v);
            }
        };
        let base_url = self
            .base_url
            .as_ref()
            .or(self.env_base_url.as_ref())
            .cloned();
        let uses_url = matches!(
            p.kind,
            PlannerKind::OpenAi | PlannerKind::Anthropic | PlannerKind::OpenAiCompatible
        );
        if p.kind == PlannerKind::Ensemble {
            if self.model.is_some() {
                return Err("--model names one model and an ensemble has two: use --fast-model and --strong-model".into());
            }
            for (sub, member) in [(&mut p.fast, &self.fast), (&mut p.strong, &self.strong)] {
                // A missing member table is reported by `resolve`, which names it.
                if let Some(sub) = sub.as_deref_mut() {
                    set(&mut sub.base_url, &base_url);
                    set(&mut sub.api_key_env, &self.api_key_env);
                    set(&mut sub.model, &member.model);
                    set(&mut sub.base_url, &member.base_url);
                }
            }
            return Ok(());
        }
        let member_flag = [("fast", &self.fast), ("strong", &self.strong)]
            .into_iter()
            .find(|(_, m)| !m.is_empty())
            .map(|(which, m)| {
                let what = if m.model.is_some() {
                    "model"
                } else {
                    "base-url"
                };
                format!("--{which}-{what}")
            });
        if let Some(flag) = member_flag {
            return Err(format!(
                "{flag} sets one model of an ensemble, and this task's planner is {}: use --model / --base-url",
                kind_name(p.kind)
            ));
        }
        if uses_url {
            set(&mut p.base_url, &base_url);
        } else if self.base_url.is_some() {
            return Err(format!(
                "--base-url is for model planners, and this task's planner is {}: add --planner openai, anthropic or openai-compatible",
                kind_name(p.kind)
            ));
        }
        set(&mut p.model, &self.model);
        set(&mut p.api_key_env, &self.api_key_env);
        if let Some(c) = &self.cassette {
            p.cassette = Some(c.display().to_string());
        }
        Ok(())
    }

    fn apply_kind(&self, p: &mut PlannerConfig) {
        if let Some(kind) = self.kind
            && kind != p.kind
        {
            // A different kind keeps only the task's settings that it uses.
            let old = std::mem::take(p);
            let model = |k: PlannerKind| {
                matches!(
                    k,
                    PlannerKind::OpenAi | PlannerKind::Anthropic | PlannerKind::OpenAiCompatible
                )
            };
            *p = match kind {
                PlannerKind::Scripted => PlannerConfig {
                    script: old.script,
                    plan: old.plan,
                    replans: old.replans,
                    repairs: old.repairs,
                    turns: old.turns,
                    usage_per_call: old.usage_per_call,
                    ..PlannerConfig::default()
                },
                PlannerKind::Replay => PlannerConfig {
                    cassette: old.cassette,
                    ..PlannerConfig::default()
                },
                PlannerKind::Adversarial => PlannerConfig {
                    adversary: old.adversary,
                    ..PlannerConfig::default()
                },
                PlannerKind::Ensemble => PlannerConfig::default(),
                _ if model(old.kind) => PlannerConfig {
                    script: None,
                    plan: None,
                    replans: Vec::new(),
                    repairs: Vec::new(),
                    turns: Vec::new(),
                    usage_per_call: Usage::default(),
                    cassette: None,
                    // OpenAI's choice of API and a provider's own way of answering do not
                    // carry over to another provider.
                    api: old.api.filter(|_| kind == PlannerKind::OpenAi),
                    structured_output: old
                        .structured_output
                        .filter(|s| matches!(s, Structured::Auto | Structured::JsonSchema)),
                    ..old
                },
                _ => PlannerConfig::default(),
            };
            p.kind = kind;
        }
    }
}
