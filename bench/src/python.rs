//! The Python tool (`tools/py/table`, built with componentize-py): its first load, which
//! compiles the component into an empty compiled cache, vs its second load, from that cache.

use std::time::{Duration, Instant};

use toolhost_lang_tools::path;
use toolhost_runtime::{Runtime, RuntimeConfig};

use super::{Figure, Scale, median};

fn load(cache: &std::path::Path, table: &str) -> Duration {
    let rt = Runtime::new(RuntimeConfig::default().cache_dir(Some(cache.into()))).expect("runtime");
    let t = Instant::now();
    let tool = rt.load(table.as_ref()).expect("load the Python tool");
    let took = t.elapsed();
    assert!(tool.operation("summarize").is_some());
    took
}

/// `None` when the Python tool was not built (`TOOLHOST_SKIP_GUEST_LANGS`).
pub fn run(scale: Scale) -> Option<Figure> {
    let Some(table) = path("table") else {
        println!(
            "python: skipped, the Python tool is not built ({})",
            toolhost_lang_tools::SKIPPED.unwrap_or("unknown reason")
        );
        return None;
    };
    let size = std::fs::metadata(table).map_or(0, |m| m.len());
    // Each first load gets an empty cache of its own; one is enough in quick mode.
    let first = median(
        (0..scale.n(3, 1))
            .map(|_| load(tempfile::tempdir().expect("temp dir").path(), table))
            .collect(),
    );
    let dir = tempfile::tempdir().expect("temp dir");
    load(dir.path(), table);
    let second = median(
        (0..scale.n(20, 7))
            .map(|_| load(dir.path(), table))
            .collect(),
    );
    Some(Figure {
        name: "Python tool (componentize-py), second load from the cache",
        detail: format!(
            "{:.1} MiB component: from the compiled cache {:.1} ms vs first load (compile) {:.0} ms",
            size as f64 / f64::from(1 << 20),
            second.as_secs_f64() * 1e3,
            first.as_secs_f64() * 1e3
        ),
        ratio: first.as_secs_f64() / second.as_secs_f64(),
        target: 200.0,
        lower_is_better: false,
        gated: true,
    })
}
