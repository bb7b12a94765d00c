#!/usr/bin/env bash
# Runs vram4j's GPU checks on a machine with an NVIDIA driver, CUDA and PyTorch but no JDK, from the repository
# root, with the bundle built by gpu/bundle.sh in gpu/bundle/ (the device tool: carry gpu/bundle):
#   1. ./vram4j devices on the bundle's Java runtime;
#   2. the GPU test group (JUnit tag gpu, VRAM4J_REQUIRE_GPU=1 so that a missing GPU fails instead of skipping);
#   3. the differential test against PyTorch: SEEDS sequences of OPS operations under three settings, every
#      checkpoint's memory_stats and segment layout compared (gpu/differential.py);
#   4. the GPU benchmarks, vram4j (io.vram4j.bench.gpu.GpuBench) and PyTorch (gpu/bench_pytorch.py) in one run;
#   5. the main job side by side: ./vram4j train --device cuda (MLP, 3 epochs; pinned batches copied on a side
#      stream, the default) and again with --no-pin-memory (pageable batches copied on the compute stream), and
#      the same MLP in PyTorch (gpu/train_mlp_pytorch.py), on the Fashion-MNIST subset bundled in the jar
#      (10,000 / 2,000 images).
# Logs and results go to $OUT (default /tmp/vram4j-gpu-out); a short table is printed last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-/tmp/vram4j-gpu-out}"
SEEDS="${SEEDS:-20}"
OPS="${OPS:-2000}"
mkdir -p "$OUT"
B=/tmp/vram4j-gpu
rm -rf "$B" && mkdir -p "$B" && tar -C "$B" -xJf gpu/bundle/vram4j-gpu.tar.xz || { echo "no bundle: run gpu/bundle.sh first" >&2; exit 2; }
JAVA=("$B/runtime/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC)
CP="$B/lib/vram4j.jar:$B/lib/vram4j-bench-classes.jar"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
"${JAVA[@]}" -jar "$B/lib/vram4j.jar" devices > "$OUT/devices.txt" 2>&1
devices_rc=$?

VRAM4J_REQUIRE_GPU=1 "${JAVA[@]}" -jar "$B/lib/junit-platform-console-standalone.jar" execute \
  --class-path "$B/test-classes:$CP" --scan-classpath "$B/test-classes" --include-tag gpu \
  --details=tree --disable-banner > "$OUT/gpu-tests.txt" 2>&1
tests_rc=$?
tests_line="$(grep -E 'tests (successful|failed|skipped)' "$OUT/gpu-tests.txt" | tr -s ' ' | tr '\n' ' ')"

confs=("" "expandable_segments:True" "max_split_size_mb:200,roundup_power2_divisions:4")
rows=()
diff_rc=0
for i in "${!confs[@]}"; do
  conf="${confs[$i]}"
  torch_version="$(python3 gpu/differential.py pytorch --conf "$conf" --seeds "$SEEDS" --ops "$OPS" --every 100 \
      --out "$OUT/pytorch-$i.jsonl" 2>"$OUT/pytorch-$i.err")" || torch_version="failed (see pytorch-$i.err)"
  "${JAVA[@]}" -cp "$CP" io.vram4j.bench.gpu.DifferentialRun cuda "$conf" "$SEEDS" "$OPS" 100 \
      "$OUT/vram4j-$i.jsonl" > "$OUT/vram4j-$i.err" 2>&1 || echo "vram4j side failed" >> "$OUT/vram4j-$i.err"
  result="$(python3 gpu/differential.py compare "$OUT/pytorch-$i.jsonl" "$OUT/vram4j-$i.jsonl" 2>&1)"
  rc=$?
  (( rc != 0 )) && diff_rc=1
  echo "$result" > "$OUT/compare-$i.txt"
  rows+=("$(printf '%-52s %s' "'${conf:-default}'" "$(echo "$result" | head -1)")")
done
"${JAVA[@]}" -cp "$CP" io.vram4j.bench.gpu.GpuBench cuda > "$OUT/bench-vram4j.txt" 2>&1
python3 gpu/bench_pytorch.py > "$OUT/bench-pytorch.txt" 2>&1

FMNIST="$B/fashion-mnist"
mkdir -p "$FMNIST"
python3 - "$B/lib/vram4j.jar" "$FMNIST" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as jar:
    for n in jar.namelist():
        if n.startswith("io/vram4j/data/fashion-mnist/") and n.endswith(".gz"):
            open(sys.argv[2] + "/" + n.rsplit("/", 1)[1], "wb").write(jar.read(n))
PY
"${JAVA[@]}" -jar "$B/lib/vram4j.jar" train --device cuda --epochs 3 --data "$FMNIST" --out "$OUT/train-run" --json \
  > "$OUT/train-vram4j.json" 2> "$OUT/train-vram4j.txt"
train_rc=$?
"${JAVA[@]}" -jar "$B/lib/vram4j.jar" train --device cuda --epochs 3 --no-pin-memory --data "$FMNIST" \
  --out "$OUT/train-run-pageable" --json > "$OUT/train-vram4j-pageable.json" 2> "$OUT/train-vram4j-pageable.txt"
train_pageable_rc=$?
python3 gpu/train_mlp_pytorch.py --data "$FMNIST" --epochs 3 > "$OUT/train-pytorch.json" 2> "$OUT/train-pytorch.txt"
train_torch_rc=$?

tar -C "$OUT" -czf "$OUT/differential.tar.gz" $(cd "$OUT" && ls pytorch-* vram4j-* compare-* 2>/dev/null) 2>/dev/null \
  && rm -f "$OUT"/pytorch-*.jsonl "$OUT"/vram4j-*.jsonl

echo
echo "== vram4j on $(head -2 "$OUT/gpu.txt" | tail -1)   torch $torch_version"
echo "devices:        rc $devices_rc  $(grep '^cuda' "$OUT/devices.txt" | head -1)"
echo "GPU tests:      rc $tests_rc  $tests_line"
echo "differential:   $SEEDS seeds x $OPS ops per setting"
for r in "${rows[@]}"; do echo "  $r"; done
echo "train, MLP, 3 epochs on the bundled subset:"
echo "  vram4j  rc $train_rc  $(if (( train_rc == 0 )); then cat "$OUT/train-vram4j.json"; else grep -v -i incubator "$OUT/train-vram4j.txt" | tail -1; fi)"
echo "  vram4j --no-pin-memory  rc $train_pageable_rc  $(if (( train_pageable_rc == 0 )); then cat "$OUT/train-vram4j-pageable.json"; else grep -v -i incubator "$OUT/train-vram4j-pageable.txt" | tail -1; fi)"
echo "  pytorch rc $train_torch_rc  $(if (( train_torch_rc == 0 )); then cat "$OUT/train-pytorch.json"; else tail -1 "$OUT/train-pytorch.txt"; fi)"
echo
grep -v -i incubator "$OUT/bench-vram4j.txt"
cat "$OUT/bench-pytorch.txt"
exit $(( devices_rc != 0 || tests_rc != 0 || diff_rc != 0 ))
