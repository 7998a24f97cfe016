"""A BFCL backend instance kept in JSON files between sandboxed calls.

BFCL's multi-turn backends (bfcl-eval's `func_source_code` classes) keep state across the
calls of a task: `execute_multi_turn_func_call` holds one instance per class for the
whole task. A toolhost tool gets a fresh instance per call, so every call of a generated
`tools/bfcl` tool loads the instance from `DIR/CLASS.json` under a read-write grant, runs
the method, and saves it back (`call`). `tests/bfcl/plain.py` uses the same encoding on
the host to write the expected end states and to load a sandboxed run's end state back
into instances for BFCL's own `state_checker`.

`CLASS.json` holds either the task's initial configuration, as the converter writes it:

    {"class": "GorillaFileSystem", "scenario": {...}, "long_context": false}

(the first call runs the class's own `_load_scenario` on a deep copy of it, as BFCL's
helper does), or the instance's public attributes, which are what BFCL's state checker
compares, so an end-state check on this file compares what BFCL compares:

    {"class": "GorillaFileSystem", "attrs": {"root": ..., "long_context": false}}

The private attributes (names starting with `_`: the seeded `_random`, GorillaFileSystem's
`_current_dir`, a File's `_last_modified`, ...) go to `CLASS.private.json`, those of the
instance under "instance" and those of nested objects under "objects" by object number.

Values are JSON where JSON says the same thing; anything else is tagged with `__py__`, so
it loads back as the same Python value:
- a dict whose keys are not all strings (TwitterAPI's tweets by int id):
  `{"__py__": "dict", "items": [[key, value], ...]}`; likewise "tuple", and "set" and
  "frozenset" (items in a fixed order, so equal sets are equal text);
- "datetime", "date", "time" (ISO text), "timedelta", "decimal", "bytes", non-finite
  "float", and "random" (a `random.Random`'s `getstate()`);
- an object of a backend class: `{"__py__": "object", "class": "MODULE.CLASS", "id": N,
  "attrs": {...}}`; objects, and lists, dicts and sets reached more than once, get an id
  where they first appear and are `{"__py__": "ref", "id": N}` after, so shared and
  cyclic references (a Directory's `parent`) come back shared.
Only classes from bfcl-eval's backend package are created from a file. A value of any
other type is an error naming where it was.
"""

import datetime
import decimal
import importlib
import json
import math
import os
import random

TAG = "__py__"
BACKENDS = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"


class StateError(Exception):
    """A state file that cannot be read or written, or a value this encoding cannot hold."""


def _is_backend_object(v):
    module = type(v).__module__
    return module == BACKENDS or module.startswith(BACKENDS + ".")


_IDENTITY = (list, dict, set)


def _public(attrs):
    return {k: v for k, v in attrs.items() if not k.startswith("_")}


def _private(attrs):
    return {k: v for k, v in attrs.items() if k.startswith("_")}


class _Encoder:
    """One encoding of an instance: object numbers run across both files."""

    def __init__(self, roots):
        self.shared = _shared(roots)
        self.numbers = {}
        # Objects numbered so far, kept alive so that their id() stays theirs.
        self.objects = []

    def number(self, v):
        self.numbers[id(v)] = len(self.objects)
        self.objects.append(v)
        return self.numbers[id(v)]

    def value(self, v, where):
        if v is None or isinstance(v, (bool, str)):
            return v
        t = type(v)
        if t is int:
            return v
        if t is float:
            return v if math.isfinite(v) else {TAG: "float", "text": repr(v)}
        if id(v) in self.numbers:
            return {TAG: "ref", "id": self.numbers[id(v)]}
        if t in _IDENTITY or _is_backend_object(v):
            n = self.number(v) if (id(v) in self.shared or _is_backend_object(v)) else None
            return self.container(v, n, where)
        return self.plain(v, where)

    def container(self, v, n, where):
        numbered = {} if n is None else {"id": n}
        if type(v) is list:
            items = [self.value(x, f"{where}[{i}]") for i, x in enumerate(v)]
            return items if n is None else {TAG: "list", **numbered, "items": items}
        if type(v) is dict:
            if n is None and all(type(k) is str for k in v) and TAG not in v:
                return {k: self.value(x, f"{where}[{k!r}]") for k, x in v.items()}
            items = [
                [self.value(k, f"{where} key {k!r}"), self.value(x, f"{where}[{k!r}]")]
                for k, x in v.items()
            ]
            return {TAG: "dict", **numbered, "items": items}
        if type(v) is set:
            return {TAG: "set", **numbered, "items": self.unordered(v, where)}
        attrs = vars(v)
        return {
            TAG: "object",
            "class": f"{type(v).__module__}.{type(v).__qualname__}",
            "id": n,
            "attrs": {
                k: self.value(x, f"{where}.{k}") for k, x in _public(attrs).items()
            },
        }

    def unordered(self, items, where):
        encoded = [self.value(x, f"{where} item") for x in items]
        return sorted(encoded, key=lambda e: json.dumps(e, sort_keys=True))

    def plain(self, v, where):
        t = type(v)
        if t is tuple:
            return {TAG: "tuple", "items": [self.value(x, f"{where}[{i}]") for i, x in enumerate(v)]}
        if t is frozenset:
            return {TAG: "frozenset", "items": self.unordered(v, where)}
        if t is datetime.datetime:
            return {TAG: "datetime", "iso": v.isoformat()}
        if t is datetime.date:
            return {TAG: "date", "iso": v.isoformat()}
        if t is datetime.time:
            return {TAG: "time", "iso": v.isoformat()}
        if t is datetime.timedelta:
            return {TAG: "timedelta", "days": v.days, "seconds": v.seconds, "microseconds": v.microseconds}
        if t is decimal.Decimal:
            return {TAG: "decimal", "text": str(v)}
        if t is bytes:
            return {TAG: "bytes", "hex": v.hex()}
        if t is random.Random:
            version, internal, gauss = v.getstate()
            return {TAG: "random", "state": [version, list(internal), gauss]}
        raise StateError(f"`{where}` holds a {t.__module__}.{t.__qualname__}, which a state file cannot hold")


