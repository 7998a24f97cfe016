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
    // The usual cached load is of an entry compiled a while ago, which the first load
    // after it settled has sealed; a just-compiled (or copied) entry is hashed in full.
    std::thread::sleep(toolhost_runtime::cache::SETTLED + Duration::from_millis(100));
    load(dir.path(), table);
    let loads = scale.n(20, 7);
    let second = median((0..loads).map(|_| load(dir.path(), table)).collect());
    let hashed = median(
        (0..loads)
            .map(|_| {
                unseal(dir.path());
                load(dir.path(), table)
            })
            .collect(),
    );
    let check = entry_check(scale, dir.path(), second, hashed);
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

/// Removes the cache's seals: the next load hashes its artifact in full.
fn unseal(cache: &std::path::Path) {
    for entry in std::fs::read_dir(cache).expect("the cache directory") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "seal") {
            std::fs::remove_file(path).expect("remove a seal");
        }
    }
}

/// The compiled cache's entry check (issue 35): the keyed BLAKE3 MAC a load computes over
/// an artifact it has not sealed (as the cache computes it, on several threads from 4 MiB)
/// vs the CRC-32 it replaced, over the Python tool's artifact, both in this run. The ratio
/// is the cached load as the CRC-32 made it (a full-check load, its MAC swapped for the
/// CRC-32) over the usual cached load now (`sealed`: identity checked, not hashed).
fn entry_check(
    scale: Scale,
    cache: &std::path::Path,
    sealed: Duration,
    hashed: Duration,
) -> Figure {
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
    let before = hashed.saturating_sub(mac) + crc;
    Figure {
        name: "compiled-cache entry check (keyed BLAKE3 MAC, then a seal), Python tool's cached load",
        detail: format!(
            "{:.1} MB artifact: MAC {:.2} ms vs CRC-32 (the check it replaced) {:.2} ms; cached load of a sealed entry {:.1} ms, of one hashed in full {:.1} ms, vs {:.1} ms with the CRC-32",
            bytes.len() as f64 / 1e6,
            ms(mac),
            ms(crc),
            ms(sealed),
            ms(hashed),
            ms(before)
        ),
        ratio: before.as_secs_f64() / sealed.as_secs_f64(),
        target: 0.9,
        lower_is_better: false,
        gated: true,
    }
}
