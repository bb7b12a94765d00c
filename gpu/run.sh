#!/usr/bin/env bash
# Runs vram4j's GPU checks on a machine with an NVIDIA driver, CUDA and PyTorch but no JDK, from the repository
# root, with what gpu/bundle.sh built in gpu/bundle/ (the device tool: carry gpu/bundle).
#
#   gpu/run.sh [issue9 | issue10 | all | STAGE...]        (default: issue9)
#
# Stages, in the order they run (each under its own time cap and the whole run's budget, BUDGET seconds, default
# 540; a stage that would start with under 20 s left is skipped and says so):
#   preflight     nvidia-smi, where libcuda and cuBLAS are, the Java runtime, ./vram4j devices
#   tests         the GPU test group (JUnit tag gpu; VRAM4J_REQUIRE_GPU=1, so a missing GPU fails, not skips)
#   differential  PyTorch's allocator and vram4j's on the same operation sequences (malloc, free, record_stream and
#                 free, empty_cache): SEEDS x OPS under default settings, expandable_segments:True and
#                 max_split_size_mb:200,roundup_power2_divisions:4; every memory_stats key and the segment layout
#                 compared every 100 operations (gpu/differential.py)
#   bench         io.vram4j.bench.gpu.GpuBench and gpu/bench_pytorch.py in one run
#   train         the main job: ./vram4j train --device cuda (MLP, 3 epochs, full Fashion-MNIST rebuilt from the
#                 bundle's part; pinned batches, then --no-pin-memory) beside gpu/train_mlp_pytorch.py (a pinned
#                 DataLoader with non-blocking copies, then the whole set held on the GPU)
#   techniques    ./vram4j bench techniques --device cuda --json (the deep MLP and the 12-block Transformer; then
#                 the 784-512-512-10 MLP) beside gpu/techniques_pytorch.py: eager, then torch.compile for at most
#                 COMPILE_SECONDS (default 60; the rows it finished are kept; TECH_MODES=eager leaves it out)
#   gpt2          the same at GPT-2-small size (12 blocks of width 768, 12 heads, context 1024), then bf16 and
#                 float32 dry runs with every kernel timed (VRAM4J_KERNEL_TIMES: gpt2-kernels.txt, -f32.txt; and
#                 bf16 with VRAM4J_CUDA_ATTENTION=cuda-cores, -cudacores.txt, against the tensor-core attention) beside
#                 torch.profiler's times of one eager bf16 step (gpt2-kernels-pytorch.txt)
#   attention     ./vram4j bench attention --device cuda at contexts 256, 512, 1024 (fused vs unfused)
#   lm            ./vram4j train --model transformer --device cuda, one short epoch, with a sample
#   fbs           ./vram4j find-batch-size --device cuda --memory-fraction FRACTION (default 0.01), then the dry run it
#                 prints (sim:TOTAL:ccX.Y, same fraction): every try, largest batch and peak must be equal
#   sanitize      the CUDA kernels' GPU test under compute-sanitizer --tool memcheck (out-of-bounds device accesses),
#                 then the 16-bit attention's test under --tool racecheck (shared-memory hazards)
# issue9 = preflight tests differential bench train; issue10 = preflight fbs techniques gpt2 train attention lm.
#
# The device tool brings back at most 8 files from $OUT, so logs are written under /tmp and packed at the end:
# $OUT/summary.txt (the table printed last), $OUT/logs.tar.gz (every stage's log and result files) and
# $OUT/runs.tar.gz (train's run folders: snapshot, timeline page, memory_stats), each kept under 16 MiB.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
OUT="${OUT:-/tmp/vram4j-gpu-out}"
LOG="${VRAM4J_GPU_LOG:-/tmp/vram4j-gpu-logs}"
B=/tmp/vram4j-gpu
BUDGET="${BUDGET:-540}"
SEEDS="${SEEDS:-20}"
OPS="${OPS:-2000}"
TECH_MODES="${TECH_MODES:-eager,compile}"
COMPILE_SECONDS="${COMPILE_SECONDS:-60}"

