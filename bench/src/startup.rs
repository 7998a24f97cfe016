//! Host start + 10 tools ready to call: from the compiled cache vs compiling them.

use std::time::{Duration, Instant};

use toolhost_runtime::{Runtime, RuntimeConfig};

use super::{Figure, Scale, median};

/// Ten components to load (the built ones, repeated as needed).
fn ten() -> Vec<&'static str> {
    toolhost_tools::ALL
        .iter()
        .map(|(_, p)| *p)
        .cycle()
        .take(10)
        .collect()
}

fn start(cache: Option<&std::path::Path>) -> Duration {
    let t = Instant::now();
    let rt =
        Runtime::new(RuntimeConfig::default().cache_dir(cache.map(Into::into))).expect("runtime");
    for p in ten() {
        rt.load(p.as_ref()).expect("load");
    }
    t.elapsed()
}

pub fn run(scale: Scale) -> Figure {
    let dir = tempfile::tempdir().expect("temp dir");
    let compiled = median((0..scale.n(3, 1)).map(|_| start(None)).collect());
    start(Some(dir.path()));
    let cached = median(
        (0..scale.n(20, 5))
            .map(|_| start(Some(dir.path())))
            .collect(),
    );
    Figure {
        name: "host start + 10 tools ready",
        detail: format!(
            "from the compiled cache {:.1} ms vs compiling {:.0} ms",
            cached.as_secs_f64() * 1e3,
            compiled.as_secs_f64() * 1e3
        ),
        ratio: compiled.as_secs_f64() / cached.as_secs_f64(),
        target: 100.0,
        lower_is_better: false,
        gated: true,
    }
}
