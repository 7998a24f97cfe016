from typing import Literal

# A refused call raises Denied, a failed one ToolError; `except CallError` catches both.
# Their message is "KIND: MESSAGE"; kind_of(e) and message_of(e) split it. (The
# interpreter has no user-defined exception classes: these are builtin ones.)
Denied = PermissionError
ToolError = RuntimeError
CallError = (Denied, ToolError)


def kind_of(error: BaseException) -> str:
    """The stable kind of a CallError: `not_allowed`, `bad_arguments`, `denied`, `tool_error`, `timeout`, ..."""
    ...


def message_of(error: BaseException) -> str:
    """What happened: for a ToolError, the tool's own error value."""
    ...


def answer(value) -> None:
    """Gives the run's answer (None, bool, int, float, str, list or dict). Call it once."""
    ...


def parallel(*calls, return_exceptions: bool = False) -> list:
    """Makes independent tool calls at once and returns their values in order.

    Each call is written `lambda: tool.operation(...)` and makes exactly one tool call;
    a list of them may be passed instead (`parallel([lambda p=p: fs.read_file(path=p)
    for p in paths])`: bind loop variables as defaults). At most 256 calls. When one
    fails, its Denied or ToolError is raised once all have ended; with
    return_exceptions=True it takes that call's place in the list instead.
    """
    ...


# A call whose output is untrusted (by the policy's data-flow rules) returns an Untrusted
# handle, never the value: pass it on as an argument of a tool that accepts untrusted
# data; h.part("key", 0) is the handle of that part (h["key"][0]). Printing, comparing,
# branching on, indexing, iterating, concatenating or answering it raises
# UntrustedValueError (a builtin ValueError, message "untrusted_value: ...") or TypeError.
UntrustedValueError = ValueError


class Untrusted:
    """The opaque handle of the untrusted output of call `handle` (`c1`, `c2`, ...)."""

    handle: str

    def part(self, *path: str | int) -> "Untrusted":
        """The handle of a part of this value: `h.part("items", 0)` names `h["items"][0]`."""
        ...


class _Fs:
    """The `fs` tool. Files on the host: read, list, inspect and write files. Only directories the host has
    granted are visible, under the guest paths it chose (for example `/data`), so use
    absolute paths below a granted directory, e.g. `/data/notes.txt`. Anything outside a
    grant, and everything when nothing was granted, fails with `permission-denied`; writes
    also need a grant that allows writing.
    """

    def read_file(self, *, path: str, max_bytes: int | None = None) -> str:
        """Reads a whole text file.

        Fails with `too-large` rather than returning part of a file. Keep `max-bytes`
        modest for big files: the host also caps the size of a call's result.

        Args:
            max_bytes: int (0..=18446744073709551615) | None

        Raises:
            Denied: the host refused the call.
            ToolError: the tool failed (its error: {"not-found": str} | {"permission-denied": str} | {"not-utf8": str} | {"too-large": str} | {"other": str}).
        """
        ...

    def list_dir(self, *, path: str) -> list[dict]:
        """Lists a directory's entries, sorted by name. The list does not include `.` or `..`
        and does not descend into subdirectories.

        Returns:
            list[{"name": str, "kind": Literal["file", "directory", "symlink", "other"], "size": int (0..=18446744073709551615)}]

        Raises:
            Denied: the host refused the call.
            ToolError: the tool failed (its error: {"not-found": str} | {"permission-denied": str} | {"not-utf8": str} | {"too-large": str} | {"other": str}).
        """
        ...

    def stat_path(self, *, path: str) -> dict:
        """Tells what a path is: its kind, size, modification time and whether it is read-only.

        Returns:
            {"kind": Literal["file", "directory", "symlink", "other"], "size": int (0..=18446744073709551615), "modified": int (0..=18446744073709551615) | None, "readonly": bool | None}

        Raises:
            Denied: the host refused the call.
            ToolError: the tool failed (its error: {"not-found": str} | {"permission-denied": str} | {"not-utf8": str} | {"too-large": str} | {"other": str}).
        """
        ...

    def write_file(self, *, path: str, content: str, mode: Literal["create", "overwrite", "append"]) -> int:
        """Writes text to a file. The parent directory must exist, and the path must be in a
        directory the host granted for writing.

        Returns:
            int (0..=18446744073709551615)

        Raises:
            Denied: the host refused the call.
            ToolError: the tool failed (its error: {"not-found": str} | {"permission-denied": str} | {"not-utf8": str} | {"too-large": str} | {"other": str}).
        """
        ...


fs = _Fs()
