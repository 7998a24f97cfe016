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

/// The Python tool's cached-load figure, and what the compiled cache's entry check costs
/// in it; nothing when the Python tool was not built (`TOOLHOST_SKIP_GUEST_LANGS`).
pub fn run(scale: Scale) -> Vec<Figure> {
    let Some(table) = path("table") else {
        println!(
            "python: skipped, the Python tool is not built ({})",
            toolhost_lang_tools::SKIPPED.unwrap_or("unknown reason")
        );
        return Vec::new();
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
    let check = entry_check(scale, dir.path(), second);
    vec![
        Figure {
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
        },
        check,
    ]
}

/// The compiled cache's entry check (issue 35): the keyed BLAKE3 MAC every cached load now
/// computes over the artifact, as the cache computes it (several threads from 4 MiB), vs
/// the CRC-32 it replaced, over the Python tool's artifact, both in this run. The ratio is
/// the cached load with the old check over the cached load (`loaded`) with the new one.
fn entry_check(scale: Scale, cache: &std::path::Path, loaded: Duration) -> Figure {
    let artifact = std::fs::read_dir(cache)
        .expect("the cache directory")
        .map(|e| e.expect("an entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .expect("the Python tool's compiled entry");
    let bytes = std::fs::read(&artifact).expect("read the artifact");
    let key = [7u8; blake3::KEY_LEN];
    let time = |f: &dyn Fn() -> u64| {
        median(
            (0..scale.n(40, 10))
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(f());
                    t.elapsed()
                })
                .collect(),
        )
    };
    let mac = time(&|| {
        let mut h = blake3::Hasher::new_keyed(&key);
        h.update_rayon(&bytes);
        h.finalize().as_bytes()[0].into()
    });
    let crc = time(&|| crc32fast::hash(&bytes).into());
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let before = loaded.saturating_sub(mac) + crc;
    Figure {
        name: "compiled-cache entry check (keyed BLAKE3 MAC), Python tool's cached load",
        detail: format!(
            "{:.1} MB artifact: MAC {:.2} ms vs CRC-32 (the check it replaced) {:.2} ms; cached load {:.1} ms vs {:.1} ms with the CRC-32",
            bytes.len() as f64 / 1e6,
            ms(mac),
            ms(crc),
            ms(loaded),
            ms(before)
        ),
        ratio: before.as_secs_f64() / loaded.as_secs_f64(),
        target: 0.9,
        lower_is_better: false,
        gated: false,
    }
}
