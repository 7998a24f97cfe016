#!/usr/bin/env python3
"""Generates the `tools/bfcl` tools from the installed bfcl-eval package.

One componentize-py tool per BFCL multi-turn backend class (`BACKENDS`): a WIT world with
one operation per public method of the class, typed from the function docs bfcl-eval ships
for the model (`data/multi_turn_func_doc/*.json`) and checked against the method's
signature, and an `app.py` that runs the package's own class through `py/bfcl_tool.py`
and `py/bfcl_state.py` (which keeps the instance in a state file between calls). The
backend modules are vendored unchanged under `py/bfcl_eval/` (with the package's
`__init__.py` files), so building the tools needs no bfcl-eval install; rerun this after
changing the pinned version (`tests/bfcl/requirements.txt`):

    target/bfcl/venv/bin/python tools/bfcl/gen.py

Writes `py/bfcl_eval/...`, `tools/NAME/app.py` and `tools/NAME/wit/NAME.wit` below this
directory, replacing what an earlier run wrote; tools/langs/build.rs builds every
`tools/NAME` into `target/tools/NAME.wasm`.
"""

import argparse
import ast
import importlib
import importlib.metadata
import importlib.resources
import inspect
import json
import keyword
import re
import sys
from pathlib import Path

PACKAGE = "bfcl-eval"
VERSION = "2026.3.23"

# (tool name, backend class). The tool name is also its WIT world's and the
# componentize-py world's name.
BACKENDS = [
    ("bfcl-fs", "GorillaFileSystem"),
    ("math", "MathAPI"),
    ("message", "MessageAPI"),
    ("twitter", "TwitterAPI"),
    ("ticket", "TicketAPI"),
    ("trading", "TradingBot"),
    ("travel", "TravelAPI"),
    ("vehicle", "VehicleControlAPI"),
]

# Where a tool finds its state: the guest path the policy grants read-write.
STATE_DIR = "/state"

HERE = Path(__file__).resolve().parent

# WIT's keywords: an identifier spelled like one is written `%name`.
WIT_KEYWORDS = set(
    "as async bool borrow char constructor enum export f32 f64 flags from func future "
    "import include interface list option own package record resource result s16 s32 s64 "
    "s8 static stream string tuple type u16 u32 u64 u8 use variant with world".split()
)

# Operations whose WIT name is changed. componentize-py links the component's exports
# with the libraries of its CPython, and a world-level export spelled like a symbol those
# export fails the link ("duplicate items"): `rmdir` is one. The descriptions still name
# the backend's method.
WIT_RENAMES = {"rmdir": "remove-dir"}

SCALARS = {"string": "string", "integer": "s64", "float": "f64", "boolean": "bool"}


class GenError(Exception):
    pass


def kebab(name):
    """A Python identifier (snake_case or camelCase) as a WIT identifier."""
    words = []
    for part in name.split("_"):
        words += re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z][a-z0-9]*|[0-9]+", part)
    if not words:
        raise GenError(f"`{name}` has no letters to make a WIT name of")
    # A WIT word starts with a letter: a digit run joins the word before it.
    out = []
    for w in words:
        if w[0].isdigit() and out:
            out[-1] += w
        else:
            out.append(w.lower())
    if not out[0][0].isalpha():
        raise GenError(f"`{name}` does not start with a letter")
    wit = "-".join(out)
    return f"%{wit}" if wit in WIT_KEYWORDS else wit


def snake(wit):
    """The Python name componentize-py gives a WIT identifier."""
    name = wit.lstrip("%").replace("-", "_")
    return name + "_" if keyword.iskeyword(name) else name


def doc_lines(text, indent):
    """`text` as `///` lines (one paragraph per line of the text)."""
    lines = [line.rstrip() for line in text.strip().splitlines()] or [""]
    return [f"{indent}///{' ' + line if line else ''}" for line in lines]


def clean(text):
    return " ".join(text.split())