def _shared(roots):
    """ids of the lists, dicts and sets reached more than once from `roots`."""
    seen, shared = set(), set()
    stack = list(roots)
    while stack:
        v = stack.pop()
        t = type(v)
        if t in _IDENTITY or _is_backend_object(v):
            if id(v) in seen:
                shared.add(id(v))
                continue
            seen.add(id(v))
            if t is dict:
                stack.extend(v.keys())
                stack.extend(v.values())
            elif t in (list, set):
                stack.extend(v)
            else:
                stack.extend(vars(v).values())
        elif t in (tuple, frozenset):
            stack.extend(v)
    return shared


def encode(instance):
    """The (public, private) JSON values of a backend instance."""
    attrs = vars(instance)
    enc = _Encoder([attrs])
    name = type(instance).__name__
    public = {"class": name, "attrs": {k: enc.value(v, f"{name}.{k}") for k, v in _public(attrs).items()}}
    private = {"instance": {k: enc.value(v, f"{name}.{k}") for k, v in _private(attrs).items()}, "objects": {}}
    done = 0
    # Encoding one object's private attributes may number more objects: go on until
    # every numbered object's have been written.
    while done < len(enc.objects):
        obj = enc.objects[done]
        if _is_backend_object(obj):
            where = f"{name} object {done} ({type(obj).__name__})"
            fields = {k: enc.value(v, f"{where}.{k}") for k, v in _private(vars(obj)).items()}
            if fields:
                private["objects"][str(done)] = fields
        done += 1
    return public, private


class _Decoder:
    def __init__(self, path):
        self.path = path
        self.objects = {}

    def fail(self, why):
        raise StateError(f"`{self.path}`: {why}")

    def register(self, e, v):
        n = e.get("id")
        if n is not None:
            if not isinstance(n, int) or n in self.objects:
                self.fail(f"object number {n!r} is not a new number")
            self.objects[n] = v
        return v

    def value(self, e):
        if isinstance(e, list):
            return [self.value(x) for x in e]
        if not isinstance(e, dict):
            return e
        tag = e.get(TAG)
        if tag is None:
            return {k: self.value(x) for k, x in e.items()}
        items = e.get("items", [])
        if tag == "ref":
            if e.get("id") not in self.objects:
                self.fail(f"reference to object {e.get('id')!r} before it is defined")
            return self.objects[e["id"]]
        if tag == "list":
            out = self.register(e, [])
            out.extend(self.value(x) for x in items)
            return out
        if tag == "dict":
            out = self.register(e, {})
            for pair in items:
                if not (isinstance(pair, list) and len(pair) == 2):
                    self.fail(f"a dict item is not a [key, value] pair: {pair!r}")
                out[self.value(pair[0])] = self.value(pair[1])
            return out
        if tag == "set":
            return self.register(e, {self.value(x) for x in items})
        if tag == "object":
            return self.object(e)
        return self.plain(tag, e)

    def plain(self, tag, e):
        try:
            if tag == "tuple":
                return tuple(self.value(x) for x in e["items"])
            if tag == "frozenset":
                return frozenset(self.value(x) for x in e["items"])
            if tag == "float":
                return float(e["text"])
            if tag == "datetime":
                return datetime.datetime.fromisoformat(e["iso"])
            if tag == "date":
                return datetime.date.fromisoformat(e["iso"])
            if tag == "time":
                return datetime.time.fromisoformat(e["iso"])
            if tag == "timedelta":
                return datetime.timedelta(days=e["days"], seconds=e["seconds"], microseconds=e["microseconds"])
            if tag == "decimal":
                return decimal.Decimal(e["text"])
            if tag == "bytes":
                return bytes.fromhex(e["hex"])
            if tag == "random":
                version, internal, gauss = e["state"]
                r = random.Random()
                r.setstate((version, tuple(internal), gauss))
                return r
        except (KeyError, TypeError, ValueError) as err:
            self.fail(f"a malformed `{tag}` value {e!r}: {err}")
        self.fail(f"unknown value tag `{tag}`")

    def object(self, e):
        qualified = e.get("class", "")
        module, _, name = qualified.rpartition(".")
        if not (module == BACKENDS or module.startswith(BACKENDS + ".")):
            self.fail(f"class `{qualified}` is not one of bfcl-eval's backend classes")
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as err:
            self.fail(f"class `{qualified}` cannot be found: {err}")
        # Restored field by field, as the file says, never through __init__: a File's
        # __init__ would stamp a new `_last_modified`.
        obj = self.register(e, cls.__new__(cls))
        for k, x in e.get("attrs", {}).items():
            setattr(obj, k, self.value(x))
        return obj


