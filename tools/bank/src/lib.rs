//! `bank`: AgentDojo's banking suite tools (v1, `agentdojo/default_suites/v1/tools`:
//! `banking_client.py`, `user_account.py`, `file_reader.py`) over a JSON state file, so
//! that the suite's tasks run sandboxed and its own `utility()` and `security()` can score
//! the state a run leaves.
//!
//! The state is the suite's environment as JSON (`bank_account`, `filesystem`,
//! `user_account`), at `/bank/state.json`: the host grants the file, the tool only reads and
//! writes it. Each operation behaves as its Python original, down to the quirks: updates
//! skip empty values, an unknown file reads as empty.

// The suite's signatures are its own: the generated bindings flatten `schedule-transaction`
// and `update-scheduled-transaction` (six optional fields) into many canonical-ABI arguments.
#![allow(clippy::too_many_arguments)]

pub mod state;

toolhost_sdk::tool!();

use state::State;

struct Bank;

fn tx(t: &state::Transaction) -> Transaction {
    Transaction {
        id: t.id,
        sender: t.sender.clone(),
        recipient: t.recipient.clone(),
        amount: t.amount,
        subject: t.subject.clone(),
        date: t.date.clone(),
        recurring: t.recurring,
    }
}

fn info(s: &State) -> UserInfo {
    let u = &s.user_account;
    UserInfo {
        first_name: u.first_name.clone(),
        last_name: u.last_name.clone(),
        street: u.street.clone(),
        city: u.city.clone(),
    }
}

impl Guest for Bank {
    fn get_iban() -> Result<String, String> {
        Ok(State::load()?.bank_account.iban)
    }

    fn send_money(
        recipient: String,
        amount: f64,
        subject: String,
        date: String,
    ) -> Result<String, String> {
        State::change(|s| {
            s.add(false, recipient.clone(), amount, subject, date, false);
            format!("Transaction to {recipient} for {amount} sent.")
        })
    }

    fn schedule_transaction(
        recipient: String,
        amount: f64,
        subject: String,
        date: String,
        recurring: bool,
    ) -> Result<String, String> {
        State::change(|s| {
            s.add(true, recipient.clone(), amount, subject, date, recurring);
            format!("Transaction to {recipient} for {amount} scheduled.")
        })
    }

    fn update_scheduled_transaction(
        id: u32,
        recipient: Option<String>,
        amount: Option<f64>,
        subject: Option<String>,
        date: Option<String>,
        recurring: Option<bool>,
    ) -> Result<String, String> {
        State::change(|s| {
            let Some(t) = s
                .bank_account
                .scheduled_transactions
                .iter_mut()
                .find(|t| t.id == id)
            else {
                return Err(format!("Transaction with ID {id} not found."));
            };
            // As the original: a falsy value (empty, zero, false) leaves the field.
            if let Some(r) = recipient.filter(|r| !r.is_empty()) {
                t.recipient = r;
            }
            if let Some(a) = amount.filter(|a| *a != 0.0) {
                t.amount = a;
            }
            if let Some(x) = subject.filter(|x| !x.is_empty()) {
                t.subject = x;
            }
            if let Some(d) = date.filter(|d| !d.is_empty()) {
                t.date = d;
            }
            if recurring == Some(true) {
                t.recurring = true;
            }
            Ok(format!("Transaction with ID {id} updated."))
        })?
    }

    fn get_balance() -> Result<f64, String> {
        Ok(State::load()?.bank_account.balance)
    }

    fn get_most_recent_transactions(n: u32) -> Result<Vec<Transaction>, String> {
        let s = State::load()?;
        let all = &s.bank_account.transactions;
        let from = all.len().saturating_sub(n as usize);
        Ok(all[from..].iter().map(tx).collect())
    }

    fn get_scheduled_transactions() -> Result<Vec<Transaction>, String> {
        let s = State::load()?;
        Ok(s.bank_account
            .scheduled_transactions
            .iter()
            .map(tx)
            .collect())
    }

    fn read_file(file_path: String) -> Result<String, String> {
        let s = State::load()?;
        Ok(s.filesystem
            .files
            .get(&file_path)
            .cloned()
            .unwrap_or_default())
    }

    fn get_user_info() -> Result<UserInfo, String> {
        Ok(info(&State::load()?))
    }

    fn update_password(password: String) -> Result<String, String> {
        State::change(|s| {
            s.user_account.password = password;
            "Password updated.".to_string()
        })
    }

    fn update_user_info(
        first_name: Option<String>,
        last_name: Option<String>,
        street: Option<String>,
        city: Option<String>,
    ) -> Result<UserInfo, String> {
        State::change(|s| {
            let u = &mut s.user_account;
            for (field, value) in [
                (&mut u.first_name, first_name),
                (&mut u.last_name, last_name),
                (&mut u.street, street),
                (&mut u.city, city),
            ] {
                if let Some(v) = value.filter(|v| !v.is_empty()) {
                    *field = v;
                }
            }
            info(s)
        })
    }
}

export!(Bank);
