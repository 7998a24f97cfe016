//! Builds every tool component for `wasm32-wasip2` with a nested `cargo build`, the way
//! wasmtime's test-programs do, so tests and the demo never need a manual pre-step.
//!
//! The nested build uses its own target directory, `TARGET/wasm-tools` beside the outer
//! build's profile directories (sharing the outer one would deadlock on cargo's build lock),
//! and the `tool` profile. One nested directory for every outer profile means a debug, a
//! release and a clippy build of the host all use the same components, built once. The
//! finished tools are then copied to `TARGET/tools/NAME.wasm`, a stable path that the
//! README's quickstart and `toolhost run --tools-dir` use; every component, test fixtures
//! included, also goes to `TARGET/fixtures/NAME.wasm`, the folder the tests use. (When the
//! outer target directory cannot be found, everything stays under `OUT_DIR` and no copy is
//! made.)

#[path = "publish.rs"]
mod publish;
use publish::{FIXTURES, outer_target_dir, publish, publish_tool, root_and_out_dir};
#[path = "nested.rs"]
mod nested;
use nested::{INTERPRETER, TARGET, build_interpreter, nested_build};

/// (crate name, constant name) of every component built here; the test fixtures
/// (`tools/fixtures/*`) among them listed again in [`FIXTURE_CRATES`].
const TOOLS: &[(&str, &str)] = &[
    ("calc", "CALC"),
    ("text", "TEXT"),
    ("json", "JSON"),
    ("fs", "FS"),
    ("http", "HTTP"),
    ("bank", "BANK"),
    ("slack", "SLACK"),
    ("workspace", "WORKSPACE"),
    ("booking", "BOOKING"),
    ("typesink", "TYPESINK"),
    ("misbehave", "MISBEHAVE"),
    ("hog", "HOG"),
    ("plain", "PLAIN"),
    ("kernels", "KERNELS"),
    ("conformance", "CONFORMANCE"),
];

/// The components of [`TOOLS`] that are test fixtures, published to `TARGET/fixtures` only.
const FIXTURE_CRATES: &[&str] = &[
    "typesink",
    "misbehave",
    "hog",
    "plain",
    "kernels",
    "conformance",
];

fn main() {
    let (root, out_dir) = root_and_out_dir(1);
    let outer_target = outer_target_dir(&out_dir);
    let target_dir = match &outer_target {
        Some(t) => t.join("wasm-tools"),
        None => out_dir.join("wasm"),
    };

    for dir in ["tools", "tool-sdk", "crates/runtime/wit"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.lock").display()
    );

    let mut cmd = nested_build(&root.join("Cargo.toml"), &target_dir);
    for (name, _) in TOOLS {
        cmd.args(["-p", name]);
    }
    let output = cmd.output().expect("run the nested cargo build");
    if !output.status.success() {
        nested::failed("the tool components", &output.stderr);
    }

    build_interpreter(&root, &target_dir);

    let stable = outer_target;
    let mut consts = String::new();
    let mut all = String::new();
    for (name, konst) in TOOLS {
        let built = target_dir
            .join(TARGET)
            .join("tool")
            .join(format!("{name}.wasm"));
        assert!(
            built.is_file(),
            "the nested build did not produce {}",
            built.display()
        );
        let path = match &stable {
            Some(t) if FIXTURE_CRATES.contains(name) => {
                // One an earlier build put among the tools goes.
                let _ = std::fs::remove_file(t.join("tools").join(format!("{name}.wasm")));
                publish(&built, &t.join(FIXTURES), name)
            }
            Some(t) => publish_tool(&built, t, name),
            None => built,
        };
        consts.push_str(&format!(
            "/// Path of the built `{name}` component.\npub const {konst}: &str = {:?};\n",
            path.display().to_string()
        ));
        all.push_str(&format!("    ({name:?}, {konst}),\n"));
    }
    consts.push_str(&format!(
        "/// Every built component: (name, path).\npub const ALL: &[(&str, &str)] = &[\n{all}];\n"
    ));
    // Every component, fixtures included, is in one folder: the one tests give `--tools-dir`.
    let fixtures = match &stable {
        Some(t) => t.join(FIXTURES),
        None => target_dir.join(TARGET).join("tool"),
    };
    consts.push_str(&format!(
        "/// The folder holding every built component, test fixtures included.\npub const FIXTURES_DIR: &str = {:?};\n",
        fixtures.display().to_string()
    ));
    // The code-mode interpreter is not a tool (it is in no `ALL` list): it lands beside
    // them, in the folder `toolhost run --tools-dir` takes, where code mode looks for it.
    let built = target_dir
        .join(TARGET)
        .join("tool")
        .join(format!("{INTERPRETER}.wasm"));
    assert!(
        built.is_file(),
        "the nested build did not produce {}",
        built.display()
    );
    let path = match &stable {
        Some(t) => publish_tool(&built, t, INTERPRETER),
        None => built,
    };
    consts.push_str(&format!(
        "/// Path of the built code-mode interpreter (`tools/python`, monty).\npub const PYTHON: &str = {:?};\n",
        path.display().to_string()
    ));
    std::fs::write(out_dir.join("tools.rs"), consts).expect("write tools.rs");
}
