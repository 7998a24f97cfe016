//! The calendar client (`tools/calendar_client.py`, `tools/types.py`): the `Calendar` state
//! and every operation the suites register, with the original's quirks: an event's
//! invitation goes to the participants given plus the account, cancelling or rescheduling
//! mails every participant, adding participants mails nobody (whatever its doc says).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dict::Dict;
use crate::email::{Attachment, Inbox};
use crate::event::{CalendarEvent, EventStatus};
use crate::py::lower;
use crate::time::{Date, strptime};

/// The calendar as AgentDojo dumps it; `initial_events` and anything else kept as read
/// (see [`Inbox`] for why).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calendar {
    pub current_day: Date,
    pub account_email: String,
    pub events: Dict<CalendarEvent>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The argument formats of the calendar tools.
const DAY: &str = "%Y-%m-%d";
const MINUTE: &str = "%Y-%m-%d %H:%M";

impl Calendar {
    fn by_day(&self, day: Date) -> impl Iterator<Item = &CalendarEvent> {
        self.events
            .values()
            .filter(move |e| e.start_time.date() == day)
    }

    fn event_mut(&mut self, event_id: &str) -> Result<&mut CalendarEvent, String> {
        self.events
            .get_mut(event_id)
            .ok_or_else(|| format!("Event with ID '{event_id}' not found."))
    }

    /// `get_current_day`.
    pub fn get_current_day(&self) -> String {
        self.current_day.to_string()
    }

    /// `get_day_calendar_events`: the events starting on `day` (`YYYY-MM-DD`).
    pub fn get_day_calendar_events(&self, day: &str) -> Result<Vec<CalendarEvent>, String> {
        let day = strptime(day, DAY)?.date();
        Ok(self.by_day(day).cloned().collect())
    }

    /// `search_calendar_events`: the query in the title or description, ignoring case; only
    /// events starting on `date` when given.
    pub fn search_calendar_events(
        &self,
        query: &str,
        date: Option<&str>,
    ) -> Result<Vec<CalendarEvent>, String> {
        let day = date
            .map(|d| strptime(d, DAY))
            .transpose()?
            .map(|t| t.date());
        let q = lower(query);
        let found: Vec<_> = self
            .events
            .values()
            .filter(|e| day.is_none_or(|d| e.start_time.date() == d))
            .filter(|e| lower(&e.title).contains(&q) || lower(&e.description).contains(&q))
            .cloned()
            .collect();
        if found.is_empty() {
            return Err("No events found. Try with a different query.".into());
        }
        Ok(found)
    }

    /// `create_calendar_event`: the event (the account among its participants, each once)
    /// under the next id, and an invitation to the participants given plus the account.
    #[allow(clippy::too_many_arguments)] // the tool's own parameters
    pub fn create_calendar_event(
        &mut self,
        inbox: &mut Inbox,
        title: String,
        start_time: &str,
        end_time: &str,
        description: String,
        participants: Option<Vec<String>>,
        location: Option<String>,
    ) -> Result<CalendarEvent, String> {
        let start_time = strptime(start_time, MINUTE)?;
        let end_time = strptime(end_time, MINUTE)?;
        // Python appends the account to the caller's list (the invitation's recipients)
        // and gives the event `list(set(...))`: each address once, in an order Python
        // leaves to its string hashes; here, first seen first.
        let mut recipients = participants.unwrap_or_default();
        recipients.push(self.account_email.clone());
        let mut unique: Vec<String> = Vec::new();
        for p in &recipients {
            if !unique.contains(p) {
                unique.push(p.clone());
            }
        }
        let event = CalendarEvent {
            id_: self.events.next_id()?,
            title: title.clone(),
            description: description.clone(),
            start_time,
            end_time,
            location,
            participants: unique,
            all_day: false,
            status: EventStatus::Confirmed,
        };
        self.events.set(&event.id_.clone(), event.clone());
        let attachments = vec![Attachment::Event(event.clone())];
        inbox.send_email(
            recipients,
            format!("Invitation: {title}"),
            description,
            attachments,
            vec![],
            vec![],
        )?;
        Ok(event)
    }

    /// `cancel_calendar_event`: the event is marked canceled (it stays) and its
    /// participants get a cancellation.
    pub fn cancel_calendar_event(
        &mut self,
        inbox: &mut Inbox,
        event_id: &str,
    ) -> Result<String, String> {
        let event = self.event_mut(event_id)?;
        event.status = EventStatus::Canceled;
        let event = event.clone();
        inbox.send_email(
            event.participants.clone(),
            format!("Canceled: '{}'", event.title),
            "The event has been canceled.".into(),
            vec![Attachment::Event(event)],
            vec![],
            vec![],
        )?;
        Ok(format!(
            "Event with ID {event_id} has been canceled and participants have been notified."
        ))
    }

    /// `reschedule_calendar_event`: new times (the same length when no end is given), and
    /// a notice to the participants, its subject the original's un-interpolated
    /// `"Rescheduled: '{event.title}'"` and its body's double space included.
    pub fn reschedule_calendar_event(
        &mut self,
        inbox: &mut Inbox,
        event_id: &str,
        new_start_time: &str,
        new_end_time: Option<&str>,
    ) -> Result<CalendarEvent, String> {
        let end = new_end_time.map(|t| strptime(t, MINUTE)).transpose()?;
        let start = strptime(new_start_time, MINUTE)?;
        let event = self.event_mut(event_id)?;
        let old_start = event.start_time;
        event.start_time = start;
        // As in Python, the start is already moved when the end overflows.
        event.end_time = match end {
            Some(end) => end,
            None => start.plus(event.end_time.minus(old_start))?,
        };
        let event = event.clone();
        let body = format!(
            "The event has been rescheduled. It will start on  {} at {} and end on {} at {}.",
            event.start_time.date(),
            event.start_time.time_iso(),
            event.end_time.date(),
            event.end_time.time_iso()
        );
        inbox.send_email(
            event.participants.clone(),
            "Rescheduled: '{event.title}'".into(),
            body,
            vec![Attachment::Event(event.clone())],
            vec![],
            vec![],
        )?;
        Ok(event)
    }

    /// `add_calendar_event_participants`: appended as given (duplicates too); no e-mail.
    pub fn add_calendar_event_participants(
        &mut self,
        event_id: &str,
        participants: Vec<String>,
    ) -> Result<CalendarEvent, String> {
        let event = self.event_mut(event_id)?;
        event.participants.extend(participants);
        Ok(event.clone())
    }
}
