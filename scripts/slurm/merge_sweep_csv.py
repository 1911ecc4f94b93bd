#!/usr/bin/env python3
"""Merges the CSV files of a split ddlsim sweep (one per Slurm task or MPI rank) into one CSV.

    merge_sweep_csv.py [--nodes 1,2,4,8] FILE... > sweep.csv

Every file is what `ddlsim run|sweep ... --format csv` printed: a header and rows (a rank with no node count
left printed nothing: empty files are fine). The output has the header once and the rows in the order one
`ddlsim sweep` process prints them: by strategy in the scenario's order (the order every file lists them in),
then by node count in the order of --nodes (without it: increasing). Lines are copied byte for byte, so the
result does not depend on how many ranks ran or in which order the files are given. Standard library only.
"""
import argparse
import csv
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", help="the sweep's --nodes list, to order counts as it does (default: increasing)")
    p.add_argument("files", nargs="+", help="per-rank or per-task CSV files")
    a = p.parse_args()
    node_order = None
    if a.nodes:
        node_order = {}
        for i, n in enumerate(a.nodes.split(",")):
            node_order.setdefault(n.strip(), i)

    header = None
    strategy_rank = {}  # strategy -> (position in a file, first file): the scenario's order
    rows = []  # (strategy, nodes, line)
    for fi, path in enumerate(sorted(a.files)):
        with open(path, newline="") as f:
            lines = f.read().splitlines(keepends=True)
        lines = [l for l in lines if l.strip()]
        if not lines:
            continue
        if header is None:
            header = lines[0]
        elif lines[0] != header:
            sys.exit(f"{path}: its header differs from the other files' ({lines[0].strip()!r})")
        cols = next(csv.reader([header]))
        try:
            si, ni = cols.index("strategy"), cols.index("nodes")
        except ValueError:
            sys.exit(f"{path}: no strategy and nodes columns: not ddlsim run/sweep CSV output")
        seen = []
        for line in lines[1:]:
            fields = next(csv.reader([line]))
            if len(fields) != len(cols):
                sys.exit(f"{path}: a row with {len(fields)} fields under a header of {len(cols)}: {line.strip()}")
            s, n = fields[si], fields[ni]
            if s not in seen:
                seen.append(s)
            rows.append((s, n, line))
        for pos, s in enumerate(seen):
            strategy_rank.setdefault(s, (pos, fi))
    if header is None:
        return  # nothing ran

    def key(row):
        s, n, _ = row
        if node_order is not None:
            if n not in node_order:
                sys.exit(f"node count {n} is not in --nodes {a.nodes}")
            return (strategy_rank[s], node_order[n])
        return (strategy_rank[s], int(n))

    out = sys.stdout
    out.write(header)
    for row in sorted(rows, key=key):
        out.write(row[2])


if __name__ == "__main__":
    main()