# ------------------------------------------------------------------------------------------------ the stages
# Each runs in its own process (under timeout), writes what it made under $LOG and its one-line result, the line
# the summary shows, to $LOG/<stage>.result.

java_cmd() {
  # stack traces before each one-line error (the summary shows the line, the logs the trace); a JVM crash's report
  # lands with the logs, not in the repository root, so that it comes back
  export VRAM4J_DEBUG=1
  JAVA=("$B/runtime/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -Xmx8g
        "-XX:ErrorFile=$LOG/hs_err_pid%p.log")
  CP="$B/lib/vram4j.jar:$B/lib/vram4j-bench-classes.jar"
  # cuBLAS: PyTorch's own environment holds the CUDA 13 wheels; CublasLocator searches $VIRTUAL_ENV's site-packages
  if [[ -z "${VIRTUAL_ENV:-}" ]]; then
    VIRTUAL_ENV="$(python3 -c 'import sys; print(sys.prefix)' 2>/dev/null)" && export VIRTUAL_ENV
  fi
  if [[ -f "$LOG/libcuda.path" && -z "${VRAM4J_LIBCUDA:-}" ]]; then
    export VRAM4J_LIBCUDA="$(cat "$LOG/libcuda.path")"
  fi
}

result() { echo "$*" > "$LOG/$STAGE.result"; }

stage_preflight() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader > "$LOG/gpu.txt" 2>&1
  # libcuda.so.1 where the dynamic loader does not know it: ask PyTorch which one it mapped
  if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
    python3 -c 'import torch; torch.zeros(1, device="cuda"); print(next(l.split()[-1] for l in open("/proc/self/maps") if "libcuda.so" in l))' \
      > "$LOG/libcuda.path" 2>> "$LOG/preflight.log" || rm -f "$LOG/libcuda.path"
  fi
  java_cmd
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' \
    > "$LOG/torch.txt" 2>&1
  "${JAVA[@]}" -version > "$LOG/java.txt" 2>&1
  "${JAVA[@]}" -jar "$B/lib/vram4j.jar" devices > "$LOG/devices.txt" 2>&1
  local rc=$?
  "${JAVA[@]}" -jar "$B/lib/vram4j.jar" devices --json > "$LOG/devices.json" 2>> "$LOG/preflight.log"
  local cuda
  cuda="$(grep -m1 '^cuda' "$LOG/devices.txt" || echo 'no cuda line in devices')"
  [[ "$cuda" == *none* || "$cuda" == no\ cuda* ]] && rc=1     # vram4j cannot open the GPU: say so first
  result "$(head -1 "$LOG/gpu.txt") | $(tail -1 "$LOG/torch.txt") | $cuda"
  return $rc
}

stage_tests() {
  java_cmd
  VRAM4J_REQUIRE_GPU=1 "${JAVA[@]}" -jar "$B/lib/junit-platform-console-standalone.jar" execute \
    --class-path "$B/test-classes:$CP" --scan-classpath "$B/test-classes" --include-tag gpu \
    --details=tree --disable-banner --disable-ansi-colors --reports-dir "$LOG/junit" > "$LOG/gpu-tests.txt" 2>&1
  local rc=$?
  result "$(grep -E 'tests (successful|failed|skipped|aborted)' "$LOG/gpu-tests.txt" | tr -s ' ' | tr '\n' ' ')"
  return $rc
}

