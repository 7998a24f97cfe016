//! Builds the Python and JavaScript tools into components, the way `tools/build.rs` builds
//! the Rust ones, so tests never need a manual pre-step:
//!
//! - `tools/py/NAME/` (`app.py` + `wit/`) with componentize-py from the venv that
//!   `scripts/guest-langs.sh` makes under `target/guest-langs/venv`;
//! - `tools/js/NAME/` (`NAME.js` + `wit/`) with componentize-js, through
//!   `tools/js/componentize.mjs` and the npm project under `target/guest-langs/node`.
//!
//! Both toolchains drop WIT doc comments, so each component gets them packed into its
//! `toolhost:docs` section here (what `toolhost tool pack` does). A missing toolchain is a
//! warning naming the command that installs it, and the crate builds without these tools
//! (`SKIPPED` says why); so does `TOOLHOST_SKIP_GUEST_LANGS=1` (`SKIP_REQUESTED`). The
//! built components are copied to `TARGET/tools/NAME.wasm` beside the Rust ones.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../publish.rs"]
mod publish;
use publish::{outer_target_dir, publish};

use toolhost_wit_docs::DocMap;

/// (name, language, world) of every tool built here; its sources are in `tools/LANG/NAME`.
const TOOLS: &[(&str, Lang, &str)] = &[("table", Lang::Python, "table"), ("web", Lang::Js, "web")];

#[derive(Clone, Copy)]
enum Lang {
    Python,
    Js,
}

impl Lang {
    fn dir(self) -> &'static str {
        match self {
            Lang::Python => "py",
            Lang::Js => "js",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Js => "js",
        }
    }
}

const SKIP_VAR: &str = "TOOLHOST_SKIP_GUEST_LANGS";
const DIR_VAR: &str = "TOOLHOST_GUEST_LANGS_DIR";

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .expect("tools/langs is two levels down")
        .to_path_buf();
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    let toolchains = std::env::var_os(DIR_VAR)
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target").join("guest-langs"));

    println!("cargo:rerun-if-env-changed={SKIP_VAR}");
    println!("cargo:rerun-if-env-changed={DIR_VAR}");
    for dir in ["tools/py", "tools/js"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        toolchains.join("stamp").display()
    );

    if std::env::var_os(SKIP_VAR).is_some_and(|v| v == "1") {
        let why = format!("{SKIP_VAR}=1 was set when toolhost-lang-tools was built");
        println!("cargo:warning=skipping the Python and JavaScript tools: {why}");
        write_paths(&out_dir, &[], Some(&why), true);
        return;
    }

    // A missing toolchain is not an error here: only the tests and the benchmark use these
    // tools, and they refuse to pass without them unless the skip was asked for
    // (`SKIP_REQUESTED`). The README's test command installs both toolchains first.
    let componentize_py = toolchains.join("venv").join("bin").join("componentize-py");
    let node_project = toolchains.join("node");
    let componentize_js = node_project.join("node_modules/@bytecodealliance/componentize-js");
    let missing = if !componentize_py.is_file() {
        Some(format!(
            "componentize-py is not installed at {}",
            componentize_py.display()
        ))
    } else if !componentize_js.join("package.json").is_file() {
        Some(format!(
            "componentize-js is not installed in {}",
            node_project.display()
        ))
    } else {
        None
    };
    if let Some(missing) = missing {
        let why = format!(
            "{missing}: run `./scripts/guest-langs.sh` (the README's test command does), or set {SKIP_VAR}=1"
        );
        println!("cargo:warning=building without the Python and JavaScript tools: {why}");
        write_paths(&out_dir, &[], Some(&why), false);
        return;
    }

    // Each build is a single-threaded compiler run of 5-15 s: run them side by side.
    let built: Vec<(String, &str, PathBuf)> = std::thread::scope(|s| {
        let jobs: Vec<_> = TOOLS
            .iter()
            .map(|&(name, lang, world)| {
                let (root, out_dir) = (&root, &out_dir);
                let (py, node) = (&componentize_py, &node_project);
                s.spawn(move || {
                    let src = root.join("tools").join(lang.dir()).join(name);
                    let out = out_dir.join(format!("{name}.wasm"));
                    let mut cmd = match lang {
                        Lang::Python => python(py, &src, world, out_dir, &out),
                        Lang::Js => js(node, root, &src, name, world, &out),
                    };
                    run(&mut cmd, name, lang);
                    pack(&out, &src.join("wit"), world);
                    (name.to_string(), lang.name(), out)
                })
            })
            .collect();
        jobs.into_iter()
            .map(|j| j.join().expect("build thread"))
            .collect()
    });
    let built = match outer_target_dir(&out_dir) {
        Some(target) => built
            .into_iter()
            .map(|(name, lang, path)| {
                let stable = publish(&path, &target.join("tools"), &name);
                (name, lang, stable)
            })
            .collect(),
        None => built,
    };
    write_paths(&out_dir, &built, None, false);
}

