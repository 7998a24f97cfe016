//! Which steps of a revision may start, and which can no longer run, kept up to date as
//! steps finish rather than found by rescanning the plan: each step counts its
//! dependencies that have not succeeded; a step whose count reaches zero joins the ready
//! queue, and the waiting dependents of a step that failed or was skipped join the
//! blocked queue. Both queues hand out steps in the validated order (`ValidPlan::order`),
//! so the steps launched and skipped, and their order, are those a scan of the whole plan
//! would pick; the work per step is its own edges, so a revision costs O(steps + edges)
//! (times the queues' logarithm), not O(steps²).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

use crate::plan::{Step, StepId};
use crate::record::StepStatus;
use crate::validate::ValidPlan;

/// Where a step of the revision stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Neither started nor finished.
    Waiting,
    /// Launched (running, or dropped with its batch when the start could not be recorded).
    Launched,
    Finished(StepStatus),
}

/// A revision's steps, by position in the validated order, with their edges.
pub(super) struct Schedule<'p> {
    steps: Vec<&'p Step>,
    index: HashMap<&'p StepId, usize>,
    /// Each step's dependencies, in `StepId` order (the order of `ValidPlan::deps`).
    deps: Vec<Vec<usize>>,
    dependents: Vec<Vec<usize>>,
    slots: Vec<Slot>,
    /// Dependencies not (yet) succeeded.
    unmet: Vec<usize>,
    /// Waiting steps whose dependencies all succeeded, first in order first.
    ready: BinaryHeap<Reverse<usize>>,
    /// Waiting steps with a dependency that failed or was skipped (may repeat a step).
    blocked: BinaryHeap<Reverse<usize>>,
    /// Steps and edges visited so far: what a test counts to show the work is linear.
    work: u64,
}

impl<'p> Schedule<'p> {
    /// A revision's schedule; `prior` holds the steps that finished before a resume.
    pub fn new(plan: &'p ValidPlan, prior: &BTreeMap<StepId, StepStatus>) -> Schedule<'p> {
        let by_id: HashMap<&StepId, &Step> = plan.plan.steps.iter().map(|s| (&s.id, s)).collect();
        let steps: Vec<&Step> = plan.order.iter().map(|id| by_id[id]).collect();
        let index: HashMap<&StepId, usize> =
            steps.iter().enumerate().map(|(i, s)| (&s.id, i)).collect();
        let n = steps.len();
        let mut deps = vec![Vec::new(); n];
        let mut dependents = vec![Vec::new(); n];
        for (i, step) in steps.iter().enumerate() {
            for d in plan.deps.get(&step.id).into_iter().flatten() {
                if let Some(&j) = index.get(d) {
                    deps[i].push(j);
                    dependents[j].push(i);
                }
            }
        }
        let slots: Vec<Slot> = steps
            .iter()
            .map(|s| {
                prior
                    .get(&s.id)
                    .map_or(Slot::Waiting, |&st| Slot::Finished(st))
            })
            .collect();
        let mut s = Schedule {
            unmet: vec![0; n],
            steps,
            index,
            deps,
            dependents,
            slots,
            ready: BinaryHeap::new(),
            blocked: BinaryHeap::new(),
            work: 0,
        };
        for i in 0..n {
            s.work += 1 + s.deps[i].len() as u64;
            s.unmet[i] = s.deps[i]
                .iter()
                .filter(|&&j| s.slots[j] != Slot::Finished(StepStatus::Succeeded))
                .count();
            if s.slots[i] != Slot::Waiting {
                continue;
            }
            if s.unmet[i] == 0 {
                s.ready.push(Reverse(i));
            } else if s.deps[i].iter().any(|&j| s.bad(j)) {
                s.blocked.push(Reverse(i));
            }
        }
        s
    }

    /// Failed or skipped: its dependents can never run.
    fn bad(&self, i: usize) -> bool {
        matches!(
            self.slots[i],
            Slot::Finished(StepStatus::Failed | StepStatus::Skipped)
        )
    }

    pub fn step(&self, id: &StepId) -> &'p Step {
        self.steps[self.index[id]]
    }

    /// The first waiting step, in order, whose dependencies all succeeded.
    pub fn next_ready(&mut self) -> Option<&'p Step> {
        while let Some(&Reverse(i)) = self.ready.peek() {
            self.work += 1;
            if self.slots[i] == Slot::Waiting {
                return Some(self.steps[i]);
            }
            self.ready.pop();
        }
        None
    }

    pub fn launched(&mut self, id: &StepId) {
        let i = self.index[id];
        self.work += 1;
        self.slots[i] = Slot::Launched;
        if self.ready.peek() == Some(&Reverse(i)) {
            self.ready.pop();
        }
    }

    /// The next waiting step, in order, that a failed or skipped dependency blocks, with
    /// the first such dependency (in `StepId` order).
    pub fn next_blocked(&mut self) -> Option<(&'p Step, &'p StepId)> {
        while let Some(Reverse(i)) = self.blocked.pop() {
            self.work += 1;
            if self.slots[i] != Slot::Waiting {
                continue;
            }
            self.work += self.deps[i].len() as u64;
            if let Some(&j) = self.deps[i].iter().find(|&&j| self.bad(j)) {
                return Some((self.steps[i], &self.steps[j].id));
            }
        }
        None
    }

    /// Takes in a step's end (a launched step's, or a skip's): frees or blocks its
    /// dependents.
    pub fn finished(&mut self, id: &StepId, status: StepStatus) {
        let i = self.index[id];
        self.slots[i] = Slot::Finished(status);
        self.work += 1 + self.dependents[i].len() as u64;
        for k in 0..self.dependents[i].len() {
            let d = self.dependents[i][k];
            if self.slots[d] != Slot::Waiting {
                continue;
            }
            if status == StepStatus::Succeeded {
                self.unmet[d] -= 1;
                if self.unmet[d] == 0 {
                    self.ready.push(Reverse(d));
                }
            } else {
                self.blocked.push(Reverse(d));
            }
        }
    }

    /// Steps and edges visited so far.
    #[cfg(test)]
    pub fn work(&self) -> u64 {
        self.work
    }
}

#[cfg(test)]
mod tests;