class Backend:
    """One backend class with its function docs."""

    def __init__(self, tool, class_name):
        from bfcl_eval.constants.executable_backend_config import (
            CLASS_FILE_PATH_MAPPING,
            MULTI_TURN_FUNC_DOC_FILE_MAPPING,
            STATELESS_CLASSES,
        )

        self.tool = tool
        self.class_name = class_name
        self.module_name = CLASS_FILE_PATH_MAPPING[class_name]
        self.module = importlib.import_module(self.module_name)
        self.cls = getattr(self.module, class_name)
        self.stateless = class_name in STATELESS_CLASSES
        doc_file = importlib.resources.files("bfcl_eval") / "data" / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
        self.docs = {}
        for line in doc_file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                d = json.loads(line)
                self.docs[d["name"]] = d
        methods = {n for n, _ in inspect.getmembers(self.cls, inspect.isfunction) if not n.startswith("_")}
        if methods != set(self.docs):
            raise GenError(
                f"{class_name}: the methods {sorted(methods)} and the documented functions {sorted(self.docs)} differ"
            )
        self.description = self.cls()._api_description

    def operations(self):
        ops = [Operation(self, name) for name in sorted(self.docs)]
        seen = {}
        for op in ops:
            if op.wit in seen:
                raise GenError(f"{self.class_name}: `{op.name}` and `{seen[op.wit]}` are both `{op.wit}` in WIT")
            seen[op.wit] = op.name
        return ops


class Operation:
    """One method: its WIT signature, its docs and the Python that calls it."""

    def __init__(self, backend, name):
        self.backend = backend
        self.name = name
        self.wit = WIT_RENAMES.get(name) or kebab(name)
        self.doc = backend.docs[name]
        signature = inspect.signature(getattr(backend.cls, name))
        props = self.doc["parameters"].get("properties", {})
        required = set(self.doc["parameters"].get("required", []))
        self.params = []
        for p in list(signature.parameters.values())[1:]:
            if p.kind is not p.POSITIONAL_OR_KEYWORD:
                raise GenError(f"{backend.class_name}.{name}: parameter `{p.name}` is {p.kind.description}")
            if p.name not in props:
                raise GenError(f"{backend.class_name}.{name}: parameter `{p.name}` is not documented")
            optional = p.default is not p.empty
            if optional == (p.name in required):
                raise GenError(
                    f"{backend.class_name}.{name}: `{p.name}` is {'optional' if optional else 'required'} in the method but not in the docs"
                )
            self.params.append(Param(self, p, props[p.name], optional))
        if set(props) != {p.name for p in self.params}:
            raise GenError(f"{backend.class_name}.{name}: documented parameters {sorted(props)} are not the method's")

    def records(self):
        return [p.record for p in self.params if p.record]

    def summary(self):
        text = self.doc["description"]
        marker = "Tool description: "
        text = clean(text.split(marker, 1)[1] if marker in text else text)
        if self.wit != kebab(self.name):
            text += f" (BFCL's `{self.name}`.)"
        return text

    def returns(self):
        resp = self.doc.get("response", {})
        fields = [
            f"`{k}` ({v.get('type', 'any')}): {clean(v.get('description', '')).rstrip('.')}"
            for k, v in resp.get("properties", {}).items()
        ]
        what = "the method's result as BFCL records it: the JSON text of an object"
        return f"{what} with {'; '.join(fields)}" if fields else what

    def wit_lines(self):
        lines = doc_lines(self.summary(), "    ")
        lines.append("    ///")
        for p in self.params:
            lines += doc_lines(f"@param {p.wit.lstrip('%')} {p.description()}", "    ")
        lines += doc_lines(f"@returns {self.returns()}", "    ")
        params = ", ".join(f"{p.wit}: {p.wit_type}" for p in self.params)
        lines.append(f"    export {self.wit}: func({params}) -> result<string, string>;")
        return lines

    def python(self):
        names = [snake(p.wit) for p in self.params]
        args = ", ".join(["self"] + names)
        fields = ", ".join(f"{p.name!r}: {p.python_value(n)}" for p, n in zip(self.params, names))
        return [
            f"    def {snake(self.wit)}({args}):",
            f"        return _call({self.name!r}, {{{fields}}})",
        ]


