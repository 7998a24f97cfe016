"""The `table` tool: CSV summaries and selections (world `table` in wit/table.wit).

Built with `componentize-py -d wit -w table componentize app`; only the standard library
is used, so the component needs nothing beyond what the WIT world names.
"""

import csv
import heapq  # noqa: F401 -- see below
import io
import os
import statistics
from collections import Counter

import wit_world
from componentize_py_types import Err
from wit_world import Column, Summary, ValueCount

# componentize-py snapshots the modules imported at build time; a module imported lazily
# at run time is missing from the component. Counter.most_common(n) imports heapq inside
# the call, hence the import above.

TOP = 3


def parse(text, delimiter):
    """Header and data rows of `text`; blank lines are skipped, as csv does."""
    try:
        rows = [r for r in csv.reader(io.StringIO(text), delimiter=delimiter or ",") if r]
    except csv.Error as e:
        raise Err(f"not a valid CSV table: {e}")
    if not rows:
        raise Err("the table is empty: the first row must hold the column names")
    return rows[0], rows[1:]


def number(value):
    try:
        n = float(value)
    except ValueError:
        return None
    # `nan` and `inf` parse as floats but are words in a table, not measurements.
    return n if n == n and abs(n) != float("inf") else None


def column(name, values, rows):
    filled = [v for v in values if v != ""]
    counts = Counter(filled)
    # Counter.most_common keeps first-appearance order for ties (insertion order).
    top = [ValueCount(v, c) for v, c in counts.most_common(TOP)]
    nums = [number(v) for v in filled]
    numeric = bool(filled) and all(n is not None for n in nums)
    stats = (
        (min(nums), max(nums), statistics.fmean(nums), float(statistics.median(nums)))
        if numeric
        else (None, None, None, None)
    )
    return Column(name, len(filled), rows - len(filled), len(counts), numeric, *stats, top)


def summarize(text, delimiter):
    header, body = parse(text, delimiter)
    columns = [
        column(name, [r[i] if i < len(r) else "" for r in body], len(body))
        for i, name in enumerate(header)
    ]
    return Summary(len(body), columns)


class WitWorld(wit_world.WitWorld):
    def summarize(self, csv, delimiter):
        return summarize(csv, delimiter)

    def summarize_file(self, path, delimiter):
        # Without a HOME grant the guest has no HOME, and expanduser leaves `~` as it is.
        resolved = os.path.expanduser(path)
        try:
            with open(resolved, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise Err(f"cannot read `{resolved}`: {e.strerror or e}")
        except UnicodeDecodeError:
            raise Err(f"`{resolved}` is not UTF-8 text")
        return summarize(text, delimiter)

    def select_rows(self, csv, columns, where_column, equals, max_rows):
        header, body = parse(csv, None)
        index = {name: i for i, name in reversed(list(enumerate(header)))}
        unknown = [c for c in columns + ([where_column] if where_column else []) if c not in index]
        if unknown:
            raise Err(f"no column named {', '.join(map(repr, unknown))}; the columns are {header}")
        if (where_column is None) != (equals is None):
            raise Err("give both `where-column` and `equals`, or neither")
        keep = [index[c] for c in columns] if columns else list(range(len(header)))
        out = io.StringIO()
        writer = csv_writer(out)
        writer.writerow([header[i] for i in keep])
        written = 0
        for row in body:
            if max_rows is not None and written >= max_rows:
                break
            cell = lambda i: row[i] if i < len(row) else ""
            if where_column is not None and cell(index[where_column]) != equals:
                continue
            writer.writerow([cell(i) for i in keep])
            written += 1
        return out.getvalue()


def csv_writer(out):
    return csv.writer(out, lineterminator="\n")
