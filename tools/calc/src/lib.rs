//! `calc`: evaluates arithmetic expressions (`+ - * / ^ ( )`, unary minus, decimals).

pub mod expr;

toolhost_sdk::tool!();

struct Calc;

impl Guest for Calc {
    fn eval(expression: String) -> Result<f64, String> {
        expr::eval(&expression).map_err(|e| e.to_string())
    }
}

export!(Calc);