class Param:
    def __init__(self, op, p, doc, optional):
        self.name = p.name
        self.wit = kebab(p.name)
        self.doc = doc
        self.optional = optional
        self.default = p.default if optional else None
        self.record = None
        base = self.type_of(op, doc)
        self.wit_type = f"option<{base}>" if optional else base

    def type_of(self, op, doc):
        t = doc.get("type")
        if t in SCALARS:
            return SCALARS[t]
        if t == "array":
            item = doc.get("items", {}).get("type")
            if item not in SCALARS:
                raise GenError(f"{op.backend.class_name}.{op.name}: `{self.name}` is an array of {item!r}")
            return f"list<{SCALARS[item]}>"
        if t == "dict" and doc.get("properties"):
            self.record = Record(op, self, doc)
            return self.record.wit
        raise GenError(f"{op.backend.class_name}.{op.name}: `{self.name}` has type {t!r}, which has no WIT type here")

    def description(self):
        text = clean(self.doc.get("description", ""))
        if self.optional and "default" not in text.lower():
            text += f" Default: {json.dumps(self.default)}."
        return text

    def python_value(self, var):
        value = self.record.python_value(var) if self.record else var
        if self.record and self.optional:
            value = f"None if {var} is None else {value}"
        return value


class Record:
    """A dict parameter with documented keys (TicketAPI.edit_ticket's `updates`): a WIT
    record of optional fields, passed on as a dict of the fields that are set."""

    def __init__(self, op, param, doc):
        self.wit = f"{op.wit.lstrip('%')}-{param.wit.lstrip('%')}"
        self.doc = doc
        self.fields = []
        for key, fdoc in doc["properties"].items():
            t = fdoc.get("type")
            if t not in SCALARS:
                raise GenError(f"{op.backend.class_name}.{op.name}: `{param.name}.{key}` has type {t!r}")
            self.fields.append((key, kebab(key), SCALARS[t], clean(fdoc.get("description", ""))))

    def wit_lines(self):
        lines = doc_lines(clean(self.doc.get("description", "")), "    ")
        lines.append(f"    record {self.wit} {{")
        for _, wit, t, description in self.fields:
            lines += doc_lines(description, "        ")
            lines.append(f"        {wit}: option<{t}>,")
        lines.append("    }")
        return lines

    def python_value(self, var):
        pairs = ", ".join(f"({key!r}, {var}.{snake(wit)})" for key, wit, _, _ in self.fields)
        return f"{{k: v for k, v in [{pairs}] if v is not None}}"


