# The head of the prelude the interpreter runs before a program (crates/engine/src/pyapi.rs
# appends one object per tool): the exceptions, the helpers, and the Untrusted handle.
Denied = PermissionError
ToolError = RuntimeError
CallError = (Denied, ToolError)


def kind_of(error):
    return str(error).split(": ", 1)[0]


def message_of(error):
    parts = str(error).split(": ", 1)
    return parts[1] if len(parts) > 1 else ""


UntrustedValueError = ValueError


class Untrusted:
    def __init__(self, handle):
        self.handle = handle

    def _refuse(self, what):
        raise UntrustedValueError(
            "untrusted_value: `" + self.handle + "` is the opaque handle of an untrusted call's output: it cannot be "
            + what + " in the program, only passed on as a tool's argument"
        )

    def __str__(self):
        self._refuse("turned into text")

    def __repr__(self):
        self._refuse("turned into text")

    def __format__(self, spec):
        self._refuse("formatted")

    def __bool__(self):
        self._refuse("branched on")

    def __eq__(self, other):
        self._refuse("compared")

    def __ne__(self, other):
        self._refuse("compared")

    def __lt__(self, other):
        self._refuse("compared")

    def __le__(self, other):
        self._refuse("compared")

    def __gt__(self, other):
        self._refuse("compared")

    def __ge__(self, other):
        self._refuse("compared")

    def __hash__(self):
        self._refuse("hashed")

    def __len__(self):
        self._refuse("measured")

    def __iter__(self):
        self._refuse("iterated")

    def __contains__(self, item):
        self._refuse("searched")

    def __getitem__(self, key):
        self._refuse("indexed")

    def part(self, *path):
        # A part of a handle is a handle: the path names it, the content stays on the host.
        handle = self.handle
        for key in path:
            if isinstance(key, bool) or not isinstance(key, (int, str)):
                raise TypeError("a handle's part is named by ints and strs, not " + type(key).__name__)
            if isinstance(key, int):
                if key < 0:
                    raise IndexError("a handle's part is counted from 0, not " + str(key))
                handle = handle + "[" + str(key) + "]"
            elif '"' in key or "]" in key:
                raise KeyError("a handle's part cannot be named " + key)
            else:
                handle = handle + '["' + key + '"]'
        return Untrusted(handle)

    def __add__(self, other):
        self._refuse("concatenated")

    def __radd__(self, other):
        self._refuse("concatenated")

    def __mul__(self, other):
        self._refuse("repeated")

    def __int__(self):
        self._refuse("converted to a number")

    def __float__(self):
        self._refuse("converted to a number")


def _wire(value, what):
    if isinstance(value, Untrusted):
        if what is not None:
            raise Denied(
                "untrusted_answer: the answer holds `" + value.handle + "`, the opaque handle of an untrusted call's output: "
                + what
            )
        return {"$handle": value.handle}
    if isinstance(value, dict):
        return {k: _wire(v, what) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wire(v, what) for v in value]
    return value


def _shown(value):
    if isinstance(value, dict) and len(value) == 1 and "$handle" in value:
        return Untrusted(value["$handle"])
    return value


# While parallel() collects its calls: the list they are collected in (else None).
_COLLECTING = [None]


class ParallelCall:
    # What a tool call returns while parallel() collects its calls: the call, not made yet.
    def __init__(self, tool, operation, args):
        self.tool = tool
        self.operation = operation
        self.args = args

    def _refuse(self):
        raise TypeError(
            "inside parallel(), `lambda: " + self.tool + "." + self.operation + "(...)` makes the call and returns it "
            + "unchanged; use the value from the list parallel() returns"
        )

    def __str__(self):
        self._refuse()

    def __iter__(self):
        self._refuse()


def _toolhost(tool, operation, args):
    # A handle among the arguments crosses as {"$handle": ...}: the interpreter wires it on
    # the way out (tools/python), which costs a call far less than walking them here.
    collecting = _COLLECTING[0]
    if collecting is not None:
        pending = ParallelCall(tool, operation, args)
        collecting.append(pending)
        return pending
    return _shown(_toolhost_call(tool, operation, args))


_MAX_PARALLEL = 256


def parallel(*calls, return_exceptions=False):
    if len(calls) == 1 and isinstance(calls[0], (list, tuple)):
        calls = calls[0]
    if _COLLECTING[0] is not None:
        raise RuntimeError("parallel() cannot be nested: a call inside parallel() is one tool call")
    if len(calls) > _MAX_PARALLEL:
        raise ValueError("parallel() takes at most 256 calls, not " + str(len(calls)) + ": split them")
    requests = []
    for i in range(len(calls)):
        made = []
        _COLLECTING[0] = made
        try:
            returned = calls[i]()
        finally:
            _COLLECTING[0] = None
        if len(made) != 1 or returned is not made[0]:
            raise TypeError(
                "parallel() takes calls as `lambda: tool.operation(...)`: call " + str(i + 1)
                + " made " + str(len(made)) + " tool calls and must make exactly one and return it unchanged"
            )
        requests.append([made[0].tool, made[0].operation, made[0].args])
    results = []
    first = None
    for r in _toolhost_call_all(requests):
        if "ok" in r:
            results.append(_shown(r["ok"]))
            continue
        denied, kind, message = r["error"]
        error = Denied(kind + ": " + message) if denied else ToolError(kind + ": " + message)
        if first is None:
            first = error
        results.append(error)
    if first is not None and not return_exceptions:
        raise first
    return results


_answer = answer

# Set after this prelude when the policy says `[flows] untrusted_may_answer = true`.
_UNTRUSTED_MAY_ANSWER = False


def answer(value):
    if _UNTRUSTED_MAY_ANSWER:
        return _answer(_wire(value, None))
    return _answer(_wire(value, "an untrusted value may not be the run's answer (the policy's `[flows] untrusted_may_answer` is off)"))
