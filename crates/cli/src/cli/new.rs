//! `toolhost new tool NAME --lang rust|python|js`: scaffold a tool project that builds
//! and passes its own test as created. The files are templates in `crates/cli/templates/new/`, embedded in the binary.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{CmdResult, Failure, exit};

/// Create projects.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum NewCommand {
    /// Scaffold a tool: WIT with doc comments, source, build.sh, test.sh, a policy
    /// section and a README.
    Tool(Args),
}

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The tool's name: lower-case letters, digits and `-`, starting with a letter (it
    /// names the WIT world, the component and the policy section).
    name: String,
    /// The language to write the tool in.
    #[arg(long, value_enum)]
    lang: Lang,
    /// The directory to create [default: ./NAME]; it must not exist or be empty.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Rust only: build against the SDK in DIR instead of crates.io (a `[patch.crates-io]`
    /// in the scaffold's Cargo.toml): a checkout's `tool-sdk`, or a directory holding the
    /// SDK's three crates unpacked from `cargo package` (NAME-VERSION) [default: the
    /// `toolhost-sdk` release of this toolhost's version, from crates.io].
    #[arg(long, value_name = "DIR")]
    sdk: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Lang {
    Rust,
    Python,
    Js,
}

/// (path in the project, template, executable); `NAME` in a path is the tool's name.
type Files = &'static [(&'static str, &'static str, bool)];

const COMMON: Files = &[
    (
        "wit/NAME.wit",
        include_str!("../../templates/new/common/wit/tool.wit"),
        false,
    ),
    (
        "test.sh",
        include_str!("../../templates/new/common/test.sh"),
        true,
    ),
    (
        "policy.toml",
        include_str!("../../templates/new/common/policy.toml"),
        false,
    ),
    (
        "README.md",
        include_str!("../../templates/new/common/README.md"),
        false,
    ),
    (
        ".gitignore",
        include_str!("../../templates/new/common/gitignore"),
        false,
    ),
];

const RUST: Files = &[
    (
        "Cargo.toml",
        include_str!("../../templates/new/rust/Cargo.toml"),
        false,
    ),
    (
        "src/lib.rs",
        include_str!("../../templates/new/rust/src/lib.rs"),
        false,
    ),
    (
        "build.sh",
        include_str!("../../templates/new/rust/build.sh"),
        true,
    ),
];

const PYTHON: Files = &[
    (
        "app.py",
        include_str!("../../templates/new/python/app.py"),
        false,
    ),
    (
        "build.sh",
        include_str!("../../templates/new/python/build.sh"),
        true,
    ),
    // The same pin as toolhost's own Python tools, so the scaffold is tested with it.
    (
        "requirements.txt",
        include_str!("../../../../tools/py/requirements.txt"),
        false,
    ),
];

const JS: Files = &[
    (
        "NAME.js",
        include_str!("../../templates/new/js/tool.js"),
        false,
    ),
    (
        "package.json",
        include_str!("../../templates/new/js/package.json"),
        false,
    ),
    (
        "componentize.mjs",
        include_str!("../../templates/new/js/componentize.mjs"),
        false,
    ),
    (
        "build.sh",
        include_str!("../../templates/new/js/build.sh"),
        true,
    ),
];

impl Lang {
    fn files(self) -> Files {
        match self {
            Lang::Rust => RUST,
            Lang::Python => PYTHON,
            Lang::Js => JS,
        }
    }

    /// (language name, what building needs, the source file) for the README.
    fn readme(self, name: &str) -> (&'static str, &'static str, String) {
        match self {
            Lang::Rust => (
                "Rust",
                "Rust with `rustup target add wasm32-wasip2`",
                "`src/lib.rs`".into(),
            ),
            Lang::Python => (
                "Python",
                "componentize-py (`pip install -r requirements.txt` in a venv)",
                "`app.py`".into(),
            ),
            Lang::Js => (
                "JavaScript",
                "Node 18+ with npm (`build.sh` runs `npm install` once)",
                format!("`{name}.js`"),
            ),
        }
    }
}

