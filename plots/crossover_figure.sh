#!/usr/bin/env bash
# The crossover figure (plots/crossover.png): dedicated parameter servers needed to match DDP's ring, against GPU
# count, for ResNet-50 and VGG-16 on the nodes of scenarios/horovod-guide-128gpu.yaml (4 P100 per node), once
# on its 25 GbE TCP fat-tree (PS over the built-in gRPC host transport) and once with the same fabric at HDR
# InfiniBand's 200 Gb/s (PS over RDMA: no host CPU; NCCL-over-HDR estimates of topologies/dgx-a100-hdr-fattree).
# Single-GPU rates: TensorFlow's published P100 benchmarks (tf_cnn_benchmarks, synthetic data, 2017): ResNet-50
# 219 and VGG-16 144 images/s. About 1 min on 2 cores.
#   plots/crossover_figure.sh [BUILD_DIR] [OUT.png]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-plots/crossover.png}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scenario=scenarios/horovod-guide-128gpu.yaml
ib=(--set 'cluster.network={kind: fat-tree, levels: 2, hosts_per_leaf: 32, oversubscription: "2:1",
          link: {bandwidth: 200Gb/s, latency: 130ns}}'
    --set 'cluster.comm={alpha_intra: 5us, alpha_inter: 5us, goodput_inter: 0.9, reduce_bandwidth_gpu: 280GB/s,
          reduce_bandwidth_cpu: 30GB/s}')
runs=()
for m in resnet50:219:ResNet-50 vgg16:144:VGG-16; do
  IFS=: read -r model rate label <<<"$m"
  common=(--nodes 1,2,4,8,16,32 --set "workload.model=$model" --set "workload.compute.samples_per_s=$rate"
          --format json)
  "$build/ddlsim" crossover "$scenario" "${common[@]}" \
    --set 'strategies=[ddp, {name: ps, servers: 1, placement: dedicated, transport: grpc}]' >"$tmp/$model-tcp.json"
  "$build/ddlsim" crossover "$scenario" "${common[@]}" "${ib[@]}" \
    --set 'strategies=[ddp, {name: ps, servers: 1, placement: dedicated, transport: rdma}]' >"$tmp/$model-ib.json"
  runs+=("$label, 25 GbE TCP (gRPC)=$tmp/$model-tcp.json" "$label, HDR InfiniBand (RDMA)=$tmp/$model-ib.json")
done
py=python3
command -v /usr/bin/python3 >/dev/null && py=/usr/bin/python3
"$py" plots/crossover.py --run "${runs[@]}" \
  --title "Dedicated parameter servers needed to match DDP (ring), 4 P100 per node" -o "$out"
echo "wrote $out"
