//! `slack`: AgentDojo's slack suite tools (v1, `agentdojo/default_suites/v1/tools`:
//! `slack.py` and the two `web.py` functions the suite uses) over a JSON state file, so
//! that the suite's tasks run sandboxed and its own `utility()` and `security()` can score
//! the state a run leaves.
//!
//! The state is the suite's environment as JSON (`slack`, `web`), at `/slack/state.json`:
//! the host grants the file, the tool only reads and writes it. Each operation behaves as
//! its Python original, down to the quirks: fetching a page records the request even when
//! there is no such page, a call that fails halfway keeps what it changed, and the errors
//! are the original's `ValueError` messages.

pub mod state;

toolhost_sdk::tool!();

use state::{Dict, State, get, remove, set, standardize_url};

struct SlackTools;

fn msg(m: &state::Message) -> Message {
    Message {
        sender: m.sender.clone(),
        recipient: m.recipient.clone(),
        body: m.body.clone(),
    }
}

fn msgs(d: &Dict<Vec<state::Message>>, key: &str) -> Vec<Message> {
    get(d, key).into_iter().flatten().map(msg).collect()
}

/// Where a message from the bot goes: the list at `key`, created (at the end) if absent.
fn post(d: &mut Dict<Vec<state::Message>>, key: &str, body: String) {
    let m = state::Message {
        sender: "bot".into(),
        recipient: key.into(),
        body,
    };
    match d.iter_mut().find(|(k, _)| k == key) {
        Some((_, list)) => list.push(m),
        None => d.push((key.into(), vec![m])),
    }
}

impl Guest for SlackTools {
    fn get_channels() -> Result<Vec<String>, String> {
        Ok(State::load()?.slack.channels)
    }

    fn add_user_to_channel(user: String, channel: String) -> Result<(), String> {
        State::change(|s| {
            let slack = &mut s.slack;
            if !slack.users.contains(&user) {
                return Err(format!("User {user} not found in the users list"));
            }
            if !slack.channels.contains(&channel) {
                return Err(format!("Channel {channel} not found in the channels list"));
            }
            // The original indexes the dict: a user listed without channels is a KeyError.
            match slack.user_channels.iter_mut().find(|(k, _)| *k == user) {
                Some((_, channels)) => {
                    channels.push(channel);
                    Ok(())
                }
                None => Err(format!("'{user}'")),
            }
        })
    }

    fn read_channel_messages(channel: String) -> Result<Vec<Message>, String> {
        let s = State::load()?;
        if !s.slack.channels.contains(&channel) {
            return Err("Channel does not exist!".into());
        }
        Ok(msgs(&s.slack.channel_inbox, &channel))
    }

    fn read_inbox(user: String) -> Result<Vec<Message>, String> {
        let s = State::load()?;
        if !s.slack.users.contains(&user) {
            return Err(format!("User {user} not found in the users list"));
        }
        Ok(msgs(&s.slack.user_inbox, &user))
    }

    fn send_direct_message(recipient: String, body: String) -> Result<(), String> {
        State::change(|s| {
            if !s.slack.users.contains(&recipient) {
                return Err(format!("Recipient {recipient} not found in the users list"));
            }
            post(&mut s.slack.user_inbox, &recipient, body);
            Ok(())
        })
    }

    fn send_channel_message(channel: String, body: String) -> Result<(), String> {
        State::change(|s| {
            if !s.slack.channels.contains(&channel) {
                return Err(format!("Channel {channel} not found in the channels list"));
            }
            post(&mut s.slack.channel_inbox, &channel, body);
            Ok(())
        })
    }

    fn get_users_in_channel(channel: String) -> Result<Vec<String>, String> {
        let s = State::load()?;
        if !s.slack.channels.contains(&channel) {
            return Err(format!("Channel {channel} not found in the channels list"));
        }
        Ok(s.slack
            .user_channels
            .iter()
            .filter(|(_, channels)| channels.contains(&channel))
            .map(|(user, _)| user.clone())
            .collect())
    }

    fn invite_user_to_slack(user: String, _user_email: String) -> Result<(), String> {
        State::change(|s| {
            let slack = &mut s.slack;
            if slack.users.contains(&user) {
                return Err(format!("User {user} already in the users list"));
            }
            slack.users.push(user.clone());
            set(&mut slack.user_inbox, &user, Vec::new());
            set(&mut slack.user_channels, &user, Vec::new());
            Ok(())
        })
    }

    fn remove_user_from_slack(user: String) -> Result<(), String> {
        State::change(|s| {
            let slack = &mut s.slack;
            let Some(at) = slack.users.iter().position(|u| *u == user) else {
                return Err(format!("User {user} not found in the users list"));
            };
            slack.users.remove(at);
            // `del` of a missing key is a KeyError after the user is gone, as in Python.
            if !remove(&mut slack.user_inbox, &user) || !remove(&mut slack.user_channels, &user) {
                return Err(format!("'{user}'"));
            }
            Ok(())
        })
    }

    fn get_webpage(url: String) -> Result<String, String> {
        State::change(|s| {
            let url = standardize_url(&url);
            s.web.web_requests.push(url.to_string());
            Ok(get(&s.web.web_content, url)
                .cloned()
                .unwrap_or_else(|| "404 Not Found".into()))
        })
    }

    fn post_webpage(url: String, content: String) -> Result<(), String> {
        State::change(|s| {
            let url = standardize_url(&url);
            s.web.web_requests.push(url.to_string());
            set(&mut s.web.web_content, url, content);
            Ok(())
        })
    }
}

export!(SlackTools);
