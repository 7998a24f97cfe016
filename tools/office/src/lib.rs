//! `office`: AgentDojo's e-mail and calendar clients (agentdojo 0.1.35, suite v1:
//! `default_suites/v1/tools/email_client.py` and `calendar_client.py`) as plain Rust over
//! the state the suites dump, shared by the `workspace` and `travel` tool components (not a
//! component itself). Each operation behaves as its Python original, down to the quirks:
//! the same results and ids, the same case-insensitive substring searches, the same
//! `ValueError` texts as `Err(String)`, and the state written back as pydantic dumps it.
//!
//! Two behaviours cannot be carried over a state file, and differ: a new event's
//! participants are `list(set(...))` in Python, in an order its string hashing picks per
//! process (here: first given first); and an event attached by a calendar notice is the
//! calendar's own object in Python, so a later change to the event shows in the notices
//! already sent (here a notice keeps the event as it was when sent). Addresses are not
//! checked as `EmailStr` would.
//!
//! # Layout
//!
//! A tool component reads its state file into these types, calls an operation, writes the
//! state back and converts the result to its WIT types.
//!
//! - [`email`]: `Inbox`, `Email`, contacts, attachments, and the e-mail operations.
//! - [`calendar`]: `Calendar` and the calendar operations (which mail participants through
//!   the inbox).
//! - [`event`]: `CalendarEvent`, which the calendar holds and e-mails attach.
//! - [`time`]: naive dates and datetimes: pydantic's JSON form, Python's `strptime`, now.
//! - [`dict`]: insertion-ordered dicts (e-mails, events, files by id) and the suites' ids.
//! - [`py`]: Python's `repr()` and `lower()` as error messages and searches use them.
//! - [`wit`]: [`wit_conversions!`], these types to and from a component's WIT bindings.

pub mod calendar;
pub mod dict;
pub mod email;
pub mod event;
pub mod py;
pub mod time;
pub mod wit;

pub use calendar::Calendar;
pub use dict::Dict;
pub use email::{Attachment, AttachmentArg, Email, EmailContact, EmailStatus, Inbox};
pub use event::{CalendarEvent, EventStatus};
pub use time::{Date, DateTime};