pub(crate) fn run(cmd: NewCommand, out: &mut dyn Write) -> CmdResult {
    let NewCommand::Tool(args) = cmd;
    check_name(&args.name).map_err(|e| Failure::new(exit::USAGE, e))?;
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(Failure::new(
            exit::USAGE,
            format!(
                "`{}` exists and is not empty: choose another --dir",
                dir.display()
            ),
        ));
    }
    let patch = match (args.lang, &args.sdk) {
        (Lang::Rust, Some(dir)) => sdk_patch(dir)?,
        _ => String::new(),
    };
    let (lang, needs, source) = args.lang.readme(&args.name);
    let vars = [
        ("{{name}}", args.name.clone()),
        ("{{crate}}", args.name.replace('-', "_")),
        ("{{sdk_version}}", SDK_VERSION.into()),
        ("{{sdk_patch}}", patch),
        ("{{lang}}", lang.into()),
        ("{{needs}}", needs.into()),
        ("{{source}}", source),
    ];
    for (path, template, executable) in COMMON.iter().chain(args.lang.files()) {
        let dest = dir.join(path.replace("NAME", &args.name));
        let text = vars
            .iter()
            .fold(template.to_string(), |t, (k, v)| t.replace(k, v));
        write(&dest, &text, *executable).map_err(|e| {
            Failure::new(
                exit::USAGE,
                format!("cannot write `{}`: {e}", dest.display()),
            )
        })?;
    }
    let _ = writeln!(
        out,
        "created the {lang} tool `{}` in {}\nnext: cd {} && ./build.sh && ./test.sh\nbuilding needs {needs}; test.sh needs toolhost on PATH (or TOOLHOST=/path/to/toolhost)",
        args.name,
        dir.display(),
        dir.display()
    );
    Ok(exit::OK)
}

/// WIT identifiers are kebab-case words that start with a letter; the name is also a file
/// stem and a TOML key, so nothing else is allowed.
fn check_name(name: &str) -> Result<(), String> {
    let ok = name.split('-').all(|word| {
        word.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && word
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a valid tool name: use lower-case words of letters and digits joined by `-`, each starting with a letter, e.g. `weather-report`"
        ))
    }
}

/// The SDK release a scaffold depends on: this toolhost's own version (the workspace
/// versions the host and the SDK together).
const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The SDK's crates: (name, directory in a checkout's `tool-sdk`).
const SDK_CRATES: [(&str, &str); 3] = [
    ("toolhost-sdk", "."),
    ("toolhost-sdk-macro", "macro"),
    ("toolhost-wit-docs", "wit-docs"),
];

/// The `[patch.crates-io]` table that builds a scaffold against the SDK in `dir`: a
/// checkout's `tool-sdk`, or the three crates unpacked side by side as `cargo package`
/// leaves them (`toolhost-sdk-VERSION`, …).
fn sdk_patch(dir: &Path) -> Result<String, Failure> {
    let found = |layout: &dyn Fn(&str, &str) -> PathBuf| -> Option<Vec<(&str, PathBuf)>> {
        SDK_CRATES
            .iter()
            .map(|(name, sub)| {
                let path = layout(name, sub);
                let manifest = std::fs::read_to_string(path.join("Cargo.toml")).ok()?;
                manifest
                    .contains(&format!("name = \"{name}\""))
                    .then(|| (*name, path.canonicalize().unwrap_or(path)))
            })
            .collect()
    };
    let crates = found(&|_, sub| dir.join(sub))
        .or_else(|| found(&|name, _| dir.join(format!("{name}-{SDK_VERSION}"))))
        .ok_or_else(|| {
            Failure::new(
                exit::USAGE,
                format!(
                    "no toolhost SDK in `{}`: --sdk takes a checkout's `tool-sdk` directory, or one holding toolhost-sdk-{SDK_VERSION}, toolhost-sdk-macro-{SDK_VERSION} and toolhost-wit-docs-{SDK_VERSION} (unpacked from `cargo package`)",
                    dir.display()
                ),
            )
        })?;
    let mut patch = format!(
        "\n# The SDK from `{}`, not crates.io (`toolhost new tool --sdk`).\n[patch.crates-io]\n",
        dir.display()
    );
    for (name, path) in crates {
        let path = serde_json::to_string(&path.display().to_string()).expect("a string");
        patch.push_str(&format!("{name} = {{ path = {path} }}\n"));
    }
    Ok(patch)
}

fn write(path: &Path, text: &str, executable: bool) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)?;
    #[cfg(unix)]
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    }
    #[cfg(not(unix))]
    let _ = executable;
    Ok(())
}