stage_differential() {
  java_cmd
  local confs=("" "expandable_segments:True" "max_split_size_mb:200,roundup_power2_divisions:4") i conf rc=0 line=""
  for i in "${!confs[@]}"; do
    conf="${confs[$i]}"
    python3 gpu/differential.py pytorch --conf "$conf" --seeds "$SEEDS" --ops "$OPS" --every 100 \
      --out "$LOG/differential/pytorch-$i.jsonl" > "$LOG/differential/pytorch-$i.txt" 2>&1 || rc=1
    "${JAVA[@]}" -cp "$CP" io.vram4j.bench.gpu.DifferentialRun cuda "$conf" "$SEEDS" "$OPS" 100 \
      "$LOG/differential/vram4j-$i.jsonl" > "$LOG/differential/vram4j-$i.txt" 2>&1 || rc=1
    python3 gpu/differential.py compare "$LOG/differential/pytorch-$i.jsonl" "$LOG/differential/vram4j-$i.jsonl" \
      > "$LOG/differential/compare-$i.txt" 2>&1 || rc=1
    line+="[${conf:-default}] $(head -1 "$LOG/differential/compare-$i.txt")  "
  done
  result "$SEEDS seeds x $OPS ops: $line"
  return $rc
}

stage_bench() {
  java_cmd
  "${JAVA[@]}" -cp "$CP" io.vram4j.bench.gpu.GpuBench cuda > "$LOG/bench-vram4j.txt" 2>&1
  local rc=$?
  python3 gpu/bench_pytorch.py > "$LOG/bench-pytorch.txt" 2>&1 || rc=1
  result "see bench-vram4j.txt and bench-pytorch.txt (printed below)"
  return $rc
}

fashion_mnist() {
  FMNIST="$B/fashion-mnist"
  [[ -f "$FMNIST/.done" ]] && return 0
  mkdir -p "$FMNIST"
  if [[ -f gpu/bundle/fashion-mnist-rest.tar.xz ]] && python3 gpu/fashion_mnist.py join gpu/bundle/fashion-mnist-rest.tar.xz \
      "$B/lib/vram4j.jar" "$FMNIST" > "$LOG/fashion-mnist.txt" 2>&1; then
    echo "full (60,000 / 10,000)" > "$FMNIST/.done"
  else
    python3 - "$B/lib/vram4j.jar" "$FMNIST" <<'PY' >> "$LOG/fashion-mnist.txt" 2>&1
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as jar:
    for n in jar.namelist():
        if n.startswith("io/vram4j/data/fashion-mnist/") and n.endswith(".gz"):
            open(sys.argv[2] + "/" + n.rsplit("/", 1)[1], "wb").write(jar.read(n))
PY
    echo "bundled subset (10,000 / 2,000): the full set's part was missing or broken" > "$FMNIST/.done"
  fi
}

stage_train() {
  java_cmd
  fashion_mnist
  local rc=0 a b c d
  # each run under its own limit (TRAIN_SECONDS), the main comparison first, so that a slow run leaves the others
  # their turn inside the stage's cap
  local t="${TRAIN_SECONDS:-100}"
  timeout -k 5 "$t" "${JAVA[@]}" -jar "$B/lib/vram4j.jar" train --device cuda --epochs 3 --data "$FMNIST" \
    --out "$LOG/runs/mlp-pinned" --json > "$LOG/train-vram4j.json" 2> "$LOG/train-vram4j.txt" || rc=1
  timeout -k 5 "$t" python3 gpu/train_mlp_pytorch.py --data "$FMNIST" --epochs 3 --loader pinned \
    > "$LOG/train-pytorch.json" 2> "$LOG/train-pytorch.txt" || rc=1
  timeout -k 5 "$t" "${JAVA[@]}" -jar "$B/lib/vram4j.jar" train --device cuda --epochs 3 --no-pin-memory --data "$FMNIST" \
    --out "$LOG/runs/mlp-pageable" --json > "$LOG/train-vram4j-pageable.json" 2> "$LOG/train-vram4j-pageable.txt" || rc=1
  timeout -k 5 "$t" python3 gpu/train_mlp_pytorch.py --data "$FMNIST" --epochs 3 --loader device \
    > "$LOG/train-pytorch-device.json" 2> "$LOG/train-pytorch-device.txt" || rc=1
  a="$(python3 gpu/summarize.py train "$LOG/train-vram4j.json" "$LOG/train-vram4j.txt")"
  b="$(python3 gpu/summarize.py train "$LOG/train-vram4j-pageable.json" "$LOG/train-vram4j-pageable.txt")"
  c="$(python3 gpu/summarize.py train "$LOG/train-pytorch.json" "$LOG/train-pytorch.txt")"
  d="$(python3 gpu/summarize.py train "$LOG/train-pytorch-device.json" "$LOG/train-pytorch-device.txt")"
  result "data: $(cat "$FMNIST/.done") | vram4j pinned: $a | vram4j pageable: $b | pytorch pinned DataLoader: $c | pytorch data on the GPU: $d"
  return $rc
}

