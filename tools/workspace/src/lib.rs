//! `workspace`: AgentDojo's workspace suite tools (agentdojo 0.1.35, suite v1:
//! `default_suites/v1/tools` `email_client.py`, `calendar_client.py` and
//! `cloud_drive_client.py`, the 24 functions `workspace/task_suite.py` registers) over a
//! JSON state file, so that the suite's tasks run sandboxed and its own `utility()` and
//! `security()` can score the state a run leaves.
//!
//! The state is the suite's environment as JSON (`inbox`, `calendar`, `cloud_drive`), at
//! `/workspace/state.json`: the host grants the file, the tool only reads and writes it.
//! Each operation behaves as its Python original (the e-mail and calendar ones are the
//! shared `office` crate's): the same results, ids, searches and error messages.
//!
//! # Layout
//!
//! - `lib.rs`: the WIT exports: load the state, run the operation, write back what
//!   changed, convert the result.
//! - [`state`]: the state file (`inbox`, `calendar`, `cloud_drive`).
//! - [`drive`]: the cloud drive and its operations.

// The bindings' export shims take a flattened `send-email` (15 core values).
#![allow(clippy::too_many_arguments)]

pub mod drive;
pub mod state;

toolhost_sdk::tool!();

use state::State;

struct WorkspaceTools;

office::wit_conversions!();

fn events(list: &[office::CalendarEvent]) -> Vec<CalendarEvent> {
    list.iter().map(event).collect()
}

fn emails(list: &[office::Email]) -> Vec<Email> {
    list.iter().map(email).collect()
}

fn file(f: &drive::CloudDriveFile) -> CloudDriveFile {
    CloudDriveFile {
        id: f.id_.clone(),
        filename: f.filename.clone(),
        content: f.content.clone(),
        owner: f.owner.clone(),
        last_modified: f.last_modified.to_string(),
        shared_with: f
            .shared_with
            .0
            .iter()
            .map(|(email, p)| Share {
                email: email.clone(),
                permission: match p {
                    drive::SharingPermission::R => SharingPermission::R,
                    drive::SharingPermission::Rw => SharingPermission::Rw,
                },
            })
            .collect(),
        size: f.size,
    }
}

fn files(list: &[drive::CloudDriveFile]) -> Vec<CloudDriveFile> {
    list.iter().map(file).collect()
}

impl Guest for WorkspaceTools {
    fn send_email(
        recipients: Vec<String>,
        subject: String,
        body: String,
        attachments: Option<Vec<AttachmentArg>>,
        cc: Option<Vec<String>>,
        bcc: Option<Vec<String>>,
    ) -> Result<Email, String> {
        let attachments = office::email::parse_attachments(attachment_args(attachments)?)?;
        State::change(|s| {
            s.inbox.send_email(
                recipients,
                subject,
                body,
                attachments,
                cc.unwrap_or_default(),
                bcc.unwrap_or_default(),
            )
        })
        .map(|e| email(&e))
    }

    fn delete_email(email_id: String) -> Result<String, String> {
        State::change(|s| s.inbox.delete_email(&email_id))
    }

    fn get_unread_emails() -> Result<Vec<Email>, String> {
        State::change(|s| Ok(emails(&s.inbox.get_unread())))
    }

    fn get_sent_emails() -> Result<Vec<Email>, String> {
        Ok(emails(&State::load()?.inbox.sent()))
    }

    fn get_received_emails() -> Result<Vec<Email>, String> {
        Ok(emails(&State::load()?.inbox.received()))
    }

    fn get_draft_emails() -> Result<Vec<Email>, String> {
        Ok(emails(&State::load()?.inbox.drafts()))
    }

    fn search_emails(query: String, sender: Option<String>) -> Result<Vec<Email>, String> {
        let s = State::load()?;
        Ok(emails(&s.inbox.search_emails(&query, sender.as_deref())?))
    }

    fn search_contacts_by_name(query: String) -> Result<Vec<EmailContact>, String> {
        let found = State::load()?.inbox.search_contacts_by_name(&query)?;
        Ok(found.iter().map(contact).collect())
    }

