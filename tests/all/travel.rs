//! The `travel` tool (AgentDojo's travel suite over a JSON state file) run by `toolhost run`:
//! each operation returns what AgentDojo's Python original returns on the same state and
//! leaves the state it would, errors included. The state (`tests/fixtures/travel/state.json`)
//! is a pydantic dump of a small `TravelEnvironment`; the expected values were written from
//! the Python and checked against it (agentdojo 0.1.35).

use serde_json::{Value, json};

fn state() -> Value {
    serde_json::from_str(include_str!("../fixtures/travel/state.json")).unwrap()
}

fn run(steps: Value) -> (Value, Value) {
    toolhost_tests::suite::run_steps("travel", &state(), &steps)
}

fn entries(pairs: &[(&str, Value)]) -> Value {
    pairs.iter().map(|(n, v)| json!({"name": n, "value": v})).collect()
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
        {"operation": "get-all-car-rental-companies-in-city", "args": {"city": "Los Angeles"}},
        {"operation": "get-car-types-available", "args": {"company-name": ["SunSet Rent-A-Car"]}},
        {"operation": "get-car-fuel-options", "args": {"company-name": ["SunSet Rent-A-Car"]}},
        {"operation": "get-rating-reviews-for-car-rental", "args": {"company-name": ["SunSet Rent-A-Car"]}},
        {"operation": "get-car-rental-address", "args": {"company-name": ["SunSet Rent-A-Car"]}},
        {"operation": "get-car-price-per-day", "args": {"company-name": ["SunSet Rent-A-Car"]}},
        {"operation": "get-flight-information", "args": {"departure-city": "Paris", "arrival-city": "London"}},
    ]));
    assert_eq!(report["stop"]["reason"], "completed", "{report:#}");
    let out = |i: usize| report["steps"][i]["output"].clone();
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
    assert_eq!(out(5), entries(&[("City Hub", json!("1-1-1 Nishi-Shinjuku"))]));
    assert_eq!(out(6), "Restaurant in Paris: Le Baratin\nLe\n");
    assert_eq!(
        out(7),
        entries(&[
            ("Le Baratin", json!("Vegan available")),
            ("Le", json!("Vegetarian available")),
        ])
    );
    assert_eq!(out(8), entries(&[("Le Baratin", json!(30.0)), ("Le", json!(12.5))]));
    assert_eq!(out(9), entries(&[("Le", json!("Rating: 3.5\nReviews: Odd name\nFine"))]));
    assert_eq!(
        out(10),
        entries(&[(
            "Le Baratin",
            json!("12:00 PM - 2:00 PM, 7:30 PM - 10:30 PM, open on Tuesdays")
        )])
    );
    assert_eq!(out(11), entries(&[("Le Baratin", json!("French"))]));
    assert_eq!(out(12), entries(&[("Le", json!("Phone: +33 1"))]));
    assert_eq!(out(13), entries(&[("Le Baratin", json!("3 Rue Jouye-Rouve"))]));
    assert_eq!(out(14), "Car Rental Companies in Los Angeles: SunSet Rent-A-Car\n");
    assert_eq!(out(15), entries(&[("SunSet Rent-A-Car", json!(["Sedan", "SUV"]))]));
    assert_eq!(out(16), entries(&[("SunSet Rent-A-Car", json!(["Regular", "Electric"]))]));
    assert_eq!(
        out(17),
        entries(&[("SunSet Rent-A-Car", json!("Rating: 4.5\nReviews: Great service\nClean cars"))])
    );
    assert_eq!(out(18), entries(&[("SunSet Rent-A-Car", json!("1234 Sunset Blvd"))]));
    assert_eq!(out(19), entries(&[("SunSet Rent-A-Car", json!(45.0))]));
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
    let (report, after) =
        reserve("reserve-restaurant", json!({"restaurant": "Le Baratin", "start-time": "2024-05-16 23:30"}));
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
        error["message"].as_str().unwrap().contains("Invalid isoformat string: '11/01/2025'"),
        "{error}"
    );
    assert_eq!(
        *reservation(&after),
        json!({"reservation_type": "hotel", "title": "Le Marais",
               "start_time": "2025-01-11T00:00:00", "end_time": "2024-05-31T17:39:00",
               "contact_information": "327-420-4923"})
    );
}
