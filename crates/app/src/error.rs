//! [`AppError`]: why a task cannot run, by kind. The command line turns each kind into its
//! exit code; the message is the one a person reads.

use crate::task::TaskError;

/// Why running a task failed before or around the run (a run that stops is a report, not
/// an error). Each variant is one kind of failure, so a front door can answer it its way
/// (the command line: an exit code; `serve`: an HTTP status).
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The task file is unreadable or invalid.
    #[error(transparent)]
    Task(#[from] TaskError),
    /// The options, the task's policy or its setup are wrong (a bad flag, a missing key,
    /// a changed file, a run that is not there).
    #[error("{0}")]
    Usage(String),
    /// The policy does not allow what the task asks (a tool without a section).
    #[error("{0}")]
    Denied(String),
    /// A component could not be loaded, or the process could not start what a run needs.
    #[error("{0}")]
    Load(String),
    /// A journal is broken, cannot be written, or its database failed.
    #[error("{0}")]
    Journal(String),
    /// Another process writes the run.
    #[error("{0}")]
    Locked(String),
}

/// `AppError::Usage` of a message.
pub(crate) fn usage(message: impl Into<String>) -> AppError {
    AppError::Usage(message.into())
}
