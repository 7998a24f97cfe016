//! A plan revision's DAG as inline SVG: a column per dependency depth, left to right,
//! an edge from each step to the steps that depend on it. Steps of earlier revisions that
//! this one refers to appear as dashed nodes in the first column.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::escape;
use super::model::{Revision, StepRun};

const W: usize = 178;
const H: usize = 48;
const GAP_X: usize = 54;
const GAP_Y: usize = 14;
const PAD: usize = 8;
/// Room above the first row for edges that arc over a column.
const ARC: usize = 22;

/// `s` cut to `n` characters, with `…` when cut.
pub(crate) fn clip(s: &str, n: usize) -> String {
    if s.chars().count() > n {
        let cut: String = s.chars().take(n - 1).collect();
        format!("{cut}…")
    } else {
        s.to_string()
    }
}

/// Depth of each node: 0 without dependencies, else one more than its deepest dependency.
/// A cycle (a journal is untrusted; a validated plan has none) counts as depth 0.
fn depths(deps: &[Vec<usize>]) -> Vec<usize> {
    fn visit(i: usize, deps: &[Vec<usize>], memo: &mut [Option<usize>], on: &mut [bool]) -> usize {
        if let Some(d) = memo[i] {
            return d;
        }
        if on[i] {
            return 0;
        }
        on[i] = true;
        let d = deps[i]
            .iter()
            .map(|&j| visit(j, deps, memo, on) + 1)
            .max()
            .unwrap_or(0);
        on[i] = false;
        memo[i] = Some(d);
        d
    }
    let mut memo = vec![None; deps.len()];
    let mut on = vec![false; deps.len()];
    (0..deps.len())
        .map(|i| visit(i, deps, &mut memo, &mut on))
        .collect()
}

struct Node<'a> {
    id: &'a str,
    label: String,
    title: String,
    status: String,
    denials: usize,
    ghost: bool,
}

/// The SVG of `rev`; `runs` gives each node its status (the latest run of that id in this
/// revision, or, for an earlier revision's step, its latest run anywhere).
pub fn svg(rev: &Revision, runs: &[StepRun]) -> String {
    let (nodes, deps) = graph(rev, runs);
    let depth = depths(&deps);
    let (pos, rows) = place(&nodes, &depth);
    let width = (rows.len().max(1)) * (W + GAP_X) - GAP_X + 2 * PAD;
    let height =
        rows.iter().max().copied().unwrap_or(1).max(1) * (H + GAP_Y) - GAP_Y + 2 * PAD + ARC;
    let mut s = format!(
        r#"<svg class="dag" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="plan revision {} DAG">"#,
        rev.number
    );
    for (i, ds) in deps.iter().enumerate() {
        for &j in ds {
            let d = edge_path(&pos, &depth, j, i);
            let _ = write!(
                s,
                r#"<path class="edge" d="{d}" marker-end="url(#arrow)"/>"#
            );
        }
    }
    for (n, &(x, y)) in nodes.iter().zip(&pos) {
        node(&mut s, n, x, y);
    }
    s.push_str("</svg>");
    s
}

/// The nodes of `rev` (its steps, then the earlier revisions' steps they refer to, as
/// ghosts) and, for each, the nodes it depends on.
fn graph<'a>(rev: &'a Revision, runs: &[StepRun]) -> (Vec<Node<'a>>, Vec<Vec<usize>>) {
    let status_of = |id: &str, same_rev: bool| {
        runs.iter()
            .rev()
            .find(|s| s.id == id && (!same_rev || s.revision == rev.number))
            .map_or_else(
                || ("planned".to_string(), 0),
                |s| (s.status.clone(), s.denials),
            )
    };
    let mut nodes: Vec<Node> = rev
        .steps
        .iter()
        .map(|s| {
            let (status, denials) = status_of(&s.id, true);
            Node {
                id: &s.id,
                label: format!("{}.{}", s.tool, s.operation),
                title: format!("{}: {}.{} {}", s.id, s.tool, s.operation, s.description),
                status,
                denials,
                ghost: false,
            }
        })
        .collect();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        index.entry(n.id).or_insert(i);
    }
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, s) in rev.steps.iter().enumerate() {
        for d in &s.deps {
            let j = *index.entry(d.as_str()).or_insert_with(|| {
                let (status, denials) = status_of(d, false);
                nodes.push(Node {
                    id: d,
                    label: "earlier revision".into(),
                    title: format!("{d}: from an earlier revision"),
                    status,
                    denials,
                    ghost: true,
                });
                nodes.len() - 1
            });
            deps[i].push(j);
        }
    }
    deps.resize(nodes.len(), Vec::new());
    (nodes, deps)
}