# bench techniques on cuda, then the same rows in PyTorch eager, then under torch.compile (whose compilations can
# take minutes: it gets COMPILE_SECONDS and keeps the rows it finished), then the side-by-side table with the
# issue's targets
techniques_pair() {
  local name=$1 rc=0 files
  shift
  "${JAVA[@]}" -jar "$B/lib/vram4j.jar" bench techniques --device cuda --json "$@" \
    > "$LOG/$name-vram4j.json" 2> "$LOG/$name-vram4j.txt" || rc=1
  python3 gpu/techniques_pytorch.py run "$LOG/$name-vram4j.json" --modes eager --out "$LOG/$name-pytorch.json" \
    ${PROFILE_OUT:+--profile-out "$PROFILE_OUT"} 2> "$LOG/$name-pytorch.txt" || rc=1
  files=("$LOG/$name-pytorch.json")
  if [[ "$TECH_MODES" == *compile* && -s "$LOG/$name-pytorch.json" ]]; then
    timeout -k 5 "$COMPILE_SECONDS" python3 gpu/techniques_pytorch.py run "$LOG/$name-vram4j.json" --modes compile \
      --out "$LOG/$name-pytorch-compile.json" 2> "$LOG/$name-pytorch-compile.txt"
    [[ -s "$LOG/$name-pytorch-compile.json" ]] && files+=("$LOG/$name-pytorch-compile.json")
  fi
  python3 gpu/techniques_pytorch.py compare "$LOG/$name-vram4j.json" "${files[@]}" > "$LOG/$name-compare.txt" 2>&1 || rc=1
  return $rc
}

# the targets a pair's comparison counted, or why there is no comparison
targets() {
  local name=$1
  if [[ -s "$LOG/$name-vram4j.json" && -s "$LOG/$name-pytorch.json" ]]; then
    echo "$(grep -c MET "$LOG/$name-compare.txt") MET, $(grep -c MISSED "$LOG/$name-compare.txt") MISSED"
  elif [[ ! -s "$LOG/$name-vram4j.json" ]]; then
    echo "vram4j $(python3 gpu/summarize.py train /dev/null "$LOG/$name-vram4j.txt")"
  else
    echo "PyTorch $(python3 gpu/summarize.py train /dev/null "$LOG/$name-pytorch.txt")"
  fi
}

stage_techniques() {
  java_cmd
  local rc=0
  techniques_pair techniques || rc=1
  techniques_pair techniques-mlp --model mlp --mlp-layers 2 --mlp-hidden 512 --mlp-batch 128 || rc=1
  result "12-block and deep MLP: $(targets techniques); 784-512-512-10: $(targets techniques-mlp)"
  return $rc
}

