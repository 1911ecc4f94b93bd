#!/usr/bin/env python3
"""Parameter servers needed to match an allreduce, against GPU count, from `ddlsim crossover --format json`.

Each run is given as LABEL=JSON (e.g. "ResNet-50, 25 GbE TCP=r50-tcp.json"). Left panel: servers_to_match
(the fewest PS servers whose step time is at most the allreduce's); counts where no tried server count matched
are drawn as open markers at the top with an upward arrow. Right panel: the best PS time over the allreduce's.

  python3 plots/crossover.py --run "ResNet-50, 25 GbE=a.json" "ResNet-50, HDR IB=b.json" -o crossover.png
"""
import argparse
import json

from plot_common import InputError, gpu_axis, import_pyplot, run_main


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", nargs="+", required=True, metavar="LABEL=JSON",
                   help="ddlsim crossover --format json output(s), each with a legend label")
    p.add_argument("--title", help="figure title")
    p.add_argument("-o", "--output", required=True, help="PNG file to write")
    return p.parse_args()


def read_crossover(path):
    """[(gpus, servers_to_match, best_ps_over_other)] sorted by gpus, and the other strategy's label."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as err:
        raise InputError(f"{path}: {err.strerror}")
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:{err.lineno}:{err.colno}: invalid JSON: {err.msg}")
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list) or not results:
        raise InputError(f"{path}: expected an object with a non-empty 'results' list (ddlsim crossover)")
    points, other = [], None
    for i, r in enumerate(results):
        ratio = [k for k in r if k.startswith("best_ps_over_")] if isinstance(r, dict) else []
        if not ratio or "gpus" not in r or "servers_to_match" not in r:
            raise InputError(f"{path}: results[{i}] needs gpus, servers_to_match and best_ps_over_<strategy>")
        other = ratio[0][len("best_ps_over_"):]
        points.append((int(r["gpus"]), int(r["servers_to_match"]), float(r[ratio[0]])))
    return sorted(points), other


def main():
    args = parse_args()
    runs = []
    for item in args.run:
        label, sep, path = item.rpartition("=")
        if not sep or not label:
            raise InputError(f"--run {item}: expected LABEL=JSON")
        runs.append((label, *read_crossover(path)))
    plt = import_pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    gpus = sorted({g for _, pts, _ in runs for g, _, _ in pts})
    # "No match" markers sit above every plotted count (matched ones and the servers = GPUs line).
    top = max([k for _, pts, _ in runs for _, k, _ in pts] + gpus) * 2
    styles = [("o", "-", 8), ("s", "--", 6), ("^", "-.", 5), ("D", ":", 4)]
    for i, (label, pts, other) in enumerate(runs):
        marker, dash, size = styles[i % len(styles)]
        matched = [(g, k) for g, k, _ in pts if k > 0]
        line, = left.plot([g for g, _ in matched], [k for _, k in matched], marker=marker, ls=dash, ms=size,
                          label=label)
        missed = [g for g, k, _ in pts if k <= 0]
        if missed:
            left.plot(missed, [top * 1.06 ** i] * len(missed), marker=marker, ls="none", ms=size, mfc="none",
                      color=line.get_color())
        right.plot([g for g, _, _ in pts], [r for _, _, r in pts], marker=marker, ls=dash, ms=size,
                   color=line.get_color(), label=label)
    left.plot(gpus, gpus, ":", color="gray", label="servers = GPUs")
    left.axhline(top / 1.3, color="gray", lw=0.5)
    left.set_yscale("log", base=2)
    left.set_ylabel("PS servers to match " + (runs[0][2] or "the allreduce"))
    left.set_title("open markers on top: no server count tried matched", fontsize=10)
    right.axhline(1.0, color="gray", lw=0.8)
    right.set_ylabel("best PS step time / " + (runs[0][2] or "allreduce") + " step time")
    for ax in (left, right):
        gpu_axis(ax, gpus, lo=min(gpus), hi=max(gpus))
        ax.grid(True, alpha=0.3)
    left.legend(fontsize=8, loc="center left")
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)


if __name__ == "__main__":
    run_main(main)
