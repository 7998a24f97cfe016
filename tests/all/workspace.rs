//! The `workspace` tool (AgentDojo's workspace suite over a JSON state file) run by
//! `toolhost run`: each tool family's operations return what the Python original returns and
//! leave the state it leaves, errors included. The expected values were written from
//! `email_client.py`, `calendar_client.py` and `cloud_drive_client.py` (agentdojo 0.1.35)
//! and checked against them on this state.

use serde_json::{Value, json};

fn email(id: &str, sender: &str, to: &str, subject: &str, body: &str, status: &str) -> Value {
    json!({"id_": id, "sender": sender, "recipients": [to], "cc": [], "bcc": [],
           "subject": subject, "body": body, "status": status, "read": status != "received",
           "timestamp": "2024-05-14T11:00:00", "attachments": []})
}

fn state() -> Value {
    let mut report = email(
        "2",
        "emma@corp.com",
        "bob@corp.com",
        "Report",
        "Attached.",
        "sent",
    );
    report["attachments"] = json!(["4"]);
    json!({
        "inbox": {
            "account_email": "emma@corp.com",
            // What the model rebuilds `emails` from: never the tool's to change.
            "initial_emails": ["as written"],
            "emails": {
                "1": email("1", "bob@corp.com", "emma@corp.com", "Lunch", "Meet at NOON", "received"),
                "2": report,
                "5": email("5", "emma@corp.com", "bob@corp.com", "Draft", "noon?", "draft"),
            },
            "contact_list": [{"email": "emma@corp.com", "name": "Emma"},
                             {"email": "bob@corp.com", "name": "Bob"},
                             {"email": "dora.lee@corp.com", "name": "Dora Lee"}],
            "trash": {},
        },
        "calendar": {
            "current_day": "2024-05-15",
            "account_email": "emma@corp.com",
            "events": {
                "3": {"id_": "3", "title": "Team Sync", "description": "Weekly sync",
                      "start_time": "2024-05-15T10:00:00", "end_time": "2024-05-15T11:00:00",
                      "location": "Room B", "participants": ["emma@corp.com", "bob@corp.com"],
                      "all_day": false, "status": "confirmed"},
                "7": {"id_": "7", "title": "Dentist", "description": "Check-up",
                      "start_time": "2024-05-16T23:45:00", "end_time": "2024-05-17T00:15:00",
                      "location": null, "participants": ["emma@corp.com"],
                      "all_day": false, "status": "confirmed"},
            },
        },
        "cloud_drive": {
            "account_email": "emma@corp.com",
            "files": {
                "0": {"id_": "0", "filename": "notes.txt", "content": "Hello Wörld",
                      "owner": "emma@corp.com", "last_modified": "2024-05-01T08:00:00",
                      "shared_with": {"bob@corp.com": "r"}, "size": 11},
                "4": {"id_": "4", "filename": "Budget.xlsx", "content": "item,cost\nlunch,20",
                      "owner": "bob@corp.com", "last_modified": "2024-05-02T08:00:00",
                      "shared_with": {}, "size": 18},
            },
        },
    })
}

/// Runs `steps` (one after another) on a fresh state; the run's report and the state after.
fn run(steps: Value) -> (Value, Value) {
    toolhost_tests::suite::run_steps("workspace", &state(), &steps)
}

fn ids(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_str().unwrap())
        .collect()
}

/// A timestamp `now()` wrote: pydantic's form with microseconds, this year or later.
fn is_now(v: &Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    s.len() == 26 && s[..4] >= *"2026" && s.as_bytes()[10] == b'T' && s.as_bytes()[19] == b'.'
}