stage_gpt2() {
  java_cmd
  PROFILE_OUT="$LOG/gpt2-kernels-pytorch.txt" techniques_pair gpt2 --model transformer --layers 12 --hidden 768 \
    --heads 12 --block-size 1024 --batch-size 8
  local rc=$?
  # where the GPU time goes: a bf16 dry run (three training steps and an evaluation batch, computed) with every
  # launch, product and copy timed between CUDA events (VRAM4J_KERNEL_TIMES; the table is written at close)
  VRAM4J_KERNEL_TIMES="$LOG/gpt2-kernels.txt" "${JAVA[@]}" -jar "$B/lib/vram4j.jar" train --dry-run --device cuda \
    --model transformer --layers 12 --hidden 768 --heads 12 --block-size 1024 --batch-size 8 --amp bf16 \
    > "$LOG/gpt2-kernels-run.txt" 2>&1 || rc=1
  # the same bf16 run with the 16-bit attention on the CUDA-core kernels: what the tensor-core kernels save
  VRAM4J_CUDA_ATTENTION=cuda-cores VRAM4J_KERNEL_TIMES="$LOG/gpt2-kernels-cudacores.txt" "${JAVA[@]}" -jar \
    "$B/lib/vram4j.jar" train --dry-run --device cuda --model transformer --layers 12 --hidden 768 --heads 12 \
    --block-size 1024 --batch-size 8 --amp bf16 > "$LOG/gpt2-kernels-cudacores-run.txt" 2>&1 || rc=1
  # and in float32, for issue 10's "bf16 at least 25% faster than float32" (which kernels do not get faster)
  VRAM4J_KERNEL_TIMES="$LOG/gpt2-kernels-f32.txt" "${JAVA[@]}" -jar "$B/lib/vram4j.jar" train --dry-run \
    --device cuda --model transformer --layers 12 --hidden 768 --heads 12 --block-size 1024 --batch-size 8 \
    > "$LOG/gpt2-kernels-f32-run.txt" 2>&1 || rc=1
  result "$(targets gpt2)"
  return $rc
}

stage_attention() {
  java_cmd
  "${JAVA[@]}" -jar "$B/lib/vram4j.jar" bench attention --device cuda --contexts 256,512,1024 --layers 12 --hidden 768 \
    --heads 12 --batch-size 8 > "$LOG/attention.txt" 2>&1
  local rc=$?
  result "$(grep -i -m1 'target' "$LOG/attention.txt" || tail -1 "$LOG/attention.txt")"
  return $rc
}

stage_lm() {
  java_cmd
  "${JAVA[@]}" -jar "$B/lib/vram4j.jar" train --model transformer --device cuda --epochs 1 --limit 200000 --sample 200 \
    --out "$LOG/runs/lm" --json > "$LOG/lm.json" 2> "$LOG/lm.txt"
  local rc=$?
  result "$(python3 gpu/summarize.py train "$LOG/lm.json" "$LOG/lm.txt")"
  return $rc
}

