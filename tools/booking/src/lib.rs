//! `booking`: AgentDojo's travel suite tools (v1, `agentdojo/default_suites/v1/tools`:
//! `travel_booking_client.py`, and the calendar and e-mail functions the suite registers)
//! over a JSON state file, so that the suite's tasks run sandboxed and its own `utility()`
//! and `security()` can score the state a run leaves.
//!
//! The state is the suite's environment as JSON, at `/booking/state.json`: the host grants
//! the file, the tool only reads and writes it. Each operation behaves as its Python
//! original, down to the quirks: names match exactly (dietary restrictions by substring of
//! the joined names), floats and datetimes print as Python prints them, a car reservation
//! ends when it starts, a booking that fails on a bad date keeps what it set before, and
//! the errors are the original's messages.
//!
//! # Layout
//! - `lib.rs`: the WIT exports, each one call into the modules below.
//! - `state`: the environment's types, its load and write-back, Python's `str(float)`.
//! - `time`: datetimes as `datetime.fromisoformat` reads them and pydantic writes them.
//! - `booking`: the booking client: look-ups, listings and the three reservations.
//! - the calendar and e-mail operations are the `office` crate's (shared with
//!   `tools/workspace`), over the state's `calendar` and `inbox`.

// The bindings wit-bindgen generates for `send-email` take its arguments flattened (15).
#![allow(clippy::too_many_arguments)]

pub mod booking;
pub mod state;
pub mod time;

toolhost_sdk::tool!();
office::wit_conversions!();

/// The travel suite lists no contacts, so its world has no `email-contact`; the conversions
/// `wit_conversions!` writes for every world need the type.
#[allow(dead_code)]
struct EmailContact {
    email: String,
    name: String,
}

use booking::{companies, hotels, restaurants};
use state::State;

struct TravelTools;

fn entries(d: Vec<(String, String)>) -> Vec<Entry> {
    d.into_iter()
        .map(|(name, value)| Entry { name, value })
        .collect()
}

fn prices(d: Vec<(String, f64)>) -> Vec<Price> {
    d.into_iter()
        .map(|(name, value)| Price { name, value })
        .collect()
}

fn options(d: Vec<(String, Vec<String>)>) -> Vec<Options> {
    d.into_iter()
        .map(|(name, value)| Options { name, value })
        .collect()
}

impl Guest for TravelTools {
    fn get_user_information() -> Result<UserInformation, String> {
        let u = State::load()?.user;
        Ok(UserInformation {
            first_name: u.first_name,
            last_name: u.last_name,
            id_number: u.id_number,
            email: u.email,
            phone_number: u.phone_number,
            address: u.address,
            passport_number: u.passport_number,
            bank_account_number: u.bank_account_number,
            credit_card_number: u.credit_card_number,
        })
    }

    fn get_all_hotels_in_city(city: String) -> Result<String, String> {
        Ok(booking::hotels_in_city(&State::load()?, &city))
    }

    fn get_hotels_prices(hotel_names: Vec<String>) -> Result<Vec<Entry>, String> {
        Ok(entries(hotels(
            &State::load()?,
            &hotel_names,
            booking::hotel_price,
        )))
    }

    fn get_rating_reviews_for_hotels(hotel_names: Vec<String>) -> Result<Vec<Entry>, String> {
        Ok(entries(hotels(
            &State::load()?,
            &hotel_names,
            booking::hotel_reviews,
        )))
    }

    fn get_hotels_address(hotel_name: String) -> Result<Vec<Entry>, String> {
        let s = State::load()?;
        let found = s.hotels.hotel_list.iter().filter(|h| h.name == hotel_name);
        Ok(entries(booking::dict(
            found.map(|h| (h.name.clone(), h.address.clone())),
        )))
    }

    fn get_all_restaurants_in_city(city: String) -> Result<String, String> {
        Ok(booking::restaurants_in_city(&State::load()?, &city))
    }

    fn get_cuisine_type_for_restaurants(
        restaurant_names: Vec<String>,
    ) -> Result<Vec<Entry>, String> {
        let s = State::load()?;
        Ok(entries(restaurants(&s, &restaurant_names, |r| {
            r.cuisine_type.clone()
        })))
    }

    fn get_restaurants_address(restaurant_names: Vec<String>) -> Result<Vec<Entry>, String> {
        let s = State::load()?;
        Ok(entries(restaurants(&s, &restaurant_names, |r| {
            r.address.clone()
        })))
    }