#[test]
fn workspace_mail_reads_searches_sends_and_deletes_as_agentdojo_does() {
    let (report, after) = run(json!([
        {"operation": "get-unread-emails", "args": {}},
        {"operation": "get-unread-emails", "args": {}},
        {"operation": "search-emails", "args": {"query": "noon", "sender": "BOB@corp.com"}},
        {"operation": "search-emails", "args": {"query": "NOON"}},
        {"operation": "send-email", "args": {"recipients": ["bob@corp.com"], "subject": "Hi",
            "body": "see file", "cc": ["dora.lee@corp.com"],
            "attachments": [{"type": "file", "file-id": "4", "event-details": null}]}},
        {"operation": "delete-email", "args": {"email-id": "2"}},
        {"operation": "get-sent-emails", "args": {}},
        {"operation": "search-contacts-by-name", "args": {"query": "LEE"}},
        {"operation": "search-contacts-by-email", "args": {"query": "corp.com"}},
        {"operation": "get-draft-emails", "args": {}},
    ]));
    assert_eq!(report["stop"]["reason"], "completed", "{report:#}");
    let out = |i: usize| &report["steps"][i]["output"];
    // Returned as Python returns them: the very objects it has just marked read.
    assert_eq!(ids(out(0)), ["1"]);
    assert_eq!(out(0)[0]["read"], true);
    assert_eq!(out(1), &json!([]));
    assert_eq!(ids(out(2)), ["1"]);
    assert_eq!(ids(out(3)), ["1", "5"]);
    let sent = out(4);
    assert_eq!(sent["id"], "6");
    assert_eq!(sent["sender"], "emma@corp.com");
    assert_eq!(
        (&sent["status"], &sent["read"], &sent["bcc"]),
        (&json!("sent"), &json!(true), &json!([]))
    );
    assert_eq!(sent["attachments"], json!([{"file": "4"}]));
    assert!(is_now(&sent["timestamp"]), "{sent}");
    assert_eq!(out(5), "Email with id 2 deleted successfully.");
    assert_eq!(ids(out(6)), ["6"]);
    assert_eq!(
        out(7),
        &json!([{"email": "dora.lee@corp.com", "name": "Dora Lee"}])
    );
    assert_eq!(out(8).as_array().unwrap().len(), 3);
    assert_eq!(ids(out(9)), ["5"]);

    let inbox = &after["inbox"];
    let keys: Vec<&String> = inbox["emails"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["1", "5", "6"]);
    assert_eq!(inbox["emails"]["1"]["read"], true);
    assert_eq!(inbox["emails"]["6"]["attachments"], json!(["4"]));
    assert_eq!(inbox["trash"]["2"]["subject"], "Report");
    assert_eq!(inbox["initial_emails"], json!(["as written"]));
    // pydantic's computed fields, written fresh.
    assert_eq!(ids_of(&inbox["sent"]), ["6"]);
    assert_eq!(ids_of(&inbox["received"]), ["1"]);
    assert_eq!(ids_of(&inbox["drafts"]), ["5"]);
}

fn ids_of(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|x| x["id_"].as_str().unwrap())
        .collect()
}