# find-batch-size on cuda under a memory fraction, then the dry run it names; their results compared without times
stage_fbs() {
  java_cmd
  local fraction="${FRACTION:-0.01}" rc=0 dry
  "${JAVA[@]}" -jar "$B/lib/vram4j.jar" find-batch-size --device cuda --memory-fraction "$fraction" --json \
    > "$LOG/fbs-cuda.json" 2> "$LOG/fbs-cuda.txt" || rc=1
  read -r -a dry <<< "$(sed -n 's/^the same search as a dry run: //p' "$LOG/fbs-cuda.txt")"
  (( ${#dry[@]} > 0 )) || { result "no dry-run spec printed (see fbs-cuda.txt)"; return 1; }
  "${JAVA[@]}" -jar "$B/lib/vram4j.jar" find-batch-size "${dry[@]}" --json > "$LOG/fbs-sim.json" 2> "$LOG/fbs-sim.txt" || rc=1
  local line
  line="$(python3 - "$LOG/fbs-cuda.json" "$LOG/fbs-sim.json" <<'PY'
import json, sys
def results(path):
    rs = json.load(open(path))["results"]
    for r in rs:
        r.pop("seconds", None)
        for t in r["tries"]:
            t.pop("seconds", None)
    return rs
cuda, sim = results(sys.argv[1]), results(sys.argv[2])
rows = ", ".join("%s %d" % (r["technique"], r["largest_batch"]) for r in cuda)
print(("agree: " if cuda == sim else "DIFFER: ") + rows)
sys.exit(0 if cuda == sim else 1)
PY
)" || rc=1
  result "cuda vs ${dry[*]}: $line"
  return $rc
}

# the CUDA kernels' test under compute-sanitizer's memcheck: out-of-bounds and misaligned device accesses, which a
# comparison of results can miss (a write past a tensor's end lands in a neighbour nobody checks)
stage_sanitize() {
  java_cmd
  local cs
  cs="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)"
  [[ -n "$cs" ]] || { result "no compute-sanitizer here"; return 1; }
  VRAM4J_REQUIRE_GPU=1 "$cs" --tool memcheck --error-exitcode 9 --print-limit 20 --log-file "$LOG/sanitize-memcheck.txt" \
    "${JAVA[@]}" -jar "$B/lib/junit-platform-console-standalone.jar" execute \
    --class-path "$B/test-classes:$CP" --select-class io.vram4j.compute.cuda.GpuCudaKernelsTest \
    --details=tree --disable-banner --disable-ansi-colors > "$LOG/sanitize-tests.txt" 2>&1
  local rc=$?
  # racecheck: shared-memory hazards of the attention kernels (the tensor-core forward's softmax is warp-local and
  # relies on __syncwarp() between a warp's products and its element-wise steps)
  VRAM4J_REQUIRE_GPU=1 "$cs" --tool racecheck --racecheck-report hazard --error-exitcode 9 --print-limit 20 \
    --log-file "$LOG/sanitize-racecheck.txt" "${JAVA[@]}" -jar "$B/lib/junit-platform-console-standalone.jar" execute \
    --class-path "$B/test-classes:$CP" \
    --select-method 'io.vram4j.compute.cuda.GpuCudaKernelsTest#fusedAttentionOnSixteenBitInputsMatchesTheCpuKernels(int)' \
    --details=tree --disable-banner --disable-ansi-colors > "$LOG/sanitize-racecheck-tests.txt" 2>&1
  local race=$?
  [[ $rc -ne 0 ]] || rc=$race
  result "rc $rc; memcheck $(grep -m1 -E 'ERROR SUMMARY' "$LOG/sanitize-memcheck.txt" || echo 'no summary') | $(grep -E 'tests (successful|failed)' "$LOG/sanitize-tests.txt" | tr -s ' ' | tr '\n' ' ')| racecheck $(grep -m1 -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$LOG/sanitize-racecheck.txt" || echo 'no summary')"
  return $rc
}

declare -A CAP=([preflight]=90 [tests]=240 [differential]=200 [bench]=120 [train]=240 [techniques]=300 [gpt2]=300
                [attention]=120 [lm]=150 [fbs]=120 [sanitize]=300)

if [[ "${1:-}" == "--stage" ]]; then     # one stage, in its own process (run under timeout by the loop below)
  STAGE="$2"
  mkdir -p "$LOG/differential" "$LOG/runs"
  "stage_$STAGE"
  exit $?
fi

# ---------------------------------------------------------------------------------------------- the run itself
case "${1:-issue9}" in
  issue9) STAGES=(preflight tests differential bench train) ;;
  issue10) STAGES=(preflight fbs techniques gpt2 train attention lm) ;;
  all) STAGES=(preflight tests differential bench train fbs techniques gpt2 attention lm sanitize) ;;
  *) STAGES=("$@") ;;
esac
for s in "${STAGES[@]}"; do
  [[ -n "${CAP[$s]:-}" ]] || { echo "gpu/run.sh: unknown stage '$s' (expected issue9, issue10, all or one of: ${!CAP[*]})" >&2; exit 2; }
done
[[ -f gpu/bundle/vram4j-gpu.tar.xz ]] || { echo "gpu/run.sh: no gpu/bundle/vram4j-gpu.tar.xz: run gpu/bundle.sh here first and carry gpu/bundle" >&2; exit 2; }
START=$SECONDS
rm -rf "$LOG" "$B" && mkdir -p "$LOG/differential" "$LOG/runs" "$B" "$OUT"
tar -C "$B" -xJf gpu/bundle/vram4j-gpu.tar.xz || { echo "gpu/run.sh: the bundle does not unpack" >&2; exit 2; }

