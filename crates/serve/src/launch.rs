//! What the embedded backend needs from whoever knows how to run a task: the
//! [`Launcher`]. `toolhost-app` implements it (its `TaskLauncher`) with the code path of
//! `toolhost run` (loading, the planner, the journal, the engine), so a served run is the
//! same run.

use std::path::PathBuf;

use toolhost_engine::approval::{ApprovalMode, Approver};
use toolhost_engine::{Cancel, RunReport};
use toolhost_runtime::CallLoad;

use crate::registry::{Overrides, RegistryError, TaskSource};

/// Prepares runs.
pub trait Launcher: Send + Sync {
    /// Checks everything a run needs before anything is written (the task, its policy and
    /// tools, the planner), then creates its journal: from here the run exists.
    fn prepare(
        &self,
        task: &TaskSource,
        overrides: &Overrides,
    ) -> Result<Box<dyn Prepared>, RegistryError>;

    /// Reopens run `run` of the state directory, which stopped `suspended` when the server
    /// last shut down, to carry it on as `toolhost resume` would (the same task, policy
    /// and tools, checked against its journal's digests) with the `overrides` it was
    /// submitted with.
    fn resume(&self, run: &str, overrides: &Overrides) -> Result<Box<dyn Prepared>, RegistryError>;

    /// Start-up work after which the server is ready (loading and compiling the tools).
    fn warm(&self) -> Result<(), String>;

    /// How much of the host's call budget the runs' tool calls hold now, for `/metrics`.
    fn calls(&self) -> Option<CallLoad> {
        None
    }
}

/// A run whose journal is open, ready to execute.
pub trait Prepared: Send {
    fn run_id(&self) -> &str;
    fn goal(&self) -> &str;
    fn journal_path(&self) -> PathBuf;
    /// What the policy says of steps that need approval when nobody reviews the run.
    fn approval(&self) -> ApprovalMode;
    /// Executes the run to its stop on this thread (it may block for long), with
    /// `approver` deciding plans and steps and answering questions if given (else the
    /// policy's `approval` decides, and nobody answers), and
    /// stopping early, journaled `cancelled`, when `cancel` fires. `Err` when the run
    /// could not start at all (no async runtime).
    fn execute(
        self: Box<Self>,
        approver: Option<&mut dyn Approver>,
        cancel: Cancel,
    ) -> Result<RunReport, String>;
}
