#!/bin/sh
# scripts/slurm/merge_sweep_csv.py: the per-rank outputs of `ddlsim sweep --split` (ranks simulated with the
# variables srun sets) merge into the bytes one `ddlsim sweep` process prints, for 1, 3 and 6 ranks (6 > 5
# counts: one rank prints nothing).
# usage: test_split_merge.sh DDLSIM SOURCE_DIR
set -eu
ddlsim=$1
src=$2
for v in OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE SLURM_PROCID SLURM_NTASKS; do unset "$v"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scenario=$src/scenarios/star-ps-vs-ring.yaml
nodes=2,4,8,16,32
merge=$src/scripts/slurm/merge_sweep_csv.py

"$ddlsim" sweep "$scenario" --nodes "$nodes" --format csv >"$tmp/single.csv"
[ "$(wc -l <"$tmp/single.csv")" -eq 36 ] || { echo "FAIL: single sweep: $(wc -l <"$tmp/single.csv") lines, expected 36"; exit 1; }
for size in 1 3 6; do
  mkdir "$tmp/$size"
  rank=0
  while [ "$rank" -lt "$size" ]; do
    SLURM_PROCID=$rank SLURM_NTASKS=$size "$ddlsim" sweep "$scenario" --nodes "$nodes" --split --format csv \
      >"$tmp/$size/rank-$rank.csv"
    rank=$((rank + 1))
  done
  python3 "$merge" --nodes "$nodes" "$tmp/$size"/rank-*.csv >"$tmp/merged-$size.csv"
  cmp "$tmp/merged-$size.csv" "$tmp/single.csv" || { echo "FAIL: $size ranks:"; diff "$tmp/merged-$size.csv" "$tmp/single.csv"; exit 1; }
  # Without --nodes the counts sort by value: the same here, as the list increases.
  python3 "$merge" "$tmp/$size"/rank-*.csv | cmp - "$tmp/single.csv" || { echo "FAIL: $size ranks, no --nodes"; exit 1; }
done
[ ! -s "$tmp/6/rank-5.csv" ] || { echo "FAIL: rank 5 of 6 should have had no count"; exit 1; }
echo "split sweeps merge to the single-process CSV"
