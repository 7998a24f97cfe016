//! The client's user as a program's run sees it ([`ClientUser`]). The embedder's approver
//! puts a `sensitive` call's approval or a `human.ask` question to it, and its extractor
//! a sampling request, and waits for the reply; the `run_program` call answers each
//! through its request's asking (`crate::program_call`): a request sent to a session's
//! client while the program waits, or, in a stateless task, an `input_required` status
//! that `tasks/update` answers. A stateless request outside a task cannot be called
//! back: its questions are unanswerable, and the embedder does what it does when nobody
//! can be asked.

use std::sync::mpsc as std_mpsc;

use serde_json::Value;
use tokio::sync::mpsc;
use toolhost_runtime::ask::{Input, Kind};

/// The client's reply to a question, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The client's result, checked against the question's schema when it accepts a form
    /// (`{"action": "accept", "content": {…}}`, or `decline`, `cancel`).
    Answer(Value),
    /// Nobody can be asked: the client did not declare the capability, or the request is
    /// stateless and not a task. Says which.
    Unanswerable(String),
    /// The client was asked and the question failed: it did not answer, or its answer
    /// was refused (not what the form calls for). Says why.
    Failed(String),
}

/// A question on its way to the client, with where its reply goes.
pub(crate) type Question = (Input, std_mpsc::Sender<Reply>);

/// Who a program's run asks: the user of the client whose `run_program` call it runs.
#[derive(Clone)]
pub struct ClientUser {
    to: mpsc::UnboundedSender<Question>,
    offered: Vec<Kind>,
}

impl ClientUser {
    /// The user of a client that offers `offered`, and the questions its program puts.
    pub(crate) fn new(offered: Vec<Kind>) -> (ClientUser, mpsc::UnboundedReceiver<Question>) {
        let (to, questions) = mpsc::unbounded_channel();
        let user = ClientUser { to, offered };
        (user, questions)
    }

    /// Whether the client declared what a question of `kind` needs.
    pub fn offers(&self, kind: Kind) -> bool {
        self.offered.contains(&kind)
    }

    /// Puts `input` to the client's user and waits for the reply, blocking this thread (a
    /// run's approver calls it; never call it from async code). `None`: the call ended
    /// while the question waited (cancelled, or the server stopped).
    pub fn ask(&self, input: Input) -> Option<Reply> {
        let (reply, replied) = std_mpsc::channel();
        self.to.send((input, reply)).ok()?;
        replied.recv().ok()
    }
}
