//! The banking environment as AgentDojo serialises it, read from and written back to the
//! granted state file. Fields the tools do not use are kept as they were.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where the host grants the state.
pub const PATH: &str = "/bank/state.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub id: u32,
    pub sender: String,
    pub recipient: String,
    pub amount: f64,
    pub subject: String,
    pub date: String,
    pub recurring: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BankAccount {
    pub balance: f64,
    pub iban: String,
    pub transactions: Vec<Transaction>,
    pub scheduled_transactions: Vec<Transaction>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Filesystem {
    pub files: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserAccount {
    pub first_name: String,
    pub last_name: String,
    pub street: String,
    pub city: String,
    pub password: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub bank_account: BankAccount,
    pub filesystem: Filesystem,
    pub user_account: UserAccount,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl State {
    /// The state in the granted file.
    pub fn load() -> Result<State, String> {
        let text = std::fs::read_to_string(PATH)
            .map_err(|e| format!("cannot read the bank state `{PATH}`: {e}"))?;
        State::parse(&text)
    }

    pub fn parse(text: &str) -> Result<State, String> {
        serde_json::from_str(text).map_err(|e| format!("the bank state `{PATH}` is not valid: {e}"))
    }

    /// Applies `f` to the state and writes it back.
    pub fn change<T>(f: impl FnOnce(&mut State) -> T) -> Result<T, String> {
        let mut s = State::load()?;
        let out = f(&mut s);
        let text = serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?;
        std::fs::write(PATH, text)
            .map_err(|e| format!("cannot write the bank state `{PATH}`: {e}"))?;
        Ok(out)
    }

    /// The next transaction id: one more than the largest sent or scheduled.
    pub fn next_id(&self) -> u32 {
        let a = &self.bank_account;
        a.transactions
            .iter()
            .chain(&a.scheduled_transactions)
            .map(|t| t.id)
            .max()
            .unwrap_or(0)
            + 1
    }

    /// Adds a transaction from this account, sent or scheduled.
    pub fn add(
        &mut self,
        scheduled: bool,
        recipient: String,
        amount: f64,
        subject: String,
        date: String,
        recurring: bool,
    ) {
        let t = Transaction {
            id: self.next_id(),
            sender: self.bank_account.iban.clone(),
            recipient,
            amount,
            subject,
            date,
            recurring,
        };
        let a = &mut self.bank_account;
        if scheduled {
            a.scheduled_transactions.push(t);
        } else {
            a.transactions.push(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATE: &str = r#"{
        "bank_account": {"balance": 10.0, "iban": "ME", "transactions": [
            {"id": 1, "sender": "ME", "recipient": "A", "amount": 1.0, "subject": "s", "date": "2022-01-01", "recurring": false}
        ], "scheduled_transactions": [
            {"id": 7, "sender": "ME", "recipient": "B", "amount": 2.0, "subject": "rent", "date": "2022-04-01", "recurring": true}
        ]},
        "filesystem": {"files": {"bill.txt": "pay 5"}},
        "user_account": {"first_name": "E", "last_name": "J", "street": "S", "city": "C", "password": "p"},
        "other": 1
    }"#;

    #[test]
    fn new_transactions_take_the_next_id_of_both_lists() {
        let mut s = State::parse(STATE).unwrap();
        assert_eq!(s.next_id(), 8);
        s.add(
            false,
            "X".into(),
            3.0,
            "x".into(),
            "2022-05-01".into(),
            false,
        );
        let t = s.bank_account.transactions.last().unwrap();
        assert_eq!(
            (t.id, t.sender.as_str(), t.recipient.as_str()),
            (8, "ME", "X")
        );
        s.add(true, "Y".into(), 4.0, "y".into(), "2022-06-01".into(), true);
        assert_eq!(s.bank_account.scheduled_transactions.last().unwrap().id, 9);
    }

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let s = State::parse(STATE).unwrap();
        let back: Value = serde_json::to_value(&s).unwrap();
        assert_eq!(back["other"], 1);
        assert!(State::parse("{}").unwrap_err().contains("is not valid"));
    }
}
