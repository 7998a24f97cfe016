//! The journal at the disk's limit (`--only journal`, with the engine figure of
//! `journal`):
//! - a step's start journaled and synced (`step_started` written, then the journal's
//!   sync) vs the floor: one `pwrite` of a journal-sized line into a preallocated file and
//!   its `fdatasync`, on the same disk, samples taken alternately so load moves both;
//! - 16 threads starting steps together on one journal, each waiting for its start to be
//!   durable (group commit: the syncs are shared) vs 16 threads each `pwrite` + `fdatasync`
//!   on one preallocated file (each caller its own sync).

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_engine::Observer;
use toolhost_engine::budget::Budgets;
use toolhost_engine::plan::Step;
use toolhost_journal::Journal;

use super::setup::journal;
use super::{Figure, Scale, median, us};

/// Threads starting steps together in the group-commit figure.
const THREADS: usize = 16;

fn step(i: usize) -> Step {
    serde_json::from_value(
        json!({"id": format!("s{i}"), "tool": "calc", "operation": "eval",
        "args": {"expression": format!("{i} * 2 + 1")}}),
    )
    .expect("step")
}

/// A step's start journaled and made durable, as the engine does before a step that is
/// not idempotent.
fn synced_start(j: &mut Journal, i: usize) -> Duration {
    let s = step(i);
    let t = Instant::now();
    j.step_started(&s, 1);
    if let Some(sync) = j.durable() {
        sync();
    }
    t.elapsed()
}

/// A file preallocated (written with zeros, synced) as a journal's segment is, and where
/// the next line goes.
struct Floor {
    file: File,
    at: u64,
}

impl Floor {
    fn new(dir: &Path, name: &str) -> Floor {
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.join(name))
            .expect("probe file");
        file.write_all_at(&vec![0; 8 << 20], 0).expect("zeros");
        file.sync_all().expect("sync");
        Floor { file, at: 0 }
    }

    /// Room for `lines` more lines of `LINE` bytes.
    fn room(&self, lines: usize) -> bool {
        self.at + (lines * LINE.len()) as u64 <= 8 << 20
    }

    fn sync_line(&mut self) -> Duration {
        let t = Instant::now();
        self.file.write_all_at(&LINE, self.at).expect("pwrite");
        self.file.sync_data().expect("fdatasync");
        self.at += LINE.len() as u64;
        t.elapsed()
    }
}

/// About a `step_started` record's length.
const LINE: [u8; 400] = [b'x'; 400];

pub fn run(scale: Scale) -> Vec<Figure> {
    // On the disk the state directory would be on, not a tmpfs, so the syncs are real.
    let dir = tempfile::tempdir_in(std::env::temp_dir()).expect("state dir");
    vec![one_step(scale, dir.path()), together(scale, dir.path())]
}

fn one_step(scale: Scale, dir: &Path) -> Figure {
    let n = scale.n(400, 100);
    let mut j = journal(dir, &Budgets::default(), THREADS);
    let mut floor = Floor::new(dir, "floor");
    // Warm both: the journal's first segment, the page cache.
    for i in 0..10 {
        synced_start(&mut j, i);
        floor.sync_line();
    }
    // What the journal did before it preallocated: appends that grow the file, so each
    // fdatasync also writes its new size.
    let growing = File::create(dir.join("growing")).expect("probe file");
    let (mut journaled, mut raw, mut appended) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        journaled.push(synced_start(&mut j, 10 + i));
        if !floor.room(1) {
            floor = Floor::new(dir, "floor");
        }
        raw.push(floor.sync_line());
        let t = Instant::now();
        (&growing)
            .write_all(&LINE)
            .and_then(|()| growing.sync_data())
            .expect("append");
        appended.push(t.elapsed());
    }
    let (journaled, raw, appended) = (median(journaled), median(raw), median(appended));
    Figure {
        name: "a step's start journaled and synced vs pwrite + fdatasync of a preallocated file",
        detail: format!(
            "median of {n} each, taken alternately: journal (step_started record redacted, hash-chained, written with one pwrite into the preallocated journal, then its fdatasync) {} vs the floor (a 400-byte pwrite into a preallocated, zero-written file and its fdatasync) {}; for reference, the same line appended to a file that grows (each sync also writes the size, as the journal's appends did before) {}",
            us(journaled),
            us(raw),
            us(appended),
        ),
        ratio: journaled.as_secs_f64() / raw.as_secs_f64(),
        target: 1.2,
        lower_is_better: true,
        gated: true,
    }
}

/// `THREADS` threads, each starting `per` steps, all released together each round; the
/// wall time per step.
fn rounds(per: usize, work: impl Fn(usize, usize) + Sync) -> Duration {
    let gate = Barrier::new(THREADS);
    let t = Instant::now();
    std::thread::scope(|s| {
        for k in 0..THREADS {
            let (gate, work) = (&gate, &work);
            s.spawn(move || {
                for i in 0..per {
                    gate.wait();
                    work(k, i);
                }
            });
        }
    });
    t.elapsed() / u32::try_from(THREADS * per).expect("steps")
}

fn together(scale: Scale, dir: &Path) -> Figure {
    let per = scale.n(40, 12);
    let j = journal(dir, &Budgets::default(), THREADS);
    let shared = rounds(per, |k, i| {
        synced_start(&mut j.clone(), k * 10_000 + i);
    });
    let syncs = j.syncs().unwrap_or(0);
    let floor = Floor::new(dir, "together");
    let file = &floor.file;
    let next = std::sync::atomic::AtomicU64::new(0);
    let own = rounds(per, |_, _| {
        let at = next.fetch_add(LINE.len() as u64, std::sync::atomic::Ordering::Relaxed);
        file.write_all_at(&LINE, at).expect("pwrite");
        file.sync_data().expect("fdatasync");
    });
    let steps = THREADS * per;
    Figure {
        name: "steps started together on one journal: shared syncs vs one fdatasync each",
        detail: format!(
            "{THREADS} threads × {per} rounds, each thread starting a step a round and waiting for its start to be durable: journal {} per step wall, {syncs} syncs for {steps} steps (group commit) vs each thread pwrite + fdatasync on one preallocated file {} per step",
            us(shared),
            us(own),
        ),
        ratio: shared.as_secs_f64() / own.as_secs_f64(),
        target: 1.0,
        lower_is_better: true,
        gated: false,
    }
}
