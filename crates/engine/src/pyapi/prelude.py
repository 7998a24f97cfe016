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


def _toolhost(tool, operation, args):
    value = _toolhost_call(tool, operation, _wire(args, None))
    if isinstance(value, dict) and len(value) == 1 and "$handle" in value:
        return Untrusted(value["$handle"])
    return value


_answer = answer

# Set after this prelude when the policy says `[flows] untrusted_may_answer = true`.
_UNTRUSTED_MAY_ANSWER = False


def answer(value):
    if _UNTRUSTED_MAY_ANSWER:
        return _answer(_wire(value, None))
    return _answer(_wire(value, "an untrusted value may not be the run's answer (the policy's `[flows] untrusted_may_answer` is off)"))