#[test]
fn workspace_calendar_creates_reschedules_and_cancels_with_agentdojos_notices() {
    let (report, after) = run(json!([
        {"operation": "get-current-day", "args": {}},
        {"operation": "get-day-calendar-events", "args": {"day": "2024-5-15"}},
        {"operation": "search-calendar-events", "args": {"query": "", "date": "2024-05-16"}},
        {"operation": "create-calendar-event", "args": {"title": "Lunch",
            "start-time": "2024-05-19 12:00", "end-time": "2024-05-19 13:00",
            "participants": ["carol@x.com", "emma@corp.com", "carol@x.com"], "location": "Cafe"}},
        {"operation": "reschedule-calendar-event", "args": {"event-id": "7",
            "new-start-time": "2024-05-20 23:30"}},
        {"operation": "cancel-calendar-event", "args": {"event-id": "3"}},
        {"operation": "add-calendar-event-participants", "args": {"event-id": "7",
            "participants": ["bob@corp.com", "bob@corp.com"]}},
    ]));
    assert_eq!(report["stop"]["reason"], "completed", "{report:#}");
    let out = |i: usize| &report["steps"][i]["output"];
    assert_eq!(out(0), "2024-05-15");
    assert_eq!(ids(out(1)), ["3"]);
    assert_eq!(ids(out(2)), ["7"]);
    let lunch = out(3);
    assert_eq!(lunch["id"], "8");
    assert_eq!(lunch["description"], "");
    assert_eq!(lunch["start-time"], "2024-05-19T12:00:00");
    // Each address once, the account included (Python's set; its order is Python's hash's).
    assert_eq!(
        lunch["participants"],
        json!(["carol@x.com", "emma@corp.com"])
    );
    // The same length, across midnight.
    assert_eq!(out(4)["start-time"], "2024-05-20T23:30:00");
    assert_eq!(out(4)["end-time"], "2024-05-21T00:00:00");
    assert_eq!(
        out(5),
        "Event with ID 3 has been canceled and participants have been notified."
    );
    assert_eq!(
        out(6)["participants"],
        json!(["emma@corp.com", "bob@corp.com", "bob@corp.com"])
    );

    let emails = &after["inbox"]["emails"];
    // The invitation goes to the list as given, with the account appended.
    assert_eq!(
        emails["6"]["recipients"],
        json!([
            "carol@x.com",
            "emma@corp.com",
            "carol@x.com",
            "emma@corp.com"
        ])
    );
    assert_eq!(emails["6"]["subject"], "Invitation: Lunch");
    assert_eq!(emails["6"]["attachments"][0]["id_"], "8");
    assert_eq!(emails["7"]["subject"], "Rescheduled: '{event.title}'");
    assert_eq!(
        emails["7"]["body"],
        "The event has been rescheduled. It will start on  2024-05-20 at 23:30:00 and end on 2024-05-21 at 00:00:00."
    );
    assert_eq!(emails["8"]["subject"], "Canceled: 'Team Sync'");
    assert_eq!(emails["8"]["body"], "The event has been canceled.");
    assert_eq!(
        emails["8"]["recipients"],
        json!(["emma@corp.com", "bob@corp.com"])
    );
    assert_eq!(
        emails.as_object().unwrap().len(),
        6,
        "adding participants mails nobody"
    );
    let events = &after["calendar"]["events"];
    assert_eq!(events["3"]["status"], "canceled");
    assert_eq!(events["8"]["location"], "Cafe");
    assert_eq!(events["7"]["end_time"], "2024-05-21T00:00:00");
}

#[test]
fn workspace_drive_creates_appends_shares_and_deletes_as_agentdojo_does() {
    let (report, after) = run(json!([
        {"operation": "search-files-by-filename", "args": {"filename": "BUDGET"}},
        {"operation": "search-files-by-filename", "args": {"filename": "nothing"}},
        {"operation": "search-files", "args": {"query": "wÖrld"}},
        {"operation": "create-file", "args": {"filename": "new.txt", "content": "Ünïcode ✓"}},
        {"operation": "append-to-file", "args": {"file-id": "0", "content": "!!"}},
        {"operation": "share-file", "args": {"file-id": "0", "email": "eve@evil.com", "permission": "rw"}},
        {"operation": "share-file", "args": {"file-id": "0", "email": "bob@corp.com", "permission": "rw"}},
        {"operation": "delete-file", "args": {"file-id": "4"}},
        {"operation": "list-files", "args": {}},
    ]));
    assert_eq!(report["stop"]["reason"], "completed", "{report:#}");
    let out = |i: usize| &report["steps"][i]["output"];
    assert_eq!(ids(out(0)), ["4"]);
    assert_eq!(out(1), &json!([]));
    assert_eq!(ids(out(2)), ["0"]);
    let new = out(3);
    assert_eq!((&new["id"], &new["size"]), (&json!("5"), &json!(9)));
    assert_eq!(new["owner"], "emma@corp.com");
    assert!(is_now(&new["last-modified"]), "{new}");
    assert_eq!(out(4)["content"], "Hello Wörld!!");
    assert_eq!(out(4)["size"], 13);
    assert_eq!(
        out(6)["shared-with"],
        json!([{"email": "bob@corp.com", "permission": "rw"},
               {"email": "eve@evil.com", "permission": "rw"}])
    );
    assert_eq!(out(7)["filename"], "Budget.xlsx");
    assert_eq!(ids(out(8)), ["0", "5"]);

    let files = &after["cloud_drive"]["files"];
    assert_eq!(
        files["0"]["shared_with"],
        json!({"bob@corp.com": "rw", "eve@evil.com": "rw"})
    );
    assert!(is_now(&files["0"]["last_modified"]));
    assert_eq!(files["5"]["shared_with"], json!({}));
    assert!(files.get("4").is_none());
}