def decode(instance, public, private, path="state"):
    """Sets the attributes of `instance` (a fresh one) from what `encode` gave."""
    dec = _Decoder(path)
    name = type(instance).__name__
    if public.get("class") != name:
        dec.fail(f"holds a `{public.get('class')}`, not a `{name}`")
    for k, e in public["attrs"].items():
        setattr(instance, k, dec.value(e))
    for k, e in private.get("instance", {}).items():
        setattr(instance, k, dec.value(e))
    objects = private.get("objects", {})
    for n in sorted(objects, key=int):
        target = dec.objects.get(int(n))
        if target is None:
            dec.fail(f"private fields for object {n}, which the state does not define")
        for k, e in objects[n].items():
            setattr(target, k, dec.value(e))
    return instance


def paths(state_dir, cls):
    base = os.path.join(state_dir, cls.__name__)
    return base + ".json", base + ".private.json"


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise StateError(f"cannot read `{path}`: {e.strerror or e}")
    except ValueError as e:
        raise StateError(f"`{path}` is not JSON: {e}")


def _write(path, value):
    # A new file renamed over the old one: a call stopped mid-write (its deadline) leaves
    # the previous state, never half of one.
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f, ensure_ascii=False, indent=1)
        os.replace(tmp, path)
    except OSError as e:
        raise StateError(f"cannot write `{path}`: {e.strerror or e}")


def load(cls, state_dir):
    """The instance `state_dir` holds for backend `cls`: from its saved attributes, or new
    from the task's initial configuration."""
    public_path, private_path = paths(state_dir, cls)
    state = _read(public_path)
    if not isinstance(state, dict) or state.get("class") != cls.__name__:
        raise StateError(f"`{public_path}` is not a {cls.__name__} state: it needs a \"class\": \"{cls.__name__}\" member")
    instance = cls()
    if "scenario" in state:
        # What BFCL's execute_multi_turn_func_call does with a class's initial config.
        import copy

        instance._load_scenario(copy.deepcopy(state["scenario"]), long_context=bool(state.get("long_context", False)))
        return instance
    if "attrs" not in state:
        raise StateError(f"`{public_path}` has neither \"scenario\" nor \"attrs\"")
    return decode(instance, state, _read(private_path), public_path)


def save(instance, state_dir):
    public_path, private_path = paths(state_dir, type(instance))
    public, private = encode(instance)
    _write(private_path, private)
    _write(public_path, public)


def execution_result(result):
    """A method's return value as BFCL's `execute_multi_turn_func_call` records it."""
    if type(result) == str:  # noqa: E721 -- the helper's own test
        return result
    if type(result) == dict:  # noqa: E721
        # "Some function returns a object instance, which is not serializable"
        try:
            return json.dumps(result)
        except Exception:
            return str(result)
    return str(result)


def call(cls, state_dir, method, args):
    """Runs `method` of backend `cls` with keyword `args` on the instance kept in
    `state_dir` (or a new one, for a stateless class: `state_dir` None), saves the
    instance, and returns the result as BFCL records it. An exception from the method is
    raised after the instance is saved, since the mutations before it stay, as they do
    in BFCL's long-lived instance."""
    if state_dir is None:
        return execution_result(getattr(cls(), method)(**args))
    instance = load(cls, state_dir)
    try:
        result = getattr(instance, method)(**args)
    finally:
        save(instance, state_dir)
    return execution_result(result)
