//! [`Taint`]: how untrusted data reached a value, as a shared path of hops.
//!
//! A path is a linked list from its last hop back to its source, each hop behind an `Arc`:
//! a step whose output derives from its argument's extends the argument's path by one hop
//! without copying it, so a chain of n steps carrying untrusted data holds n hops in all,
//! not n²/2, and each step's taint costs the same at step 10,000 as at step 10. The hops
//! are joined into text only where a message prints the flow.
//!
//! A hop that ends a step's output path names that step ([`Taint::step`]): the journal
//! writes such a path as its parent step and one hop (`toolhost-journal`'s `taint`), and
//! reads it back with [`Taint::after`].

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::plan::StepId;

/// How untrusted data reached a value: the hops from its source, in order; empty when the
/// value can be trusted. Cheap to clone and to extend (see the module doc); serialised as
/// the list of hops, source first.
#[derive(Clone, Default)]
pub struct Taint(Option<Arc<Hop>>);

/// One hop of a path, with the hops before it.
struct Hop {
    text: String,
    /// The step whose output this path is, if it is one.
    step: Option<StepId>,
    /// The hops before this one; `None` for the source.
    parent: Option<Arc<Hop>>,
    /// Hops in the path up to and including this one.
    len: usize,
}

impl Drop for Hop {
    /// Drops a long path hop by hop rather than recursively: a chain of 100,000 tainted
    /// steps must not overflow a worker's stack when its last holder lets go.
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(hop) = next {
            next = match Arc::try_unwrap(hop) {
                Ok(mut alone) => alone.parent.take(),
                Err(_) => None,
            };
        }
    }
}

impl Taint {
    /// A path of one hop, its source: `step`'s output when it is one.
    pub fn source(text: String, step: Option<StepId>) -> Taint {
        Taint::trusted().then(text, step)
    }

    /// The path `hops`, source first (a journal's full form); trusted when empty.
    pub fn from_hops(hops: impl IntoIterator<Item = String>) -> Taint {
        hops.into_iter()
            .fold(Taint::default(), |t, hop| t.then(hop, None))
    }

    /// The path that `parent` (trusted: none) is followed by `hop`, ending `step`'s output
    /// when it is one. O(1): `parent` is shared, not copied.
    pub fn after(parent: &Taint, hop: String, step: Option<StepId>) -> Taint {
        parent.then(hop, step)
    }

    fn trusted() -> Taint {
        Taint(None)
    }

    /// No untrusted data reached the value.
    pub fn is_trusted(&self) -> bool {
        self.0.is_none()
    }

    /// How many hops the path has.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |h| h.len)
    }

    /// Whether the path has no hop (the value can be trusted).
    pub fn is_empty(&self) -> bool {
        self.is_trusted()
    }

    /// This flow, one hop further; the new path ends `step`'s output when it is one.
    pub(crate) fn then(&self, text: String, step: Option<StepId>) -> Taint {
        Taint(Some(Arc::new(Hop {
            text,
            step,
            len: self.len() + 1,
            parent: self.0.clone(),
        })))
    }

    /// The last hop's text, if any.
    pub fn last_hop(&self) -> Option<&str> {
        self.0.as_deref().map(|h| h.text.as_str())
    }

    /// The step whose output this path is, if the path was made as one.
    pub fn step(&self) -> Option<&StepId> {
        self.0.as_deref().and_then(|h| h.step.as_ref())
    }

    /// The path without its last hop (trusted for a one-hop path or a trusted one).
    pub fn parent(&self) -> Taint {
        Taint(self.0.as_ref().and_then(|h| h.parent.clone()))
    }

    /// Whether `self` and `other` are the same shared path (not merely equal hops).
    pub fn same(&self, other: &Taint) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// The hops, source first.
    pub fn hops(&self) -> Vec<&str> {
        let mut out = Vec::with_capacity(self.len());
        let mut at = self.0.as_deref();
        while let Some(h) = at {
            out.push(h.text.as_str());
            at = h.parent.as_deref();
        }
        out.reverse();
        out
    }

    /// The hops joined by ` → `, source first: the flow as messages print it.
    pub fn path(&self) -> String {
        self.hops().join(" → ")
    }
}

impl PartialEq for Taint {
    fn eq(&self, other: &Taint) -> bool {
        self.same(other) || (self.len() == other.len() && self.hops() == other.hops())
    }
}

impl Eq for Taint {}

impl fmt::Debug for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Taint").field(&self.hops()).finish()
    }
}

impl Serialize for Taint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.hops().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Taint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Taint, D::Error> {
        Vec::<String>::deserialize(d).map(Taint::from_hops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> StepId {
        s.to_string().try_into().unwrap()
    }

    #[test]
    fn extending_shares_the_path_and_keeps_its_order() {
        let a = Taint::source("a".into(), Some(id("a")));
        let b = a.then("b".into(), Some(id("b")));
        let c = b.then("c".into(), None);
        assert_eq!(c.hops(), ["a", "b", "c"]);
        assert_eq!(c.path(), "a → b → c");
        assert!(c.parent().same(&b) && b.parent().same(&a));
        assert_eq!(b.step(), Some(&id("b")));
        assert_eq!(c.step(), None);
        assert_eq!(Taint::from_hops(["a".into(), "b".into(), "c".into()]), c);
        assert!(Taint::default().is_trusted() && Taint::default().hops().is_empty());
    }

    #[test]
    fn serialises_as_the_list_of_hops() {
        let t = Taint::from_hops(["x".to_string(), "y".to_string()]);
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v, serde_json::json!(["x", "y"]));
        assert_eq!(serde_json::from_value::<Taint>(v).unwrap(), t);
    }

    #[test]
    fn a_long_path_costs_one_hop_per_step_and_drops_without_recursion() {
        let mut t = Taint::source("s0".into(), None);
        for i in 1..200_000 {
            t = t.then(format!("s{i}"), None);
        }
        assert_eq!(t.len(), 200_000);
        assert_eq!(t.last_hop(), Some("s199999"));
        // Dropped on a small stack: a recursive drop of 200,000 hops would overflow it.
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || drop(t))
            .unwrap()
            .join()
            .unwrap();
    }
}
