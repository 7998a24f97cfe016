//! "Did you mean …?": the nearest valid name to a misspelt key or value, added to serde's
//! "unknown field `X`, expected one of `a`, `b`, …" (and "unknown variant") messages, so
//! that `max_paralel` is answered with `max_parallel` rather than a list to search.

/// `message` with a suggestion appended when it names an unknown field or variant and one
/// of the names it lists is near the one given; otherwise `message` as it is.
pub fn did_you_mean(message: &str) -> String {
    match nearest_in(message) {
        Some(near) => format!("{message}; did you mean `{near}`?"),
        None => message.to_string(),
    }
}

/// The listed name nearest to the unknown one, if near enough to be a slip.
fn nearest_in(message: &str) -> Option<&str> {
    let rest = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("unknown variant `"))?;
    let (given, listed) = rest.split_once('`')?;
    let listed = listed
        .strip_prefix(", expected one of ")
        .or_else(|| listed.strip_prefix(", expected "))?;
    let names: Vec<&str> = listed.split('`').skip(1).step_by(2).collect();
    // "expected `enabled`" already names the one choice.
    if names.len() < 2 {
        return None;
    }
    let (best, distance) = names
        .into_iter()
        .map(|n| (n, distance(given, n)))
        .min_by_key(|(_, d)| *d)?;
    // One slip in a short name, up to a third of a long one: beyond that a guess misleads.
    let allowed = (given.chars().count() / 3).clamp(1, 3);
    (distance <= allowed).then_some(best)
}

/// Edit distance counting an insertion, a deletion, a substitution or a swap of two
/// neighbours as one (optimal string alignment), by characters.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: two back (for swaps), one back, this one.
    let mut two: Vec<usize> = vec![0; b.len() + 1];
    let mut one: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (one[j] + 1).min(row[j - 1] + 1).min(one[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(two[j - 2] + 1);
            }
        }
        two = std::mem::replace(&mut one, row);
    }
    one[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_name_is_suggested_and_a_far_one_not() {
        let m = "unknown field `max_paralel`, expected one of `max_steps`, `max_parallel`, `mode`";
        assert_eq!(
            did_you_mean(m),
            format!("{m}; did you mean `max_parallel`?")
        );
        let m = "unknown variant `plan-then-exec`, expected `step-wise` or `plan-then-execute`";
        assert!(did_you_mean(m).ends_with("did you mean `plan-then-execute`?"));
        // Too far from every listed name, one name only (already the answer), or no list
        // at all: left as it is.
        let m = "unknown field `timeuot_ms`, expected `timeout_ms`";
        assert_eq!(did_you_mean(m), m);
        let m = "unknown field `colour`, expected one of `goal`, `tools`";
        assert_eq!(did_you_mean(m), m);
        assert_eq!(did_you_mean("invalid type: string"), "invalid type: string");
    }

    #[test]
    fn distances() {
        assert_eq!(distance("max_paralel", "max_parallel"), 1);
        assert_eq!(distance("ab", "ba"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("é", "e"), 1);
    }
}