def sync(root, files):
    """Makes directory `root` hold exactly `files` (relative path -> text): a file whose text
    is already right is left alone, so its modification time stays and cargo does not
    rebuild the tools for a run that changed nothing; any other file below is removed."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in sorted(root.rglob("*"), reverse=True):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and rel not in files:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def vendor(backends):
    """The backend modules, the package modules they import and the `__init__.py` files of
    their packages, unchanged, and a notice: relative path (`bfcl_eval/...`) -> text."""
    root = Path(importlib.import_module("bfcl_eval").__file__).resolve().parent
    wanted, queue = set(), [b.module_name for b in backends]
    while queue:
        name = queue.pop()
        if name in wanted:
            continue
        wanted.add(name)
        source = Path(importlib.import_module(name).__file__).read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bfcl_eval"):
                queue.append(node.module)
            elif isinstance(node, ast.Import):
                queue += [a.name for a in node.names if a.name.startswith("bfcl_eval")]
    files = {}
    for name in sorted(wanted):
        parts = name.split(".")
        for i in range(1, len(parts)):
            init = root.joinpath(*parts[1:i], "__init__.py")
            files["/".join(parts[:i] + ["__init__.py"])] = init.read_text(encoding="utf-8")
        source = Path(importlib.import_module(name).__file__)
        files["/".join(parts) + ".py"] = source.read_text(encoding="utf-8")
    files["bfcl_eval/NOTICE.md"] = (
        f"# Vendored from {PACKAGE} {VERSION}\n\n"
        "These files are copied unchanged from the `bfcl-eval` package on PyPI (the Berkeley\n"
        "Function Calling Leaderboard, https://github.com/ShishirPatil/gorilla), licensed under\n"
        "the Apache License, Version 2.0 (a copy is in tools/bfcl/LICENSE.Apache-2.0), by\n"
        "tools/bfcl/gen.py, which rewrites them from the installed package:\n\n"
        + "".join(f"- `{f}`\n" for f in sorted(files))
    )
    return files


def wit(backend, ops):
    world = backend.tool
    state = (
        "It keeps no state."
        if backend.stateless
        else f"Its state lives in `{STATE_DIR}/{backend.class_name}.json` (and `.private.json`), which the operator grants read-write: each call loads the instance, runs the method and saves it."
    )
    lines = [
        f"// Generated by tools/bfcl/gen.py from {PACKAGE} {VERSION}; do not edit.",
        f"package toolhost:{world}@0.1.0;",
        "",
    ]
    lines += doc_lines(
        f"{backend.description}\n\nBFCL's `{backend.class_name}` (the {PACKAGE} package's own class) as a sandboxed tool. {state}",
        "",
    )
    lines.append(f"world {world} {{")
    body = []
    for op in ops:
        for record in op.records():
            body.append(record.wit_lines())
    for op in ops:
        body.append(op.wit_lines())
    for i, block in enumerate(body):
        if i:
            lines.append("")
        lines += block
    lines.append("}")
    return "\n".join(lines) + "\n"


def app(backend, ops):
    state = "None" if backend.stateless else f"{STATE_DIR!r}"
    lines = [
        f'"""The `{backend.tool}` tool: {PACKAGE} {VERSION}\'s `{backend.class_name}` (world `{backend.tool}`).',
        "",
        "Generated by tools/bfcl/gen.py; do not edit. Each operation runs the backend's own",
        "method on a new instance (the class keeps no state)."
        if backend.stateless
        else "method on the instance `bfcl_state` keeps under the granted state directory.",
        '"""',
        "",
        "import bfcl_tool",
        "import wit_world",
        f"from {backend.module_name} import {backend.class_name}",
        "",
        f"_call = bfcl_tool.caller({backend.class_name}, {state})",
        "",
        "",
        "class WitWorld(wit_world.WitWorld):",
    ]
    for i, op in enumerate(ops):
        if i:
            lines.append("")
        lines += op.python()
    return "\n".join(lines) + "\n"


def check_installed():
    """Exits with a message unless the pinned bfcl-eval is what this Python imports."""
    try:
        installed = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        sys.exit(f"error: {PACKAGE} is not installed in {sys.executable}: run scripts/bfcl.sh, or pip install --no-deps {PACKAGE}=={VERSION}")
    if installed != VERSION:
        sys.exit(f"error: {PACKAGE} {installed} is installed; tools/bfcl and tests/bfcl are for {VERSION}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="where to write (default: tools/bfcl)")
    args = parser.parse_args()
    check_installed()
    try:
        backends = [Backend(tool, cls) for tool, cls in BACKENDS]
        sync(args.out / "py" / "bfcl_eval", {k.removeprefix("bfcl_eval/"): v for k, v in vendor(backends).items()})
        tools = {}
        for b in backends:
            ops = b.operations()
            tools[f"{b.tool}/wit/{b.tool}.wit"] = wit(b, ops)
            tools[f"{b.tool}/app.py"] = app(b, ops)
            print(f"gen: {b.tool}: {b.class_name}, {len(ops)} operations")
        sync(args.out / "tools", tools)
    except GenError as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main()
