//! The travel environment as AgentDojo serialises it (`hotels`, `restaurants`,
//! `car_rental`, `flights`, `user`, `reservation`, and the calendar and inbox the workspace
//! suite shares), read from and written back to the granted state file. Fields the tool does
//! not model survive a round trip (`rest`), so the suite's pydantic model re-reads the file.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::time::DateTime;

/// Where the host grants the state.
pub const PATH: &str = "/booking/state.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub first_name: String,
    pub last_name: String,
    #[serde(rename = "ID_number")]
    pub id_number: String,
    pub email: String,
    pub phone_number: String,
    pub address: String,
    pub passport_number: String,
    pub bank_account_number: String,
    pub credit_card_number: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hotel {
    pub name: String,
    pub city: String,
    pub rating: f64,
    pub price_min: f64,
    pub price_max: f64,
    pub address: String,
    pub reviews: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Restaurant {
    pub name: String,
    pub city: String,
    pub address: String,
    pub rating: f64,
    pub price_per_person: f64,
    pub operating_hours: String,
    pub reviews: Vec<String>,
    pub contact_information: String,
    pub cuisine_type: String,
    pub dietary_restrictions: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Company {
    pub name: String,
    pub city: String,
    pub address: String,
    pub rating: f64,
    pub price_per_day: f64,
    pub reviews: Vec<String>,
    pub contact_information: String,
    pub car_types_available: Vec<String>,
    pub fuel_options: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flight {
    pub airline: String,
    pub flight_number: String,
    pub departure_city: String,
    pub arrival_city: String,
    pub departure_time: DateTime,
    pub arrival_time: DateTime,
    pub price: f64,
    pub contact_information: String,
}

/// The one reservation the environment holds: each booking overwrites it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reservation {
    /// `hotel`, `car` or `restaurant`; `null` before any booking.
    pub reservation_type: Option<String>,
    pub title: String,
    pub start_time: DateTime,
    pub end_time: DateTime,
    pub contact_information: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hotels {
    pub hotel_list: Vec<Hotel>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Restaurants {
    pub restaurant_list: Vec<Restaurant>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CarRental {
    pub company_list: Vec<Company>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flights {
    pub flight_list: Vec<Flight>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub hotels: Hotels,
    pub restaurants: Restaurants,
    pub car_rental: CarRental,
    pub flights: Flights,
    pub user: User,
    pub reservation: Reservation,
    pub calendar: office::Calendar,
    pub inbox: office::Inbox,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl State {
    /// The state in the granted file.
    pub fn load() -> Result<State, String> {
        let text = std::fs::read_to_string(PATH)
            .map_err(|e| format!("cannot read the travel state `{PATH}`: {e}"))?;
        State::parse(&text)
    }

    pub fn parse(text: &str) -> Result<State, String> {
        serde_json::from_str(text)
            .map_err(|e| format!("the travel state `{PATH}` is not valid: {e}"))
    }

    /// Applies `f` to the state and writes it back, whatever `f` answers: as in the
    /// Python original, a call that fails halfway keeps what it changed before failing.
    pub fn change<T>(f: impl FnOnce(&mut State) -> Result<T, String>) -> Result<T, String> {
        let mut s = State::load()?;
        let out = f(&mut s);
        let text = serde_json::to_string(&s).map_err(|e| e.to_string())?;
        std::fs::write(PATH, text)
            .map_err(|e| format!("cannot write the travel state `{PATH}`: {e}"))?;
        out
    }
}

/// Python's `str(float)`: the shortest round-tripping digits, always with a `.0` or an
/// exponent, and exponents from 1e16 up and below 1e-4 (`1e+16`, `1e-05`).
pub fn py_float(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let a = x.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        // Rust writes `1e16` / `1.5e-5`; Python a signed exponent of at least two digits.
        let e = format!("{x:e}");
        let (mantissa, exp) = e.split_once('e').expect("`{:e}` has an exponent");
        let exp: i32 = exp.parse().expect("an integer exponent");
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.unsigned_abs());
    }
    format!("{x:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_python_prints_them() {
        for (x, s) in [
            (4.2, "4.2"),
            (120.0, "120.0"),
            (1e16, "1e+16"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e-7, "1.5e-07"),
            (-3.0, "-3.0"),
            (0.0, "0.0"),
        ] {
            assert_eq!(py_float(x), s);
        }
    }
}