ROWS=()
FAILED=0
for s in "${STAGES[@]}"; do
  left=$(( BUDGET - (SECONDS - START) - 15 ))
  cap=${CAP[$s]}
  (( cap > left )) && cap=$left
  if (( cap < 20 )); then
    ROWS+=("$(printf '%-13s %-9s %6s  %s' "$s" skipped - "under 20 s of the ${BUDGET} s budget left")")
    continue
  fi
  t0=$SECONDS
  timeout -k 5 "$cap" bash gpu/run.sh --stage "$s" > "$LOG/$s.log" 2>&1
  rc=$?
  status=$([[ $rc == 0 ]] && echo ok || { [[ $rc == 124 || $rc == 137 ]] && echo "timeout" || echo "rc $rc"; })
  [[ $rc != 0 ]] && FAILED=1
  ROWS+=("$(printf '%-13s %-9s %5ss  %s' "$s" "$status" $(( SECONDS - t0 )) "$(cat "$LOG/$s.result" 2>/dev/null || tail -1 "$LOG/$s.log")")")
done

{
  echo "== vram4j GPU run $(date -u +%Y-%m-%dT%H:%M:%SZ), stages: ${STAGES[*]}, ${SECONDS}s of a ${BUDGET}s budget"
  printf '%-13s %-9s %6s  %s\n' stage status wall result
  printf '%s\n' "${ROWS[@]}"
  # what to fix first, where something failed: the failed GPU tests and the first differences with PyTorch
  if grep -q '✘' "$LOG/gpu-tests.txt" 2>/dev/null; then
    echo; echo "-- gpu-tests.txt: failed"; grep '✘' "$LOG/gpu-tests.txt" | head -40
  fi
  for f in differential/compare-0.txt differential/compare-1.txt differential/compare-2.txt; do
    [[ -s "$LOG/$f" ]] && (( $(wc -l < "$LOG/$f") > 1 )) && { echo; echo "-- $f"; head -15 "$LOG/$f"; }
  done
  for f in bench-vram4j.txt bench-pytorch.txt techniques-compare.txt techniques-mlp-compare.txt gpt2-compare.txt attention.txt; do
    [[ -s "$LOG/$f" ]] && { echo; echo "-- $f"; grep -v -i 'incubator modules' "$LOG/$f"; }
  done
  [[ -s "$LOG/gpt2-kernels.txt" ]] && { echo; echo "-- gpt2-kernels.txt (top 25)"; head -27 "$LOG/gpt2-kernels.txt"; }
  [[ -s "$LOG/gpt2-kernels-cudacores.txt" ]] && { echo; echo "-- attention on CUDA cores (gpt2-kernels-cudacores.txt)"; grep -i "attention\|total" "$LOG/gpt2-kernels-cudacores.txt" | head -8; }
  [[ -s "$LOG/gpt2-kernels-f32.txt" ]] && { echo; echo "-- gpt2-kernels-f32.txt (top 15)"; head -17 "$LOG/gpt2-kernels-f32.txt"; }
  [[ -s "$LOG/gpt2-kernels-pytorch.txt" ]] && { echo; echo "-- gpt2-kernels-pytorch.txt"; head -32 "$LOG/gpt2-kernels-pytorch.txt"; }
} > "$LOG/summary.txt"
cp "$LOG/summary.txt" "$OUT/summary.txt"
# logs without the large files; the run folders apart; each archive under the 16 MiB a file that comes back
tar -C "$LOG" -czf "$OUT/logs.tar.gz" --exclude=runs --exclude='*.pickle' --exclude='*.jsonl' . 2>/dev/null
tar -C "$LOG" -czf "$OUT/differential.tar.gz" differential 2>/dev/null
[[ -d "$LOG/runs" ]] && tar -C "$LOG" -czf "$OUT/runs.tar.gz" runs 2>/dev/null
for f in "$OUT"/*.tar.gz; do
  (( $(stat -c %s "$f") > 16000000 )) && { echo "gpu/run.sh: $(basename "$f") over 16 MB, left out" >> "$OUT/summary.txt"; rm -f "$f"; }
done
cat "$OUT/summary.txt"
exit $FAILED
