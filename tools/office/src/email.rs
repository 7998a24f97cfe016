//! The e-mail client (`tools/email_client.py`, `tools/types.py`): the `Inbox` state and
//! every operation the suites register, with the original's results and `ValueError` texts.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::dict::Dict;
use crate::event::CalendarEvent;
use crate::py::lower;
use crate::time::DateTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmailStatus {
    Sent,
    Received,
    Draft,
}

/// An attachment as the model holds it: a drive file's id, or a calendar event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Attachment {
    File(String),
    Event(CalendarEvent),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Email {
    pub id_: String,
    pub sender: String,
    pub recipients: Vec<String>,
    #[serde(default)]
    pub cc: Vec<String>,
    #[serde(default)]
    pub bcc: Vec<String>,
    pub subject: String,
    pub body: String,
    #[serde(default = "sent")]
    pub status: EmailStatus,
    #[serde(default)]
    pub read: bool,
    pub timestamp: DateTime,
    #[serde(default)]
    pub attachments: Vec<Attachment>,
}

fn sent() -> EmailStatus {
    EmailStatus::Sent
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmailContact {
    pub email: String,
    pub name: String,
}

/// The inbox as AgentDojo dumps it. `initial_emails` (and anything else) is kept as read:
/// the model rebuilds `emails` from it when it parses, so the harness restores the dicts
/// from the file (bench/agentdojo/harness.py, `reparse`). `received`, `sent` and `drafts`
/// are pydantic computed fields: written fresh from `emails`, never read.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Inbox {
    pub account_email: String,
    pub emails: Dict<Email>,
    #[serde(default)]
    pub contact_list: Vec<EmailContact>,
    #[serde(default)]
    pub trash: Dict<Email>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

const COMPUTED: [&str; 3] = ["received", "sent", "drafts"];

impl Serialize for Inbox {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = Map::new();
        m.insert(
            "account_email".into(),
            Value::String(self.account_email.clone()),
        );
        m.insert("emails".into(), json(&self.emails)?);
        m.insert("contact_list".into(), json(&self.contact_list)?);
        m.insert("trash".into(), json(&self.trash)?);
        for (name, status) in
            COMPUTED
                .iter()
                .zip([EmailStatus::Received, EmailStatus::Sent, EmailStatus::Draft])
        {
            m.insert((*name).into(), json(&self.by_status(status))?);
        }
        for (k, v) in self
            .rest
            .iter()
            .filter(|(k, _)| !COMPUTED.contains(&k.as_str()))
        {
            m.insert(k.clone(), v.clone());
        }
        m.serialize(s)
    }
}

fn json<T: Serialize, E: serde::ser::Error>(v: &T) -> Result<Value, E> {
    serde_json::to_value(v).map_err(E::custom)
}

/// An attachment as `send_email` takes it (a dict in Python): `type` `"file"` with
/// `file_id`, or an event in `event_details`.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachmentArg {
    pub kind: String,
    pub file_id: Option<String>,
    pub event_details: Option<CalendarEvent>,
}

/// `send_email`'s parsing of its attachment dicts, with its messages.
pub fn parse_attachments(args: Vec<AttachmentArg>) -> Result<Vec<Attachment>, String> {
    args.into_iter()
        .map(|a| {
            if a.kind == "file" || a.file_id.is_some() {
                a.file_id.map(Attachment::File).ok_or_else(|| {
                    "Attachment of type 'file' must have a 'file_id' field.".to_string()
                })
            } else {
                a.event_details.map(Attachment::Event).ok_or_else(|| {
                    "Attachment of type 'event' must have an 'event_details' field.".to_string()
                })
            }
        })
        .collect()
}

impl Inbox {
    fn by_status(&self, status: EmailStatus) -> Vec<&Email> {
        self.emails
            .values()
            .filter(|e| e.status == status)
            .collect()
    }

    fn listed(&self, status: EmailStatus) -> Vec<Email> {
        self.by_status(status).into_iter().cloned().collect()
    }

    /// `get_received_emails`.
    pub fn received(&self) -> Vec<Email> {
        self.listed(EmailStatus::Received)
    }

    /// `get_sent_emails`.
    pub fn sent(&self) -> Vec<Email> {
        self.listed(EmailStatus::Sent)
    }

    /// `get_draft_emails`.
    pub fn drafts(&self) -> Vec<Email> {
        self.listed(EmailStatus::Draft)
    }

    /// `Inbox.send_email`: a new, read, sent e-mail from the account, stamped now, under
    /// the next id.
    pub fn send_email(
        &mut self,
        recipients: Vec<String>,
        subject: String,
        body: String,
        attachments: Vec<Attachment>,
        cc: Vec<String>,
        bcc: Vec<String>,
    ) -> Result<Email, String> {
        let email = Email {
            id_: self.emails.next_id()?,
            sender: self.account_email.clone(),
            recipients,
            cc,
            bcc,
            subject,
            body,
            status: EmailStatus::Sent,
            read: true,
            timestamp: DateTime::now(),
            attachments,
        };
        self.emails.set(&email.id_.clone(), email.clone());
        Ok(email)
    }

    /// `search_emails`: the query in the subject or body, ignoring case; only from `sender`
    /// (its address compared ignoring case) when given. An empty query matches every e-mail.
    pub fn search_emails(&self, query: &str, sender: Option<&str>) -> Result<Vec<Email>, String> {
        let q = lower(query);
        let from = sender.map(lower);
        let found: Vec<Email> = self
            .emails
            .values()
            .filter(|e| from.as_ref().is_none_or(|f| lower(&e.sender) == *f))
            .filter(|e| lower(&e.subject).contains(&q) || lower(&e.body).contains(&q))
            .cloned()
            .collect();
        if found.is_empty() {
            return Err("No emails found. Try with a different query.".into());
        }
        Ok(found)
    }

    /// `delete_email`: the e-mail moves to the trash.
    pub fn delete_email(&mut self, email_id: &str) -> Result<String, String> {
        let email = self
            .emails
            .pop(email_id)
            .ok_or_else(|| format!("Email with ID '{email_id}' not found."))?;
        self.trash.set(email_id, email);
        Ok(format!("Email with id {email_id} deleted successfully."))
    }

    /// `get_unread_emails`: the unread e-mails, marked read; returned read, as Python
    /// returns the very objects it has just marked.
    pub fn get_unread(&mut self) -> Vec<Email> {
        self.emails
            .values_mut()
            .filter(|e| !e.read)
            .map(|e| {
                e.read = true;
                e.clone()
            })
            .collect()
    }

    /// `search_contacts_by_name`: the name contains the query, ignoring case.
    pub fn search_contacts_by_name(&self, query: &str) -> Result<Vec<EmailContact>, String> {
        self.contacts(query, "name", |c| &c.name)
    }

    /// `search_contacts_by_email`: the address contains the query, ignoring case.
    pub fn search_contacts_by_email(&self, query: &str) -> Result<Vec<EmailContact>, String> {
        self.contacts(query, "email", |c| &c.email)
    }

    fn contacts(
        &self,
        query: &str,
        what: &str,
        field: fn(&EmailContact) -> &String,
    ) -> Result<Vec<EmailContact>, String> {
        let q = lower(query);
        let found: Vec<_> = self
            .contact_list
            .iter()
            .filter(|c| lower(field(c)).contains(&q))
            .cloned()
            .collect();
        if found.is_empty() {
            return Err(format!("Contact with {what} '{query}' not found."));
        }
        Ok(found)
    }
}
