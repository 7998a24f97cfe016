//! The cap on SSE followers (`GET /v1/runs/{id}/events`): each one holds a connection and
//! reads its run's journal as it grows, so 8,000 of them took 88% of a core and slowed
//! `/healthz` to 385 ms. A follower is let in while the server has fewer than
//! `max_followers` in all and its token fewer than `max_followers_per_token`; otherwise it
//! is refused with 429 (its token's share is used up) or 503 (the server's is), both with
//! `Retry-After`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::auth::Caller;

/// The followers of every run, counted in all and per token.
#[derive(Debug)]
pub(crate) struct Followers {
    max: usize,
    per_token: usize,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    all: usize,
    /// By token name; a server without tokens has none.
    by_token: HashMap<String, usize>,
}

/// Why a follower is not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Its token already has `max` followers.
    Token { name: String, max: usize },
    /// The server already has `max` followers.
    Server { max: usize },
}

/// A follower let in: counted until dropped (when its stream ends or its client leaves).
#[derive(Debug)]
pub(crate) struct Follower {
    followers: Arc<Followers>,
    token: Option<String>,
}

impl Followers {
    pub(crate) fn new(max: usize, per_token: usize) -> Followers {
        Followers {
            max,
            per_token,
            counts: Mutex::default(),
        }
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lets `caller` follow a run, or says why not.
    pub(crate) fn admit(self: &Arc<Self>, caller: &Caller) -> Result<Follower, Refused> {
        let token = caller.name().map(str::to_string);
        let mut counts = self.counts();
        if let Some(name) = &token
            && counts.by_token.get(name).copied().unwrap_or(0) >= self.per_token
        {
            return Err(Refused::Token {
                name: name.clone(),
                max: self.per_token,
            });
        }
        if counts.all >= self.max {
            return Err(Refused::Server { max: self.max });
        }
        counts.all += 1;
        if let Some(name) = &token {
            *counts.by_token.entry(name.clone()).or_default() += 1;
        }
        Ok(Follower {
            followers: self.clone(),
            token,
        })
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let mut counts = self.followers.counts();
        counts.all = counts.all.saturating_sub(1);
        if let Some(name) = &self.token
            && let Some(n) = counts.by_token.get_mut(name)
        {
            *n -= 1;
            if *n == 0 {
                counts.by_token.remove(name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Role;

    fn token(name: &str) -> Caller {
        Caller::Token {
            name: name.into(),
            roles: vec![Role::Read],
        }
    }

    #[test]
    fn followers_are_capped_per_token_then_in_all_and_freed_on_drop() {
        let f = Arc::new(Followers::new(3, 2));
        let a1 = f.admit(&token("a")).unwrap();
        let _a2 = f.admit(&token("a")).unwrap();
        assert_eq!(
            f.admit(&token("a")).unwrap_err(),
            Refused::Token {
                name: "a".into(),
                max: 2
            }
        );
        let _b1 = f.admit(&token("b")).unwrap();
        assert_eq!(
            f.admit(&Caller::Open).unwrap_err(),
            Refused::Server { max: 3 }
        );
        drop(a1);
        let _a3 = f.admit(&token("a")).unwrap();
    }
}