fn python(componentize_py: &Path, src: &Path, world: &str, out_dir: &Path, out: &Path) -> Command {
    // componentize-py imports the app with the build's Python, which writes `__pycache__`
    // beside the sources whatever PYTHONDONTWRITEBYTECODE says; a changed `tools/py`
    // would make cargo run this script again, so build from a copy.
    let copy = out_dir
        .join("py")
        .join(src.file_name().expect("a tool directory"));
    let _ = std::fs::remove_dir_all(&copy);
    copy_py(src, &copy);
    let mut cmd = Command::new(componentize_py);
    cmd.arg("-d")
        .arg(src.join("wit"))
        .args(["-w", world, "componentize", "app", "-p"])
        .arg(&copy)
        .arg("-o")
        .arg(out)
        .current_dir(out_dir)
        .env_remove("VIRTUAL_ENV");
    cmd
}

/// Copies the Python modules and packages of `from` (not `wit/`, not caches) to `to`.
fn copy_py(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the source copy");
    for entry in std::fs::read_dir(from).expect("read the tool's sources") {
        let entry = entry.expect("read the tool's sources");
        let (path, name) = (entry.path(), entry.file_name());
        if path.is_dir() {
            if name != "wit" && name != "__pycache__" {
                copy_py(&path, &to.join(name));
            }
        } else if path.extension().is_some_and(|e| e == "py") {
            std::fs::copy(&path, to.join(name)).expect("copy a source file");
        }
    }
}

fn js(
    node_project: &Path,
    root: &Path,
    src: &Path,
    name: &str,
    world: &str,
    out: &Path,
) -> Command {
    let mut cmd = Command::new("node");
    cmd.arg(root.join("tools/js/componentize.mjs"))
        .arg(src.join(format!("{name}.js")))
        .arg(src.join("wit"))
        .arg(world)
        .arg(out)
        .env("COMPONENTIZE_JS_DIR", node_project);
    cmd
}

fn run(cmd: &mut Command, name: &str, lang: Lang) {
    let output = match cmd.output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && matches!(lang, Lang::Js) => {
            panic!("the JavaScript tools need `node` (18 or later) on PATH: {e}")
        }
        Err(e) => panic!(
            "cannot run {:?} for the {} tool `{name}`: {e}",
            cmd.get_program(),
            lang.name()
        ),
    };
    if !output.status.success() {
        panic!(
            "building the {} tool `{name}` failed ({}):\n{}{}",
            lang.name(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Appends the world's docs as a `toolhost:docs` custom section, as `toolhost tool pack`
/// does (`DocMap::pack`); custom sections may go anywhere in a component.
fn pack(component: &Path, wit: &Path, world: &str) {
    let docs = DocMap::from_wit_path(wit, Some(world))
        .unwrap_or_else(|e| panic!("reading the docs of {}: {e}", wit.display()));
    let bytes = std::fs::read(component).expect("read the built component");
    std::fs::write(component, docs.pack(&bytes)).expect("write the packed component");
}

fn write_paths(
    out_dir: &Path,
    built: &[(String, &str, PathBuf)],
    skipped: Option<&str>,
    requested: bool,
) {
    let mut all = String::new();
    for (name, lang, path) in built {
        all.push_str(&format!(
            "    ({name:?}, {lang:?}, {:?}),\n",
            path.display().to_string()
        ));
    }
    let skipped = match skipped {
        Some(why) => format!("Some({why:?})"),
        None => "None".into(),
    };
    let code = format!(
        "/// Every built component: (name, language, path).\npub const ALL: &[(&str, &str, &str)] = &[\n{all}];\n\
         /// Why the Python and JavaScript tools were not built, if they were not.\npub const SKIPPED: Option<&str> = {skipped};\n\
         /// Whether the skip was asked for (`TOOLHOST_SKIP_GUEST_LANGS=1`) rather than forced by a missing toolchain.\npub const SKIP_REQUESTED: bool = {requested};\n"
    );
    std::fs::write(out_dir.join("lang_tools.rs"), code).expect("write lang_tools.rs");
}