    fn search_contacts_by_email(query: String) -> Result<Vec<EmailContact>, String> {
        let found = State::load()?.inbox.search_contacts_by_email(&query)?;
        Ok(found.iter().map(contact).collect())
    }

    fn get_current_day() -> Result<String, String> {
        Ok(State::load()?.calendar.get_current_day())
    }

    fn search_calendar_events(
        query: String,
        date: Option<String>,
    ) -> Result<Vec<CalendarEvent>, String> {
        let s = State::load()?;
        Ok(events(
            &s.calendar.search_calendar_events(&query, date.as_deref())?,
        ))
    }

    fn get_day_calendar_events(day: String) -> Result<Vec<CalendarEvent>, String> {
        Ok(events(
            &State::load()?.calendar.get_day_calendar_events(&day)?,
        ))
    }

    fn create_calendar_event(
        title: String,
        start_time: String,
        end_time: String,
        description: Option<String>,
        participants: Option<Vec<String>>,
        location: Option<String>,
    ) -> Result<CalendarEvent, String> {
        State::change(|s| {
            s.calendar.create_calendar_event(
                &mut s.inbox,
                title,
                &start_time,
                &end_time,
                description.unwrap_or_default(),
                participants,
                location,
            )
        })
        .map(|e| event(&e))
    }

    fn cancel_calendar_event(event_id: String) -> Result<String, String> {
        State::change(|s| s.calendar.cancel_calendar_event(&mut s.inbox, &event_id))
    }

    fn reschedule_calendar_event(
        event_id: String,
        new_start_time: String,
        new_end_time: Option<String>,
    ) -> Result<CalendarEvent, String> {
        State::change(|s| {
            s.calendar.reschedule_calendar_event(
                &mut s.inbox,
                &event_id,
                &new_start_time,
                new_end_time.as_deref(),
            )
        })
        .map(|e| event(&e))
    }

    fn add_calendar_event_participants(
        event_id: String,
        participants: Vec<String>,
    ) -> Result<CalendarEvent, String> {
        State::change(|s| {
            s.calendar
                .add_calendar_event_participants(&event_id, participants)
        })
        .map(|e| event(&e))
    }

    fn append_to_file(file_id: String, content: String) -> Result<CloudDriveFile, String> {
        State::change(|s| s.cloud_drive.append_to_file(&file_id, &content)).map(|f| file(&f))
    }

    fn search_files_by_filename(filename: String) -> Result<Vec<CloudDriveFile>, String> {
        Ok(files(
            &State::load()?
                .cloud_drive
                .search_files_by_filename(&filename),
        ))
    }

    fn create_file(filename: String, content: String) -> Result<CloudDriveFile, String> {
        State::change(|s| s.cloud_drive.create_file(filename, content)).map(|f| file(&f))
    }

    fn delete_file(file_id: String) -> Result<CloudDriveFile, String> {
        State::change(|s| s.cloud_drive.delete_file(&file_id)).map(|f| file(&f))
    }

    fn get_file_by_id(file_id: String) -> Result<CloudDriveFile, String> {
        Ok(file(State::load()?.cloud_drive.get_file_by_id(&file_id)?))
    }

    fn list_files() -> Result<Vec<CloudDriveFile>, String> {
        Ok(files(&State::load()?.cloud_drive.list_files()))
    }

    fn share_file(
        file_id: String,
        email: String,
        permission: SharingPermission,
    ) -> Result<CloudDriveFile, String> {
        let permission = match permission {
            SharingPermission::R => drive::SharingPermission::R,
            SharingPermission::Rw => drive::SharingPermission::Rw,
        };
        State::change(|s| s.cloud_drive.share_file(&file_id, &email, permission)).map(|f| file(&f))
    }

    fn search_files(query: String) -> Result<Vec<CloudDriveFile>, String> {
        Ok(files(&State::load()?.cloud_drive.search_files(&query)?))
    }
}

export!(WorkspaceTools);