#[test]
fn workspace_refuses_with_agentdojos_messages_and_leaves_the_state() {
    for (op, args, message) in [
        (
            "search-emails",
            json!({"query": "zzz"}),
            "No emails found. Try with a different query.",
        ),
        (
            "delete-email",
            json!({"email-id": "9"}),
            "Email with ID '9' not found.",
        ),
        (
            "search-contacts-by-name",
            json!({"query": "Zed"}),
            "Contact with name 'Zed' not found.",
        ),
        (
            "search-contacts-by-email",
            json!({"query": "x@y"}),
            "Contact with email 'x@y' not found.",
        ),
        (
            "send-email",
            json!({"recipients": [], "subject": "s", "body": "b",
                   "attachments": [{"type": "file", "file-id": null, "event-details": null}]}),
            "Attachment of type 'file' must have a 'file_id' field.",
        ),
        (
            "send-email",
            json!({"recipients": [], "subject": "s", "body": "b",
                   "attachments": [{"type": "event", "file-id": null, "event-details": null}]}),
            "Attachment of type 'event' must have an 'event_details' field.",
        ),
        (
            "get-day-calendar-events",
            json!({"day": "15/05/2024"}),
            "time data '15/05/2024' does not match format '%Y-%m-%d'",
        ),
        (
            "get-day-calendar-events",
            json!({"day": "2024-05-15 10:00"}),
            "unconverted data remains:  10:00",
        ),
        (
            "get-day-calendar-events",
            json!({"day": "2024-02-30"}),
            "day is out of range for month",
        ),
        (
            "search-calendar-events",
            json!({"query": "sync", "date": "2024-05-16"}),
            "No events found. Try with a different query.",
        ),
        (
            "create-calendar-event",
            json!({"title": "t", "start-time": "2024-05-19T14:00", "end-time": "2024-05-19 15:00"}),
            "time data '2024-05-19T14:00' does not match format '%Y-%m-%d %H:%M'",
        ),
        (
            "reschedule-calendar-event",
            json!({"event-id": "99", "new-start-time": "2024-05-21 10:00"}),
            "Event with ID '99' not found.",
        ),
        (
            "cancel-calendar-event",
            json!({"event-id": "42"}),
            "Event with ID '42' not found.",
        ),
        (
            "add-calendar-event-participants",
            json!({"event-id": "42", "participants": []}),
            "Event with ID '42' not found.",
        ),
        (
            "get-file-by-id",
            json!({"file-id": "x"}),
            "File with ID 'x' not found.",
        ),
        (
            "append-to-file",
            json!({"file-id": "77", "content": "!"}),
            "File with ID '77' not found.",
        ),
        (
            "share-file",
            json!({"file-id": "77", "email": "a@b.c", "permission": "r"}),
            "File with ID '77' not found.",
        ),
        (
            "delete-file",
            json!({"file-id": "77"}),
            "File with ID '77' not found.",
        ),
        (
            "search-files",
            json!({"query": "nothing"}),
            "No files found with the given query ('nothing'). Try a different search term.",
        ),
    ] {
        let (report, mut after) = run(json!([{"operation": op, "args": args}]));
        let error = &report["steps"][0]["error"];
        assert_eq!(error["kind"], "tool_error", "{op}: {report:#}");
        assert!(
            error["message"].as_str().unwrap().ends_with(message),
            "{op}: {error}"
        );
        // A call that changes the state writes it back even when it fails, as Python keeps
        // what it changed: with pydantic's computed fields, which are no state.
        for computed in ["received", "sent", "drafts"] {
            after["inbox"].as_object_mut().unwrap().remove(computed);
        }
        assert_eq!(after, state(), "{op} changed the state");
    }
}
