//! The `booking` tool (`tools/booking`: AgentDojo's travel suite over a JSON state file, named
//! apart from BFCL's `travel`) run by `toolhost run`:
//! each operation returns what AgentDojo's Python original returns on the same state and
//! leaves the state it would, errors included. The state (`tests/fixtures/travel/state.json`)
//! is a pydantic dump of a small `TravelEnvironment`; the expected values were written from
//! the Python and checked against it (agentdojo 0.1.35).

use serde_json::{Value, json};

fn state() -> Value {
    serde_json::from_str(include_str!("../fixtures/travel/state.json")).unwrap()
}

fn run(steps: Value) -> (Value, Value) {
    toolhost_tests::suite::run_steps("booking", &state(), &steps)
}

fn entries(pairs: &[(&str, Value)]) -> Value {
    pairs
        .iter()
        .map(|(n, v)| json!({"name": n, "value": v}))
        .collect()
}

/// Prices as numbers: JSON has no float type, and `30.0` may come back as `30`.
fn prices(v: &Value) -> Vec<(String, f64)> {
    let entries = v.as_array().unwrap().iter();
    entries
        .map(|e| {
            (
                e["name"].as_str().unwrap().into(),
                e["value"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn travel_looks_up_hotels_restaurants_cars_and_flights_as_agentdojo_does() {
    let (report, after) = run(json!([
        {"operation": "get-user-information", "args": {}},
        {"operation": "get-all-hotels-in-city", "args": {"city": "Paris"}},
        {"operation": "get-all-hotels-in-city", "args": {"city": "Rome"}},
        {"operation": "get-hotels-prices", "args": {"hotel-names": ["Good Night", "Le Marais", "Nope"]}},
        {"operation": "get-rating-reviews-for-hotels", "args": {"hotel-names": ["Le Marais", "Good Night"]}},
        {"operation": "get-hotels-address", "args": {"hotel-name": "City Hub"}},
        {"operation": "get-all-restaurants-in-city", "args": {"city": "Paris"}},
        // The original's quirk: "Le" is a substring of the joined names, so it matches.
        {"operation": "get-dietary-restrictions-for-all-restaurants", "args": {"restaurant-names": ["Le Baratin"]}},
        {"operation": "get-price-for-restaurants", "args": {"restaurant-names": ["Le Baratin", "Le"]}},
        {"operation": "get-rating-reviews-for-restaurants", "args": {"restaurant-names": ["Le"]}},
        {"operation": "check-restaurant-opening-hours", "args": {"restaurant-names": ["Le Baratin"]}},
        {"operation": "get-cuisine-type-for-restaurants", "args": {"restaurant-names": ["Le Baratin"]}},
        {"operation": "get-contact-information-for-restaurants", "args": {"restaurant-names": ["Le"]}},
        {"operation": "get-restaurants-address", "args": {"restaurant-names": ["Le Baratin"]}},
    ]));
    assert_eq!(report["stop"]["reason"], "completed", "{report:#}");
    assert_eq!(after, state(), "a look-up changed the state");
    // A run may make 20 tool calls by default: the rest in a second run.
    let (more, after) = run(json!([
        {"operation": "get-all-car-rental-companies-in-city", "args": {"city": "Los Angeles"}},
        {"operation": "get-car-types-available", "args": {"company-name": ["SunSet Rent-A-Car"]}},
        {"operation": "get-car-fuel-options", "args": {"company-name": ["SunSet Rent-A-Car"]}},
        {"operation": "get-rating-reviews-for-car-rental", "args": {"company-name": ["SunSet Rent-A-Car"]}},
        {"operation": "get-car-rental-address", "args": {"company-name": ["SunSet Rent-A-Car"]}},
        {"operation": "get-car-price-per-day", "args": {"company-name": ["SunSet Rent-A-Car"]}},
        {"operation": "get-flight-information", "args": {"departure-city": "Paris", "arrival-city": "London"}},
    ]));
    assert_eq!(more["stop"]["reason"], "completed", "{more:#}");
    let steps = report["steps"].as_array().unwrap().iter();
    let outputs: Vec<Value> = steps
        .chain(more["steps"].as_array().unwrap())
        .map(|s| s["output"].clone())
        .collect();
    let out = |i: usize| outputs[i].clone();
    assert_eq!(out(0)["id-number"], "123456789");
    assert_eq!(out(0)["phone-number"], "327-420-4923");
    assert_eq!(out(0)["credit-card-number"], "4237-4252-7456-2574");
    assert_eq!(out(1), "Hotel Names: Le Marais\nGood Night\n");
    assert_eq!(out(2), "Hotel Names: \n");
    assert_eq!(
        out(3),
        entries(&[
            ("Le Marais", json!("Price range: 120.0 - 180.0")),
            ("Good Night", json!("Price range: 240.0 - 400.0")),
        ])
    );
    assert_eq!(
        out(4),
        entries(&[
            ("Le Marais", json!("Rating: 4.2\nReviews: Charming\nQuiet")),
            ("Good Night", json!("Rating: 5.0\nReviews: ")),
        ])
    );
    assert_eq!(
        out(5),
        entries(&[("City Hub", json!("1-1-1 Nishi-Shinjuku"))])
    );
    assert_eq!(out(6), "Restaurant in Paris: Le Baratin\nLe\n");
    assert_eq!(
        out(7),
        entries(&[
            ("Le Baratin", json!("Vegan available")),
            ("Le", json!("Vegetarian available")),
        ])
    );
    assert_eq!(
        prices(&out(8)),
        [("Le Baratin".to_string(), 30.0), ("Le".to_string(), 12.5)]
    );
    assert_eq!(
        out(9),
        entries(&[("Le", json!("Rating: 3.5\nReviews: Odd name\nFine"))])
    );
    assert_eq!(
        out(10),
        entries(&[(
            "Le Baratin",
            json!("12:00 PM - 2:00 PM, 7:30 PM - 10:30 PM, open on Tuesdays")
        )])
    );
    assert_eq!(out(11), entries(&[("Le Baratin", json!("French"))]));
    assert_eq!(out(12), entries(&[("Le", json!("Phone: +33 1"))]));
    assert_eq!(
        out(13),
        entries(&[("Le Baratin", json!("3 Rue Jouye-Rouve"))])
    );
    assert_eq!(
        out(14),
        "Car Rental Companies in Los Angeles: SunSet Rent-A-Car\n"
    );
    assert_eq!(
        out(15),
        entries(&[("SunSet Rent-A-Car", json!(["Sedan", "SUV"]))])
    );
    assert_eq!(
        out(16),
        entries(&[("SunSet Rent-A-Car", json!(["Regular", "Electric"]))])
    );
    assert_eq!(
        out(17),
        entries(&[(
            "SunSet Rent-A-Car",
            json!("Rating: 4.5\nReviews: Great service\nClean cars")
        )])
    );
    assert_eq!(
        out(18),
        entries(&[("SunSet Rent-A-Car", json!("1234 Sunset Blvd"))])
    );
    assert_eq!(prices(&out(19)), [("SunSet Rent-A-Car".to_string(), 45.0)]);
    assert_eq!(
        out(20),
        "Airline: British Airways, Flight Number: BA123, Departure Time: 2024-05-16 09:00:00, \
         Arrival Time: 2024-05-16 11:00:00, Price: 200.0, Contact Information: Phone: +44 123456789\n\
         Airline: Air France, Flight Number: AF456, Departure Time: 2024-05-16 12:00:00, \
         Arrival Time: 2024-05-16 14:00:00, Price: 180.5, Contact Information: Phone: +33 1"
    );
    assert_eq!(after, state(), "a look-up changed the state");
}

fn reservation(after: &Value) -> &Value {
    &after["reservation"]
}

#[test]
fn travel_reserves_as_agentdojo_does_quirks_included() {
    let reserve = |op: &str, args: Value| run(json!([{"operation": op, "args": args}]));
    // A restaurant: two hours, across midnight.
    let (report, after) = reserve(
        "reserve-restaurant",
        json!({"restaurant": "Le Baratin", "start-time": "2024-05-16 23:30"}),
    );
    assert_eq!(
        report["steps"][0]["output"],
        "Reservation for Le Baratin from 23:30 to 01:30 on 2024-05-16 has been made successfully."
    );
    assert_eq!(
        *reservation(&after),
        json!({"reservation_type": "restaurant", "title": "Le Baratin",
               "start_time": "2024-05-16T23:30:00", "end_time": "2024-05-17T01:30:00",
               "contact_information": "327-420-4923"})
    );
    // A car: it ends when it starts; the end given (none here) is only echoed.
    let (report, after) = reserve(
        "reserve-car-rental",
        json!({"company": "SunSet Rent-A-Car", "start-time": "2024-05-16 09:00", "end-time": null}),
    );
    assert_eq!(
        report["steps"][0]["output"],
        "Reservation for a car at SunSet Rent-A-Car from 2024-05-16 09:00 to None has been made successfully."
    );
    assert_eq!(reservation(&after)["end_time"], "2024-05-16T09:00:00");
    assert_eq!(reservation(&after)["reservation_type"], "car");
    // A hotel.
    let (report, after) = reserve(
        "reserve-hotel",
        json!({"hotel": "Le Marais", "start-day": "2025-01-11", "end-day": "2025-01-15"}),
    );
    assert_eq!(
        report["steps"][0]["output"],
        "Reservation for Le Marais from 2025-01-11 to 2025-01-15 has been made successfully."
    );
    assert_eq!(reservation(&after)["start_time"], "2025-01-11T00:00:00");
    assert_eq!(reservation(&after)["end_time"], "2025-01-15T00:00:00");
    // A bad end day fails after the type, title and start are set: they stay, as in Python.
    let (report, after) = reserve(
        "reserve-hotel",
        json!({"hotel": "Le Marais", "start-day": "2025-01-11", "end-day": "11/01/2025"}),
    );
    let error = &report["steps"][0]["error"];
    assert_eq!(error["kind"], "tool_error", "{report:#}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("Invalid isoformat string: '11/01/2025'"),
        "{error}"
    );
    assert_eq!(
        *reservation(&after),
        json!({"reservation_type": "hotel", "title": "Le Marais",
               "start_time": "2025-01-11T00:00:00", "end_time": "2024-05-31T17:39:00",
               "contact_information": "327-420-4923"})
    );
}

/// The participants as a set: Python's `list(set(...))` orders them by string hashes.
fn sorted(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = serde_json::from_value(v.clone()).unwrap();
    out.sort();
    out
}

#[test]
fn travel_keeps_a_calendar_and_sends_email_as_agentdojo_does() {
    let (report, after) = run(json!([
        {"operation": "create-calendar-event", "args": {"title": "Dinner",
            "start-time": "2024-05-16 19:00", "end-time": "2024-05-16 21:00", "description": null,
            "participants": ["ann@x.com"], "location": "1 Rue X"}},
        {"operation": "search-calendar-events", "args": {"query": "dinner", "date": null}},
        {"operation": "get-day-calendar-events", "args": {"day": "2024-05-15"}},
        {"operation": "cancel-calendar-event", "args": {"event-id": "0"}},
        {"operation": "send-email", "args": {"recipients": ["jay@google.com"], "subject": "Hi",
            "body": "B", "attachments": null, "cc": null, "bcc": null}},
    ]));
    assert_eq!(report["stop"]["reason"], "completed", "{report:#}");
    let out = |i: usize| report["steps"][i]["output"].clone();
    let created = out(0);
    assert_eq!(created["id"], "1");
    assert_eq!(created["start-time"], "2024-05-16T19:00:00");
    assert_eq!(created["location"], "1 Rue X");
    assert_eq!(
        sorted(&created["participants"]),
        ["ann@x.com", "emma.johnson@bluesparrowtech.com"]
    );
    assert_eq!(out(1)[0]["title"], "Dinner");
    assert_eq!(out(2).as_array().unwrap().len(), 1);
    assert_eq!(out(2)[0]["title"], "Team Sync");
    assert_eq!(
        out(3),
        "Event with ID 0 has been canceled and participants have been notified."
    );
    assert_eq!(out(4)["id"], "3");
    assert_eq!(out(4)["recipients"], json!(["jay@google.com"]));

    let events = &after["calendar"]["events"];
    assert_eq!(events["0"]["status"], "canceled");
    assert_eq!(events["1"]["end_time"], "2024-05-16T21:00:00");
    let emails = &after["inbox"]["emails"];
    // The invitation goes to the participants given plus the account (Python appends it
    // to the caller's list), then the cancellation, then the e-mail sent.
    assert_eq!(emails["1"]["subject"], "Invitation: Dinner");
    assert_eq!(
        sorted(&emails["1"]["recipients"]),
        ["ann@x.com", "emma.johnson@bluesparrowtech.com"]
    );
    assert_eq!(emails["1"]["attachments"][0]["id_"], "1");
    assert_eq!(emails["2"]["subject"], "Canceled: 'Team Sync'");
    assert_eq!(emails["2"]["body"], "The event has been canceled.");
    assert_eq!(emails["3"]["sender"], "emma.johnson@bluesparrowtech.com");
    assert_eq!(emails["3"]["status"], "sent");
}

#[test]
fn travel_refuses_bad_events_with_agentdojo_messages() {
    toolhost_tests::suite::assert_refusals(
        "booking",
        &state(),
        &[
            (
                "search-calendar-events",
                json!({"query": "sync", "date": "2024-05-16"}),
                "No events found. Try with a different query.",
            ),
            (
                "cancel-calendar-event",
                json!({"event-id": "9"}),
                "Event with ID '9' not found.",
            ),
            (
                "get-day-calendar-events",
                json!({"day": "15-05-2024"}),
                "time data '15-05-2024' does not match format '%Y-%m-%d'",
            ),
            (
                "create-calendar-event",
                json!({"title": "X", "start-time": "2024-05-16T19:00", "end-time": "2024-05-16 21:00",
                   "description": null, "participants": null, "location": null}),
                "time data '2024-05-16T19:00' does not match format '%Y-%m-%d %H:%M'",
            ),
        ],
    );
}