    fn get_rating_reviews_for_restaurants(
        restaurant_names: Vec<String>,
    ) -> Result<Vec<Entry>, String> {
        let s = State::load()?;
        Ok(entries(restaurants(
            &s,
            &restaurant_names,
            booking::restaurant_reviews,
        )))
    }

    fn get_dietary_restrictions_for_all_restaurants(
        restaurant_names: Vec<String>,
    ) -> Result<Vec<Entry>, String> {
        Ok(entries(booking::dietary_restrictions(
            &State::load()?,
            &restaurant_names,
        )))
    }

    fn get_contact_information_for_restaurants(
        restaurant_names: Vec<String>,
    ) -> Result<Vec<Entry>, String> {
        let s = State::load()?;
        Ok(entries(restaurants(&s, &restaurant_names, |r| {
            r.contact_information.clone()
        })))
    }

    fn get_price_for_restaurants(restaurant_names: Vec<String>) -> Result<Vec<Price>, String> {
        let s = State::load()?;
        Ok(prices(restaurants(&s, &restaurant_names, |r| {
            r.price_per_person
        })))
    }

    fn check_restaurant_opening_hours(restaurant_names: Vec<String>) -> Result<Vec<Entry>, String> {
        let s = State::load()?;
        Ok(entries(restaurants(&s, &restaurant_names, |r| {
            r.operating_hours.clone()
        })))
    }

    fn get_all_car_rental_companies_in_city(city: String) -> Result<String, String> {
        Ok(booking::companies_in_city(&State::load()?, &city))
    }

    fn get_car_types_available(company_name: Vec<String>) -> Result<Vec<Options>, String> {
        let s = State::load()?;
        Ok(options(companies(&s, &company_name, |c| {
            c.car_types_available.clone()
        })))
    }

    fn get_rating_reviews_for_car_rental(company_name: Vec<String>) -> Result<Vec<Entry>, String> {
        let s = State::load()?;
        Ok(entries(companies(
            &s,
            &company_name,
            booking::company_reviews,
        )))
    }

    fn get_car_fuel_options(company_name: Vec<String>) -> Result<Vec<Options>, String> {
        let s = State::load()?;
        Ok(options(companies(&s, &company_name, |c| {
            c.fuel_options.clone()
        })))
    }

    fn get_car_rental_address(company_name: Vec<String>) -> Result<Vec<Entry>, String> {
        let s = State::load()?;
        Ok(entries(companies(&s, &company_name, |c| c.address.clone())))
    }

    fn get_car_price_per_day(company_name: Vec<String>) -> Result<Vec<Price>, String> {
        let s = State::load()?;
        Ok(prices(companies(&s, &company_name, |c| c.price_per_day)))
    }

    fn reserve_hotel(hotel: String, start_day: String, end_day: String) -> Result<String, String> {
        State::change(|s| booking::reserve_hotel(s, &hotel, &start_day, &end_day))
    }

    fn reserve_car_rental(
        company: String,
        start_time: String,
        end_time: Option<String>,
    ) -> Result<String, String> {
        State::change(|s| booking::reserve_car(s, &company, &start_time, end_time.as_deref()))
    }

    fn reserve_restaurant(restaurant: String, start_time: String) -> Result<String, String> {
        State::change(|s| booking::reserve_restaurant(s, &restaurant, &start_time))
    }

    fn get_flight_information(
        departure_city: String,
        arrival_city: String,
    ) -> Result<String, String> {
        Ok(booking::flights(
            &State::load()?,
            &departure_city,
            &arrival_city,
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

    fn search_calendar_events(
        query: String,
        date: Option<String>,
    ) -> Result<Vec<CalendarEvent>, String> {
        let s = State::load()?;
        let found = s.calendar.search_calendar_events(&query, date.as_deref())?;
        Ok(found.iter().map(event).collect())
    }

    fn get_day_calendar_events(day: String) -> Result<Vec<CalendarEvent>, String> {
        let found = State::load()?.calendar.get_day_calendar_events(&day)?;
        Ok(found.iter().map(event).collect())
    }

    fn cancel_calendar_event(event_id: String) -> Result<String, String> {
        State::change(|s| s.calendar.cancel_calendar_event(&mut s.inbox, &event_id))
    }

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
            let (cc, bcc) = (cc.unwrap_or_default(), bcc.unwrap_or_default());
            s.inbox
                .send_email(recipients, subject, body, attachments, cc, bcc)
        })
        .map(|e| email(&e))
    }
}

export!(TravelTools);