/// Each node's top-left corner (a column per depth, a row per node in it), and how many
/// nodes each column holds.
fn place(nodes: &[Node], depth: &[usize]) -> (Vec<(usize, usize)>, Vec<usize>) {
    let mut rows = vec![0usize; depth.iter().max().map_or(0, |d| d + 1)];
    let mut pos = vec![(0, 0); nodes.len()];
    // Earlier revisions' steps first in their column, so their edges do not cross.
    let order = (0..nodes.len())
        .filter(|&i| nodes[i].ghost)
        .chain((0..nodes.len()).filter(|&i| !nodes[i].ghost));
    for i in order {
        let d = depth[i];
        pos[i] = (PAD + d * (W + GAP_X), PAD + ARC + rows[d] * (H + GAP_Y));
        rows[d] += 1;
    }
    (pos, rows)
}

/// The path of the edge from node `j` to node `i`, which depends on it.
fn edge_path(pos: &[(usize, usize)], depth: &[usize], j: usize, i: usize) -> String {
    let (x1, y1) = (pos[j].0 + W, pos[j].1 + H / 2);
    let (x2, y2) = (pos[i].0, pos[i].1 + H / 2);
    let x2 = x2.saturating_sub(2);
    if depth[i] > depth[j] + 1 {
        // Over a column: leave the top of the source, arc above the nodes between,
        // and come down into the target, so the edge does not run through them.
        let (sx, sy) = (pos[j].0 + W / 2, pos[j].1);
        let top = pos[j].1.min(pos[i].1).saturating_sub(ARC - 4);
        format!("M{sx},{sy} C{sx},{top} {x2},{top} {x2},{y2}")
    } else {
        let mid = (x1 + x2) / 2;
        format!("M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}")
    }
}

/// Node `n` at (`x`, `y`): its id and operation, its status as its class, and a badge
/// counting the capability decisions denied to it.
fn node(s: &mut String, n: &Node, x: usize, y: usize) {
    let _ = write!(
        s,
        r#"<g class="node st-{st}{ghost}" data-step="{id}"><title>{title} ({st})</title><rect x="{x}" y="{y}" width="{W}" height="{H}" rx="7"/><text class="nid" x="{tx}" y="{ty1}">{short}</text><text class="nop" x="{tx}" y="{ty2}">{label}</text></g>"#,
        st = escape(&n.status),
        ghost = if n.ghost { " ghost" } else { "" },
        id = escape(n.id),
        title = escape(&n.title),
        tx = x + 10,
        ty1 = y + 20,
        ty2 = y + 37,
        short = escape(&clip(n.id, 22)),
        label = escape(&clip(&n.label, 26)),
    );
    if n.denials > 0 {
        let _ = write!(
            s,
            r#"<g class="deny"><title>{} capability decision(s) denied</title><circle cx="{}" cy="{}" r="9"/><text x="{}" y="{}">{}</text></g>"#,
            n.denials,
            x + W - 4,
            y + 4,
            x + W - 4,
            y + 8,
            n.denials
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_follows_the_longest_chain_and_survives_cycles() {
        assert_eq!(depths(&[vec![], vec![0], vec![0, 1]]), [0, 1, 2]);
        assert_eq!(depths(&[vec![1], vec![0]]).len(), 2);
    }

    #[test]
    fn clip_marks_the_cut() {
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
    }
}
