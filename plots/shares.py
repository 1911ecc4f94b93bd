#!/usr/bin/env python3
"""Time shares per GPU count: measured (Aach et al. 2023, Table 2) next to simulated, as stacked bars.

One group of bars per GPU count; in each group one bar per measured --series (share_allreduce, share_data,
share_cudnn) and one per simulated strategy (`kernel_shares` allreduce, data, compute). What is left to 1.0 is
drawn as "other". Colours are the components, hatching tells the bars apart. Without `kernel_shares` a run's
wall-time `shares` are used (communication, io, compute) and the legend says so.

  python3 plots/shares.py --measured scenarios/measured/aach2023_juwels.csv --series resnet50-ddp-dali \
      --sim run.json -o shares.png
"""
import argparse
import sys

from plot_common import InputError, import_pyplot, measured_series, read_measured, read_sim, run_main

COMPONENTS = [("allreduce", "AllReduce (communication)", "tab:blue"),
              ("data", "data loading (I/O)", "tab:orange"),
              ("compute", "compute (cuDNN)", "tab:green")]
OTHER_COLOR = "0.88"
MEASURED_QUANTITY = {"allreduce": "share_allreduce", "data": "share_data", "compute": "share_cudnn"}
WALL_TIME_KEY = {"allreduce": "communication", "data": "io", "compute": "compute"}
HATCHES = ["", "..", "//", "xx", "\\\\", "oo", "--", "++"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--measured", metavar="CSV", help="measured CSV with share_* rows")
    p.add_argument("--series", nargs="+", default=[], help="measured series with Table 2 shares, e.g. resnet50-ddp-dali")
    p.add_argument("--sim", nargs="+", default=[], metavar="JSON", help="ddlsim run --format json outputs")
    p.add_argument("--strategy", nargs="+", help="only these strategies from the simulated runs")
    p.add_argument("--title", default="Share of time by activity")
    p.add_argument("-o", "--output", required=True, help="PNG file to write")
    args = p.parse_args()
    if args.series and not args.measured:
        p.error("--series needs --measured")
    if not args.series and not args.sim:
        p.error("nothing to plot: give --series and/or --sim")
    return args


def measured_bars(args):
    """[(label, {gpus: {component: share}})] for each measured series."""
    if not args.series:
        return []
    rows = read_measured(args.measured)
    bars = []
    for series in args.series:
        by_gpus = {}
        for r in measured_series(rows, series, args.measured):
            for comp, quantity in MEASURED_QUANTITY.items():
                if r["quantity"] == quantity:
                    by_gpus.setdefault(r["gpus"], {})[comp] = r["value"]
        if not by_gpus:
            with_shares = sorted({r["series"] for r in rows if r["quantity"].startswith("share_")})
            raise InputError(f"{args.measured}: series '{series}' has no share_* rows "
                             f"(series with shares: {', '.join(with_shares)})")
        bars.append((f"{series} (measured)", by_gpus))
    return bars


def simulated_bars(args):
    """[(label, {gpus: {component: share}})] for each strategy of each run."""
    bars = []
    for path in args.sim:
        name, results = read_sim(path)
        per_strategy = {}
        for r in results:
            if args.strategy and r["strategy"] not in args.strategy:
                continue
            if isinstance(r.get("kernel_shares"), dict):
                shares, suffix = {c: r["kernel_shares"].get(c, 0.0) for c, _, _ in COMPONENTS}, ""
            elif isinstance(r.get("shares"), dict):
                shares = {c: r["shares"].get(WALL_TIME_KEY[c], 0.0) for c, _, _ in COMPONENTS}
                suffix = " (wall-time shares)"
                print(f"warning: {path}: {r['strategy']} at {r['gpus']} GPUs has no kernel_shares; "
                      f"using wall-time shares", file=sys.stderr)
            else:
                continue
            label = f"{name}:{r['strategy']}{suffix}"
            per_strategy.setdefault(label, {})[int(r["gpus"])] = shares
        if not per_strategy:
            print(f"warning: {path}: no results with shares to draw", file=sys.stderr)
        bars += list(per_strategy.items())
    return bars


def main():
    args = parse_args()
    bars = measured_bars(args) + simulated_bars(args)
    if not bars:
        raise InputError("no shares to draw")
    plt = import_pyplot()
    from matplotlib.patches import Patch

    gpu_counts = sorted({g for _, by_gpus in bars for g in by_gpus})
    width = 0.8 / len(bars)
    fig, ax = plt.subplots(figsize=(min(14, max(8, 0.35 * len(gpu_counts) * len(bars) + 3)), 5.5), constrained_layout=True)
    for b, (label, by_gpus) in enumerate(bars):
        hatch = HATCHES[b % len(HATCHES)]
        xs = [i - 0.4 + width * (b + 0.5) for i, g in enumerate(gpu_counts) if g in by_gpus]
        bottoms = [0.0] * len(xs)
        gpus_here = [g for g in gpu_counts if g in by_gpus]
        for comp, _, color in COMPONENTS:
            heights = [by_gpus[g].get(comp, 0.0) for g in gpus_here]
            ax.bar(xs, heights, width, bottom=bottoms, color=color, hatch=hatch, edgecolor="white", linewidth=0.5)
            bottoms = [b0 + h for b0, h in zip(bottoms, heights)]
        rest = [max(0.0, 1.0 - b0) for b0 in bottoms]
        ax.bar(xs, rest, width, bottom=bottoms, color=OTHER_COLOR, hatch=hatch, edgecolor="white", linewidth=0.5)

    ax.set_xticks(range(len(gpu_counts)))
    ax.set_xticklabels([str(g) for g in gpu_counts])
    ax.set_xlabel("GPUs")
    ax.set_ylabel("share of time (measured: share of CUDA kernel time)")
    ax.set_ylim(0, 1.0)
    ax.set_title(args.title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    handles = [Patch(facecolor=color, label=text) for _, text, color in COMPONENTS]
    handles.append(Patch(facecolor=OTHER_COLOR, label="other / unaccounted"))
    handles += [Patch(facecolor="white", edgecolor="0.3", hatch=HATCHES[b % len(HATCHES)], label=label)
                for b, (label, _) in enumerate(bars)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)
    fig.savefig(args.output, dpi=150)
    print(args.output)


if __name__ == "__main__":
    run_main(main)
