//! A recursive-descent evaluator. Grammar, lowest precedence first:
//!
//! ```text
//! sum     = product (("+" | "-") product)*
//! product = unary (("*" | "/") unary)*
//! unary   = "-" unary | power
//! power   = atom ("^" unary)?          // right-associative; -2^2 = -4, 2^-1 = 0.5
//! atom    = number | "(" sum ")"
//! ```

use std::fmt;

/// Deepest parenthesis / unary-minus nesting accepted, so hostile input cannot exhaust the
/// guest's stack.
const MAX_DEPTH: usize = 256;

/// Why an expression could not be evaluated. Columns count characters from 1.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    Empty,
    Unexpected { found: char, column: usize },
    UnexpectedEnd { expected: &'static str },
    BadNumber { text: String, column: usize },
    Unclosed { column: usize },
    TooDeep,
    DivisionByZero { column: usize },
    NotFinite { op: char, column: usize },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Empty => write!(f, "empty expression"),
            Error::Unexpected { found, column } => {
                write!(f, "unexpected `{found}` at column {column}")
            }
            Error::UnexpectedEnd { expected } => {
                write!(f, "unexpected end of expression: expected {expected}")
            }
            Error::BadNumber { text, column } => {
                write!(f, "`{text}` at column {column} is not a number")
            }
            Error::Unclosed { column } => {
                write!(f, "`(` at column {column} is never closed")
            }
            Error::TooDeep => write!(f, "expression nests deeper than {MAX_DEPTH} levels"),
            Error::DivisionByZero { column } => write!(f, "division by zero at column {column}"),
            Error::NotFinite { op, column } => {
                write!(
                    f,
                    "`{op}` at column {column} gives a result that is not finite"
                )
            }
        }
    }
}

/// Evaluates `input`.
pub fn eval(input: &str) -> Result<f64, Error> {
    let mut p = Parser {
        chars: input.chars().collect(),
        pos: 0,
        depth: 0,
    };
    p.skip_ws();
    if p.peek().is_none() {
        return Err(Error::Empty);
    }
    let value = p.sum()?;
    p.skip_ws();
    match p.peek() {
        None => Ok(value),
        Some(c) => Err(Error::Unexpected {
            found: c,
            column: p.pos + 1,
        }),
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    /// Skips whitespace and consumes `c` if it comes next; returns its column.
    fn eat(&mut self, c: char) -> Option<usize> {
        self.skip_ws();
        (self.peek() == Some(c)).then(|| {
            self.pos += 1;
            self.pos
        })
    }

    fn enter(&mut self) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::TooDeep);
        }
        Ok(())
    }

    fn sum(&mut self) -> Result<f64, Error> {
        let mut acc = self.product()?;
        loop {
            if let Some(col) = self.eat('+') {
                acc = finite(acc + self.product()?, '+', col)?;
            } else if let Some(col) = self.eat('-') {
                acc = finite(acc - self.product()?, '-', col)?;
            } else {
                return Ok(acc);
            }
        }
    }

    fn product(&mut self) -> Result<f64, Error> {
        let mut acc = self.unary()?;
        loop {
            if let Some(col) = self.eat('*') {
                acc = finite(acc * self.unary()?, '*', col)?;
            } else if let Some(col) = self.eat('/') {
                let rhs = self.unary()?;
                if rhs == 0.0 {
                    return Err(Error::DivisionByZero { column: col });
                }
                acc = finite(acc / rhs, '/', col)?;
            } else {
                return Ok(acc);
            }
        }
    }

    fn unary(&mut self) -> Result<f64, Error> {
        if self.eat('-').is_some() {
            self.enter()?;
            let v = -self.unary()?;
            self.depth -= 1;
            return Ok(v);
        }
        self.power()
    }

    fn power(&mut self) -> Result<f64, Error> {
        let base = self.atom()?;
        if let Some(col) = self.eat('^') {
            self.enter()?;
            let exp = self.unary()?;
            self.depth -= 1;
            return finite(base.powf(exp), '^', col);
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<f64, Error> {
        self.skip_ws();
        match self.peek() {
            None => Err(Error::UnexpectedEnd {
                expected: "a number or `(`",
            }),
            Some('(') => {
                let open = self.pos + 1;
                self.pos += 1;
                self.enter()?;
                let v = self.sum()?;
                self.depth -= 1;
                if self.eat(')').is_none() {
                    self.skip_ws();
                    return match self.peek() {
                        None => Err(Error::Unclosed { column: open }),
                        Some(c) => Err(Error::Unexpected {
                            found: c,
                            column: self.pos + 1,
                        }),
                    };
                }
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) => Err(Error::Unexpected {
                found: c,
                column: self.pos + 1,
            }),
        }
    }

    fn number(&mut self) -> Result<f64, Error> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '.') {
            self.pos += 1;
        }
        // An exponent: `e` or `E`, an optional sign, then digits.
        if matches!(self.peek(), Some('e' | 'E')) {
            let mark = self.pos;
            self.pos += 1;
            if matches!(self.peek(), Some('+' | '-')) {
                self.pos += 1;
            }
            if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
            } else {
                self.pos = mark;
            }
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        text.parse::<f64>().map_err(|_| Error::BadNumber {
            text,
            column: start + 1,
        })
    }
}

fn finite(v: f64, op: char, column: usize) -> Result<f64, Error> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(Error::NotFinite { op, column })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_with_precedence() {
        assert_eq!(eval("12 * 4 + 5"), Ok(53.0));
        assert_eq!(eval("2 + 3 * 4"), Ok(14.0));
        assert_eq!(eval("(2 + 3) * 4"), Ok(20.0));
        assert_eq!(eval("2 ^ 3 ^ 2"), Ok(512.0));
        assert_eq!(eval("-2 ^ 2"), Ok(-4.0));
        assert_eq!(eval("2 ^ -1"), Ok(0.5));
        assert_eq!(eval("--3"), Ok(3.0));
        assert_eq!(eval("7 / 2"), Ok(3.5));
        assert_eq!(eval("1.5e3 - .5"), Ok(1499.5));
        assert_eq!(eval("10 - 4 - 3"), Ok(3.0));
    }

    #[test]
    fn reports_errors_with_columns() {
        assert_eq!(eval(""), Err(Error::Empty));
        assert_eq!(
            eval("1 + * 2").unwrap_err().to_string(),
            "unexpected `*` at column 5"
        );
        assert_eq!(
            eval("(1 + 2").unwrap_err().to_string(),
            "`(` at column 1 is never closed"
        );
        assert_eq!(
            eval("1 / (2 - 2)").unwrap_err().to_string(),
            "division by zero at column 3"
        );
        assert_eq!(
            eval("1.2.3").unwrap_err().to_string(),
            "`1.2.3` at column 1 is not a number"
        );
        assert_eq!(
            eval("2 +").unwrap_err().to_string(),
            "unexpected end of expression: expected a number or `(`"
        );
        assert_eq!(
            eval("10 ^ 400").unwrap_err().to_string(),
            "`^` at column 4 gives a result that is not finite"
        );
        assert_eq!(
            eval("3 x").unwrap_err().to_string(),
            "unexpected `x` at column 3"
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
        assert_eq!(eval(&deep), Err(Error::TooDeep));
        assert_eq!(eval(&"-".repeat(10_000)), Err(Error::TooDeep));
    }
}
