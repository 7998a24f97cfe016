//! A calendar event (`tools/types.py`'s `CalendarEvent`): what the calendar holds and what
//! an e-mail attaches, so both `calendar` and `email` use it and neither uses the other for
//! it (the calendar mails participants through the inbox; an e-mail only carries events).

use serde::{Deserialize, Serialize};

use crate::time::DateTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventStatus {
    Confirmed,
    Canceled,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalendarEvent {
    pub id_: String,
    pub title: String,
    pub description: String,
    pub start_time: DateTime,
    pub end_time: DateTime,
    pub location: Option<String>,
    pub participants: Vec<String>,
    #[serde(default)]
    pub all_day: bool,
    #[serde(default = "confirmed")]
    pub status: EventStatus,
}

fn confirmed() -> EventStatus {
    EventStatus::Confirmed
}
