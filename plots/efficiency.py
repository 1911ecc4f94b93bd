#!/usr/bin/env python3
"""Parallel efficiency vs GPUs, measured points next to simulated curves (the shape of Aach et al. 2023, Figs. 4-7).

Measured: rows of a scenarios/measured/*.csv file, one colour per --series; `efficiency` as filled circles,
`efficiency_min` (text says "above x") as ▲ and `efficiency_max` ("below x") as ▼.
Simulated: ddlsim `run --format json` files, one line per strategy, labelled <scenario.name>:<strategy>.
--sim-series FILE=SERIES draws FILE's curves in SERIES' colour.

  python3 plots/efficiency.py --measured scenarios/measured/aach2023_juwels.csv \
      --series resnet50-ddp-dali-cpu --sim run.json --sim-series run.json=resnet50-ddp-dali-cpu -o eff.png
"""
import argparse
import sys

from plot_common import (InputError, by_strategy, gpu_axis, import_pyplot, measured_series, read_measured,
                         read_sim, run_main)

MARKERS = {"efficiency": ("o", True), "efficiency_min": ("^", False), "efficiency_max": ("v", False)}
LINESTYLES = ["-", "--", ":", "-."]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--measured", action="append", default=[], metavar="CSV",
                   help="measured CSV (series,model,framework,loader,gpus,quantity,value,citation); repeatable")
    p.add_argument("--series", nargs="+", default=[], help="measured series to draw")
    p.add_argument("--sim", nargs="+", default=[], metavar="JSON", help="ddlsim run --format json outputs")
    p.add_argument("--sim-series", action="append", default=[], metavar="JSON=SERIES",
                   help="draw the curves of JSON in the colour of measured SERIES")
    p.add_argument("--strategy", nargs="+", help="only these strategies from the simulated runs")
    p.add_argument("--title", default="Parallel efficiency")
    p.add_argument("-o", "--output", required=True, help="PNG file to write")
    args = p.parse_args()
    if args.series and not args.measured:
        p.error("--series needs --measured")
    if not args.series and not args.sim:
        p.error("nothing to plot: give --series and/or --sim")
    return args


def parse_mapping(items, sim_files, series):
    mapping = {}
    for item in items:
        path, sep, name = item.partition("=")
        if not sep or path not in sim_files or name not in series:
            raise InputError(f"--sim-series {item}: expected JSON=SERIES with JSON among --sim and SERIES among --series")
        mapping[path] = name
    return mapping


def draw_measured(ax, args, colors):
    rows = [r for path in args.measured for r in read_measured(path)]
    gpus = []
    for i, series in enumerate(args.series):
        picked = measured_series(rows, series, ", ".join(args.measured))
        # Nudge each series sideways (in log2 units) so points at the same GPU count stay visible.
        dodge = 2 ** (0.08 * (i - (len(args.series) - 1) / 2))
        labelled = False
        for quantity, (marker, filled) in MARKERS.items():
            pts = sorted((r["gpus"], r["value"]) for r in picked if r["quantity"] == quantity)
            if not pts:
                continue
            gpus += [g for g, _ in pts]
            ax.plot([g * dodge for g, _ in pts], [v for _, v in pts], linestyle="none", marker=marker, markersize=9,
                    markeredgewidth=1.8, color=colors[series], markerfacecolor=colors[series] if filled else "none",
                    label=None if labelled else f"{series} (measured)", zorder=3)
            labelled = True
        if not labelled:
            print(f"warning: series {series} has no efficiency rows", file=sys.stderr)
    return gpus


def draw_simulated(ax, args, colors, spare_colors):
    mapping = parse_mapping(args.sim_series, args.sim, args.series)
    gpus = []
    for path in args.sim:
        name, results = read_sim(path)
        curves = by_strategy(results, "efficiency")
        if args.strategy:
            curves = {s: c for s, c in curves.items() if s in args.strategy}
        if not curves:
            print(f"warning: {path}: no results with 'efficiency' to draw", file=sys.stderr)
        for i, (strategy, pts) in enumerate(curves.items()):
            if path in mapping:
                color, style = colors[mapping[path]], LINESTYLES[i % len(LINESTYLES)]
            else:
                color, style = next(spare_colors), "-"
            gpus += [g for g, _ in pts]
            ax.plot([g for g, _ in pts], [v for _, v in pts], linestyle=style, linewidth=2, marker=".",
                    color=color, label=f"{name}:{strategy}", zorder=2)
    return gpus


def marker_key():
    """Grey proxy entries explaining the measured markers."""
    from matplotlib.lines import Line2D
    return [Line2D([], [], color="0.4", linestyle="none", marker="o", markersize=7, label="measured value"),
            Line2D([], [], color="0.4", linestyle="none", marker="^", markerfacecolor="none", markersize=7,
                   label="measured lower bound (\"above\")"),
            Line2D([], [], color="0.4", linestyle="none", marker="v", markerfacecolor="none", markersize=7,
                   label="measured upper bound (\"below\")")]


def main():
    args = parse_args()
    plt = import_pyplot()
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colors = {s: palette[i % len(palette)] for i, s in enumerate(args.series)}
    spare_colors = iter(palette[len(args.series) % len(palette):] + palette * 8)

    fig, ax = plt.subplots(figsize=(8, 5.5), constrained_layout=True)
    ax.axhline(1.0, color="black", linewidth=1.2, label="ideal")
    gpus = draw_measured(ax, args, colors) + draw_simulated(ax, args, colors, spare_colors)
    gpu_axis(ax, gpus)
    ymax = max([1.1] + [float(y) * 1.05 for line in ax.get_lines() for y in line.get_ydata()])
    ax.set_ylim(0, ymax)
    ax.set_ylabel("parallel efficiency  E = (T_ref / T_G) / (G / G_ref)")
    ax.set_title(args.title)
    ax.grid(True, which="major", alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    if args.series:
        handles += marker_key()
    ax.legend(handles=handles, loc="lower left", fontsize=8, framealpha=0.9)
    fig.savefig(args.output, dpi=150)
    print(args.output)


if __name__ == "__main__":
    run_main(main)
