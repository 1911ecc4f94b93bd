#!/bin/sh
# `cmake --install` to a temporary prefix P, then the installed ddlsim from another directory: a shipped
# scenario, a scenario naming a topology and a model by name (found under P/share/ddlsim), DDLSIM_DATA, and the
# build tree's ddlsim from elsewhere (build/share/ddlsim).
# usage: test_install.sh CMAKE BUILD_DIR
set -eu
cmake=$1
build=$(cd "$2" && pwd)
unset DDLSIM_DATA
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

P=$tmp/prefix
"$cmake" --install "$build" --prefix "$P" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
for f in bin/ddlsim share/ddlsim/README.md share/ddlsim/topologies/juwels-booster.yaml \
  share/ddlsim/models/resnet50.yaml share/ddlsim/scenarios/star-ps-vs-ring.yaml \
  share/ddlsim/scenarios/measured/aach2023_juwels.csv; do
  [ -f "$P/$f" ] || fail "not installed: $f"
done
[ -x "$P/bin/ddlsim" ] || fail "bin/ddlsim is not executable"
if [ -e "$build/ddlsim-kernels" ]; then [ -x "$P/bin/ddlsim-kernels" ] || fail "bin/ddlsim-kernels not installed"; fi

mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"

# 1. A shipped scenario by its installed path.
"$P/bin/ddlsim" run "$P/share/ddlsim/scenarios/star-ps-vs-ring.yaml" --format csv >star.csv 2>star.err ||
  { cat star.err; fail "run star-ps-vs-ring.yaml"; }
head -n 1 star.csv | grep -q '^strategy,gpus,nodes,' || fail "star: no CSV header: $(head -n 1 star.csv)"
[ "$(wc -l <star.csv)" -eq 8 ] || fail "star: expected a header and 7 rows, got $(wc -l <star.csv) lines"
grep -q '^ps-4,16,16,' star.csv || fail "star: no ps-4 row at 16 nodes"

# 2. A scenario outside the data folders naming topology juwels-booster and model resnet50: neither is next to
# it nor in the working directory, so both come from P/share/ddlsim.
cp "$P/share/ddlsim/scenarios/juwels-ps-vs-allreduce.yaml" by-name.yaml
grep -q 'topology: juwels-booster' by-name.yaml || fail "by-name.yaml does not name juwels-booster"
"$P/bin/ddlsim" run by-name.yaml --set cluster.nodes=1 --format csv >by-name.csv 2>by-name.err ||
  { cat by-name.err; fail "run a scenario naming a topology by name"; }
grep -q '^ddp,4,1,' by-name.csv || fail "by-name: no ddp row at 1 node: $(cat by-name.csv)"

# 3. DDLSIM_DATA: a topology and a model only there are found; without it, the error lists what was tried.
mkdir -p "$tmp/data/topologies" "$tmp/data/models"
cp "$P/share/ddlsim/topologies/juwels-booster.yaml" "$tmp/data/topologies/my-cluster.yaml"
cp "$P/share/ddlsim/models/resnet50.yaml" "$tmp/data/models/my-model.yaml"
sed -e 's/topology: juwels-booster/topology: my-cluster/' -e 's/model: resnet50/model: my-model/' by-name.yaml \
  >mine.yaml
status=0
"$P/bin/ddlsim" run mine.yaml --set cluster.nodes=1 --format csv >/dev/null 2>mine.err || status=$?
[ "$status" -eq 2 ] || fail "without DDLSIM_DATA: exit $status, expected 2"
grep -q 'no topology "my-cluster"' mine.err || fail "without DDLSIM_DATA: $(cat mine.err)"
grep -q "$P/share/ddlsim/topologies/my-cluster.yaml" mine.err || fail "error does not list the install: $(cat mine.err)"
DDLSIM_DATA=$tmp/data "$P/bin/ddlsim" run mine.yaml --set cluster.nodes=1 --format csv >mine.csv 2>mine.err ||
  { cat mine.err; fail "DDLSIM_DATA=$tmp/data not honoured"; }
cmp -s mine.csv by-name.csv || fail "DDLSIM_DATA run differs from the shipped one: $(cat mine.csv)"

# 4. The build tree's binary finds the same data from here (build/share/ddlsim links to the source folders).
"$build/ddlsim" run by-name.yaml --set cluster.nodes=1 --format csv >build.csv 2>build.err ||
  { cat build.err; fail "build/ddlsim from another directory"; }
cmp -s build.csv by-name.csv || fail "build/ddlsim output differs from the installed one"
echo "install OK: $P"
