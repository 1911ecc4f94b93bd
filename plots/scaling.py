#!/usr/bin/env python3
"""Scaling of one ddlsim run per strategy: step time and efficiency vs GPUs (e.g. parameter server vs ring).

Reads `ddlsim run --format json`. Training results give two panels, step_time_s and efficiency (with the ideal
at 1.0); collective results (no step_time_s) give collective_time_s and busbw_GBps instead. Several files may be
given; curves are then labelled <scenario.name>:<strategy>.

  python3 plots/scaling.py --sim run.json -o scaling.png
"""
import argparse

from plot_common import InputError, by_strategy, gpu_axis, import_pyplot, read_sim, run_main

TRAINING_PANELS = [("step_time_s", "step time [s]", False), ("efficiency", "parallel efficiency", True)]
COLLECTIVE_PANELS = [("collective_time_s", "collective time [s]", False), ("busbw_GBps", "bus bandwidth [GB/s]", False)]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sim", nargs="+", required=True, metavar="JSON", help="ddlsim run --format json output(s)")
    p.add_argument("--strategy", nargs="+", help="only these strategies")
    p.add_argument("--log-y", action="store_true", help="logarithmic y-axis for the time panel")
    p.add_argument("--title", help="figure title (default: the scenario name)")
    p.add_argument("-o", "--output", required=True, help="PNG file to write")
    return p.parse_args()


def load_runs(args):
    runs = []
    for path in args.sim:
        name, results = read_sim(path)
        if args.strategy:
            results = [r for r in results if r["strategy"] in args.strategy]
        runs.append((name, results))
    return runs


def pick_panels(runs):
    has = lambda key: any(r.get(key) is not None for _, results in runs for r in results)
    if has("step_time_s"):
        return TRAINING_PANELS
    if has("collective_time_s"):
        return COLLECTIVE_PANELS
    raise InputError("no step_time_s or collective_time_s in the results to plot")


def main():
    args = parse_args()
    runs = load_runs(args)
    panels = pick_panels(runs)
    plt = import_pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), constrained_layout=True)
    styles = {}
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (key, ylabel, ideal) in zip(axes, panels):
        gpus, values = [], []
        if ideal:
            ax.axhline(1.0, color="black", linewidth=1.2, label="ideal")
        for name, results in runs:
            for strategy, pts in by_strategy(results, key).items():
                label = f"{name}:{strategy}" if len(runs) > 1 else strategy
                color = styles.setdefault(label, palette[len(styles) % len(palette)])
                gpus += [g for g, _ in pts]
                values += [v for _, v in pts]
                ax.plot([g for g, _ in pts], [v for _, v in pts], marker="o", markersize=4, linewidth=2,
                        color=color, label=label)
        gpu_axis(ax, gpus, lo=min(gpus, default=4), hi=max(gpus, default=1024))
        ax.set_ylabel(ylabel)
        if key == panels[0][0] and args.log_y:
            ax.set_yscale("log")
        else:
            ax.set_ylim(0, max(values + [1.0 if ideal else 0.0]) * 1.08 or 1.0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(args.title or " / ".join(name for name, _ in runs))
    fig.savefig(args.output, dpi=150)
    print(args.output)


if __name__ == "__main__":
    run_main(main)
