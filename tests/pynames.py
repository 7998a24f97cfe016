"""Names as toolhost's typed Python API (code mode) gives them, for the converters that
write ground truth as programs (tests/bfcl/convert.py, bench/agentdojo/harness.py): the
rule of `py_name` in crates/engine/src/pyapi.rs, with its list of reserved names read from
that file, so there is one list."""

import re
import sys
from pathlib import Path

PYAPI = Path(__file__).resolve().parent.parent / "crates/engine/src/pyapi.rs"


def reserved() -> set[str]:
    """The names the API gives a trailing `_` (keywords, builtins, its own): `RESERVED`."""
    body = re.search(r'const RESERVED: &str = "\\(.*?)";', PYAPI.read_text(), re.S)
    if not body:
        sys.exit(f"no `const RESERVED` in {PYAPI}")
    return set(body.group(1).replace("\\", " ").split())


RESERVED = reserved()


def py_name(name: str) -> str:
    """`name` as a Python identifier: snake_cased (`-`, `.` and spaces become `_`), other
    characters outside `[a-z0-9_]` dropped, a leading digit prefixed with `_`, and a
    trailing `_` on a reserved name."""
    out = "".join("_" if c in "-._ " else c.lower()
                  for c in name if c in "-._ " or (c.isascii() and c.isalnum()))
    if not out or out[0].isdigit():
        out = "_" + out
    if out in RESERVED or out.startswith("_toolhost"):
        out += "_"
    return out
