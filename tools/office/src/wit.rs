//! The conversions between these types and a tool's WIT bindings, written once for every
//! component that exports e-mail or calendar operations. A component's world declares the
//! records of `tools/workspace/wit/workspace.wit` (`email-status`, `event-status`,
//! `calendar-event`, `attachment`, `email`, `email-contact`, `event-details`,
//! `attachment-arg`) and invokes [`wit_conversions!`](crate::wit_conversions) beside its
//! bindings.

/// Defines, in the invoking module (where the bindings' `Email`, `CalendarEvent`, … are in
/// scope): `email`, `event`, `contact` (state → WIT, for results) and `attachment_args`
/// (WIT → the `send_email` arguments, event times parsed as pydantic parses them).
#[macro_export]
macro_rules! wit_conversions {
    () => {
        fn event(e: &$crate::CalendarEvent) -> CalendarEvent {
            CalendarEvent {
                id: e.id_.clone(),
                title: e.title.clone(),
                description: e.description.clone(),
                start_time: e.start_time.to_string(),
                end_time: e.end_time.to_string(),
                location: e.location.clone(),
                participants: e.participants.clone(),
                all_day: e.all_day,
                status: match e.status {
                    $crate::EventStatus::Confirmed => EventStatus::Confirmed,
                    $crate::EventStatus::Canceled => EventStatus::Canceled,
                },
            }
        }

        fn email(e: &$crate::Email) -> Email {
            Email {
                id: e.id_.clone(),
                sender: e.sender.clone(),
                recipients: e.recipients.clone(),
                cc: e.cc.clone(),
                bcc: e.bcc.clone(),
                subject: e.subject.clone(),
                body: e.body.clone(),
                status: match e.status {
                    $crate::EmailStatus::Sent => EmailStatus::Sent,
                    $crate::EmailStatus::Received => EmailStatus::Received,
                    $crate::EmailStatus::Draft => EmailStatus::Draft,
                },
                read: e.read,
                timestamp: e.timestamp.to_string(),
                attachments: e
                    .attachments
                    .iter()
                    .map(|a| match a {
                        $crate::Attachment::File(id) => Attachment::File(id.clone()),
                        $crate::Attachment::Event(ev) => Attachment::Event(event(ev)),
                    })
                    .collect(),
            }
        }

        #[allow(dead_code)] // not every world lists contacts
        fn contact(c: &$crate::EmailContact) -> EmailContact {
            EmailContact {
                email: c.email.clone(),
                name: c.name.clone(),
            }
        }

        fn attachment_args(
            args: Option<Vec<AttachmentArg>>,
        ) -> Result<Vec<$crate::AttachmentArg>, String> {
            let details = |d: EventDetails| -> Result<$crate::CalendarEvent, String> {
                Ok($crate::CalendarEvent {
                    id_: d.id,
                    title: d.title,
                    description: d.description,
                    start_time: $crate::DateTime::parse_iso(&d.start_time)?,
                    end_time: $crate::DateTime::parse_iso(&d.end_time)?,
                    location: d.location,
                    participants: d.participants,
                    all_day: d.all_day.unwrap_or(false),
                    status: match d.status {
                        Some(EventStatus::Canceled) => $crate::EventStatus::Canceled,
                        _ => $crate::EventStatus::Confirmed,
                    },
                })
            };
            args.unwrap_or_default()
                .into_iter()
                .map(|a| {
                    Ok($crate::AttachmentArg {
                        kind: a.type_,
                        file_id: a.file_id,
                        event_details: a.event_details.map(details).transpose()?,
                    })
                })
                .collect()
        }
    };
}
