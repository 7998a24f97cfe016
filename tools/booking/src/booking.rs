//! The booking client (`travel_booking_client.py`): the user's details, hotels,
//! restaurants, car rental companies and flights, looked up by exact name and city as the
//! original does, with its dict results as ordered (name, value) lists, and the three
//! reservations, which overwrite the environment's single reservation.

use crate::state::{Company, Hotel, Restaurant, State, py_float};
use crate::time::DateTime;

/// A Python dict built by a comprehension: a name seen again keeps its first place and
/// takes the later value.
pub fn dict<T>(pairs: impl IntoIterator<Item = (String, T)>) -> Vec<(String, T)> {
    let mut out: Vec<(String, T)> = Vec::new();
    for (k, v) in pairs {
        match out.iter_mut().find(|(name, _)| *name == k) {
            Some((_, old)) => *old = v,
            None => out.push((k, v)),
        }
    }
    out
}

/// `"Rating: " + str(rating) + "\n" + "Reviews: " + "\n".join(reviews)`.
fn rating_reviews(rating: f64, reviews: &[String]) -> String {
    format!(
        "Rating: {}\nReviews: {}",
        py_float(rating),
        reviews.join("\n")
    )
}

/// `PREFIX + "\n".join(names) + "\n"`, the city listings' shape.
fn listing<'a>(prefix: &str, names: impl Iterator<Item = &'a str>) -> String {
    format!("{prefix}{}\n", names.collect::<Vec<_>>().join("\n"))
}

pub fn hotels_in_city(s: &State, city: &str) -> String {
    let hotels = s.hotels.hotel_list.iter().filter(|h| h.city == city);
    listing("Hotel Names: ", hotels.map(|h| h.name.as_str()))
}

/// The hotels whose name is one of `names`, each with `f` of it.
pub fn hotels<T>(s: &State, names: &[String], f: impl Fn(&Hotel) -> T) -> Vec<(String, T)> {
    dict(
        s.hotels
            .hotel_list
            .iter()
            .filter(|h| names.contains(&h.name))
            .map(|h| (h.name.clone(), f(h))),
    )
}

pub fn hotel_price(h: &Hotel) -> String {
    format!(
        "Price range: {} - {}",
        py_float(h.price_min),
        py_float(h.price_max)
    )
}

pub fn hotel_reviews(h: &Hotel) -> String {
    rating_reviews(h.rating, &h.reviews)
}

pub fn restaurants_in_city(s: &State, city: &str) -> String {
    let found = s
        .restaurants
        .restaurant_list
        .iter()
        .filter(|r| r.city == city);
    listing(
        &format!("Restaurant in {city}: "),
        found.map(|r| r.name.as_str()),
    )
}

/// The restaurants whose name is one of `names`, each with `f` of it.
pub fn restaurants<T>(
    s: &State,
    names: &[String],
    f: impl Fn(&Restaurant) -> T,
) -> Vec<(String, T)> {
    let list = s.restaurants.restaurant_list.iter();
    dict(
        list.filter(|r| names.contains(&r.name))
            .map(|r| (r.name.clone(), f(r))),
    )
}

/// The original's quirk: a restaurant matches when its name is a substring of the names
/// joined by `", "` (so `"Le"` matches, and so does a name spanning two entries).
pub fn dietary_restrictions(s: &State, names: &[String]) -> Vec<(String, String)> {
    let joined = names.join(", ");
    let list = s.restaurants.restaurant_list.iter();
    dict(
        list.filter(|r| joined.contains(&r.name))
            .map(|r| (r.name.clone(), r.dietary_restrictions.clone())),
    )
}

pub fn restaurant_reviews(r: &Restaurant) -> String {
    rating_reviews(r.rating, &r.reviews)
}

pub fn companies_in_city(s: &State, city: &str) -> String {
    let found = s.car_rental.company_list.iter().filter(|c| c.city == city);
    listing(
        &format!("Car Rental Companies in {city}: "),
        found.map(|c| c.name.as_str()),
    )
}

/// The car rental companies whose name is one of `names`, each with `f` of it.
pub fn companies<T>(s: &State, names: &[String], f: impl Fn(&Company) -> T) -> Vec<(String, T)> {
    let list = s.car_rental.company_list.iter();
    dict(
        list.filter(|c| names.contains(&c.name))
            .map(|c| (c.name.clone(), f(c))),
    )
}

pub fn company_reviews(c: &Company) -> String {
    rating_reviews(c.rating, &c.reviews)
}

pub fn flights(s: &State, from: &str, to: &str) -> String {
    let lines: Vec<String> = s
        .flights
        .flight_list
        .iter()
        .filter(|f| f.departure_city == from && f.arrival_city == to)
        .map(|f| {
            format!(
                "Airline: {}, Flight Number: {}, Departure Time: {}, Arrival Time: {}, Price: {}, Contact Information: {}",
                f.airline,
                f.flight_number,
                f.departure_time.to_py_str(),
                f.arrival_time.to_py_str(),
                py_float(f.price),
                f.contact_information
            )
        })
        .collect();
    lines.join("\n")
}

/// What every reservation sets first, in the original's order: the user's phone number,
/// the type and the title. It is kept even if the times then fail to parse.
fn book(s: &mut State, kind: &str, title: &str) {
    s.reservation.contact_information = s.user.phone_number.clone();
    s.reservation.reservation_type = Some(kind.into());
    s.reservation.title = title.into();
}

pub fn reserve_hotel(s: &mut State, hotel: &str, start: &str, end: &str) -> Result<String, String> {
    book(s, "hotel", hotel);
    s.reservation.start_time = DateTime::from_iso(start)?;
    s.reservation.end_time = DateTime::from_iso(end)?;
    Ok(format!(
        "Reservation for {hotel} from {start} to {end} has been made successfully."
    ))
}

/// The end is two hours after the start.
pub fn reserve_restaurant(s: &mut State, restaurant: &str, start: &str) -> Result<String, String> {
    book(s, "restaurant", restaurant);
    let at = DateTime::from_iso(start)?;
    s.reservation.start_time = at;
    let end = at.plus_hours(2)?;
    s.reservation.end_time = end;
    Ok(format!(
        "Reservation for {restaurant} from {} to {} on {} has been made successfully.",
        at.hh_mm(),
        end.hh_mm(),
        at.date_iso()
    ))
}

/// The original's quirk: the reservation ends when it starts; `end` is only echoed
/// (`None` when absent).
pub fn reserve_car(
    s: &mut State,
    company: &str,
    start: &str,
    end: Option<&str>,
) -> Result<String, String> {
    book(s, "car", company);
    let at = DateTime::from_iso(start)?;
    s.reservation.start_time = at;
    s.reservation.end_time = at;
    let end = end.unwrap_or("None");
    Ok(format!(
        "Reservation for a car at {company} from {start} to {end} has been made successfully."
    ))
}
