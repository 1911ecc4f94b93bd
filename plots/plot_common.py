"""Helpers shared by the plot scripts: reading ddlsim JSON and measured CSV, the log2 GPU axis.

Only the standard library and matplotlib (Debian: python3-matplotlib). Input errors raise InputError;
the scripts turn it into a message and exit status 2, as the ddlsim CLI does.
"""
import csv
import json
import math
import sys

MEASURED_HEADER = ["series", "model", "framework", "loader", "gpus", "quantity", "value", "citation"]


class InputError(Exception):
    pass


def import_pyplot():
    """matplotlib with the file-only backend; a clear message if it is missing."""
    try:
        import matplotlib
    except ImportError:
        sys.exit("error: matplotlib not found; install the Debian package python3-matplotlib "
                 "(or run the script with /usr/bin/python3)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def run_main(main):
    """Run main(); input errors become 'error: ...' on stderr and exit status 2."""
    try:
        main()
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)


def read_measured(path):
    """Rows of a scenarios/measured/*.csv file, with gpus as int and value as float."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != MEASURED_HEADER:
                raise InputError(f"{path}: header must be {','.join(MEASURED_HEADER)}")
            rows = []
            for line, row in enumerate(reader, start=2):
                try:
                    row["gpus"] = int(row["gpus"])
                    row["value"] = float(row["value"])
                except ValueError:
                    raise InputError(f"{path}:{line}: gpus must be an integer and value a number")
                rows.append(row)
            return rows
    except OSError as err:
        raise InputError(f"{path}: {err.strerror}")


def measured_series(rows, series, path):
    """The rows of one series; an error naming the known series if there are none."""
    picked = [r for r in rows if r["series"] == series]
    if not picked:
        known = ", ".join(sorted({r["series"] for r in rows}))
        raise InputError(f"{path}: no series '{series}' (known: {known})")
    return picked


def read_sim(path):
    """A ddlsim `run --format json` document: (scenario name, results list)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as err:
        raise InputError(f"{path}: {err.strerror}")
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:{err.lineno}:{err.colno}: invalid JSON: {err.msg}")
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise InputError(f"{path}: expected an object with a 'results' list (ddlsim run --format json)")
    name = (doc.get("scenario") or {}).get("name") or path
    for i, r in enumerate(doc["results"]):
        if not isinstance(r, dict) or "strategy" not in r or "gpus" not in r:
            raise InputError(f"{path}: results[{i}] needs 'strategy' and 'gpus'")
    return name, doc["results"]


def by_strategy(results, key):
    """{strategy: [(gpus, value), ...] sorted by gpus} for results that carry `key`, in first-seen order."""
    curves = {}
    for r in results:
        if r.get(key) is None:
            continue
        curves.setdefault(r["strategy"], []).append((int(r["gpus"]), float(r[key])))
    return {s: sorted(points) for s, points in curves.items()}


def gpu_axis(ax, gpus, lo=4, hi=1024):
    """log2 x-axis with one labelled tick per power of two, covering lo..hi and every plotted count."""
    if gpus:
        lo = min(lo, min(gpus))
        hi = max(hi, max(gpus))
    first = 2 ** math.floor(math.log2(max(lo, 1)))
    last = 2 ** math.ceil(math.log2(max(hi, 1)))
    ticks = []
    t = first
    while t <= last:
        ticks.append(t)
        t *= 2
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlim(first / 1.25, last * 1.25)
    ax.set_xlabel("GPUs")
