#!/usr/bin/env bash
# Builds the GPU bundle: everything a Linux x86-64 machine with only an NVIDIA driver (no JDK, no Maven) needs to
# run vram4j's GPU test group, the differential test against PyTorch, the GPU benchmarks and the main job:
#   gpu/bundle/vram4j-gpu.tar.xz = runtime/ (a jlinked Java runtime with the modules vram4j uses),
#     lib/ (the CLI jar, the bench classes, JUnit's console launcher), test-classes/ (the tests of vram4j-core and
#     vram4j-tensor; the GPU group is tagged gpu in both);
#   gpu/bundle/fashion-mnist-rest.tar.xz = the full Fashion-MNIST less the images the jar already bundles
#     (gpu/fashion_mnist.py split; gpu/run.sh joins it back and checks each file's SHA-256), from Debian's
#     dataset-fashion-mnist (installed here when missing and this runs as root).
# Then it checks the bundle as the GPU machine will use it, on this machine: the bundled runtime runs `devices`,
# a short `train`, and the GPU test group (skipped here: no GPU), and the data set rebuilds.
# Run it here (it uses the launcher's JDK 25 and the Maven wrapper); then on the GPU machine, from the repository
# root: gpu/run.sh (it unpacks the bundle). The bundle is git-ignored; name gpu/bundle in the device tool's carry.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JDK="${JAVA_HOME:-}"
if [[ -z "$JDK" || ! -x "$JDK/bin/jlink" ]]; then
  JDK="$(ls -d /usr/lib/jvm/temurin-25* 2>/dev/null | head -1)"
fi
[[ -x "$JDK/bin/jlink" ]] || { echo "gpu/bundle.sh: needs a JDK 25 with jlink (set JAVA_HOME)" >&2; exit 2; }
export JAVA_HOME="$JDK"
JUNIT_CONSOLE=1.11.4
FMNIST_OFFICIAL="${FMNIST_OFFICIAL:-/usr/share/datasets/fashion-mnist}"
# The device tool carries the working tree and the carried paths, 64 MiB together.
CARRY_LIMIT=$(( 64 << 20 ))

./mvnw -B -q -DskipTests package -pl vram4j-cli,vram4j-bench -am
./mvnw -B -q test-compile -pl vram4j-core,vram4j-tensor
STAGE="$ROOT/gpu/bundle/stage"
rm -rf "$STAGE"
./mvnw -B -q dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:$JUNIT_CONSOLE \
  -DoutputDirectory="$STAGE/lib" -Dmdep.stripVersion=true

mkdir -p "$STAGE/lib"
cp vram4j-cli/target/vram4j.jar "$STAGE/lib/"
cp "$(ls vram4j-bench/target/original-vram4j-bench-*.jar 2>/dev/null || ls vram4j-bench/target/vram4j-bench-*[0-9T].jar | head -1)" \
  "$STAGE/lib/vram4j-bench-classes.jar"
cp -r vram4j-core/target/test-classes "$STAGE/test-classes"
cp -r vram4j-tensor/target/test-classes/. "$STAGE/test-classes/"
# The modules jdeps finds, less java.desktop: only Jackson's optional Java7SupportImpl names it (java.beans
# annotations), and Jackson loads that class reflectively and does without it. Leaving it out saves 11 MB of the
# compressed bundle, which the full Fashion-MNIST needs within the 64 MiB the device tool carries. The self-check
# below runs the bundle on this runtime.
MODULES="$("$JDK/bin/jdeps" --multi-release 25 --ignore-missing-deps --print-module-deps \
  "$STAGE/lib/vram4j.jar" "$STAGE/lib/vram4j-bench-classes.jar")"
MODULES="$(echo "$MODULES,jdk.incubator.vector,jdk.unsupported,java.logging,java.management,jdk.zipfs" \
  | tr ',' '\n' | grep -v -x java.desktop | sort -u | paste -sd,)"
"$JDK/bin/jlink" --add-modules "$MODULES" --strip-debug --no-header-files --no-man-pages \
  --strip-native-debug-symbols=objcopy=/usr/bin/objcopy --output "$STAGE/runtime"
tar -C "$STAGE" -cJf "$ROOT/gpu/bundle/vram4j-gpu.tar.xz" runtime lib test-classes

if [[ ! -f "$FMNIST_OFFICIAL/train-images-idx3-ubyte.gz" && "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
  echo "gpu/bundle.sh: installing Debian's dataset-fashion-mnist for the full data set" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist >/dev/null 2>&1 || true
fi
rm -f "$ROOT/gpu/bundle/fashion-mnist-rest.tar.xz"
if [[ -f "$FMNIST_OFFICIAL/train-images-idx3-ubyte.gz" ]]; then
  python3 gpu/fashion_mnist.py split "$FMNIST_OFFICIAL" "$STAGE/lib/vram4j.jar" "$ROOT/gpu/bundle/fashion-mnist-rest.tar.xz"
else
  echo "gpu/bundle.sh: no $FMNIST_OFFICIAL: the GPU run will train on the subset bundled in the jar" >&2
fi

# ---- self-check: the bundle as the GPU machine will run it (gpu/run.sh's java command, its runtime only)
CHECK="$ROOT/gpu/bundle/check"
rm -rf "$CHECK" && mkdir -p "$CHECK/unpacked"
tar -C "$CHECK/unpacked" -xJf "$ROOT/gpu/bundle/vram4j-gpu.tar.xz"
U="$CHECK/unpacked"
JAVA=("$U/runtime/bin/java" --add-modules jdk.incubator.vector -XX:+UseParallelGC)
fail() { echo "gpu/bundle.sh: self-check failed: $1 (log: $2)" >&2; exit 1; }
"${JAVA[@]}" -jar "$U/lib/vram4j.jar" devices --json > "$CHECK/devices.json" 2> "$CHECK/devices.err" \
  || fail "devices --json" "$CHECK/devices.err"
"${JAVA[@]}" -jar "$U/lib/vram4j.jar" train --epochs 1 --limit 1000 --json --out "$CHECK/run" > "$CHECK/train.json" \
  2> "$CHECK/train.err" || fail "train --limit 1000" "$CHECK/train.err"
"${JAVA[@]}" --enable-native-access=ALL-UNNAMED -jar "$U/lib/junit-platform-console-standalone.jar" execute \
  --class-path "$U/test-classes:$U/lib/vram4j.jar:$U/lib/vram4j-bench-classes.jar" --scan-classpath "$U/test-classes" \
  --include-tag gpu --details=summary --disable-banner > "$CHECK/gpu-tests.txt" 2>&1 \
  || fail "the GPU test group (without a GPU every test should be skipped, none failed)" "$CHECK/gpu-tests.txt"
# a test that assumes a GPU and finds none is reported aborted (skipped with its reason)
SKIPPED="$(grep -Eo '[1-9][0-9]* tests (skipped|aborted)' "$CHECK/gpu-tests.txt" | head -1)"
[[ -n "$SKIPPED" ]] || fail "no GPU test was found and skipped" "$CHECK/gpu-tests.txt"
if [[ -f "$ROOT/gpu/bundle/fashion-mnist-rest.tar.xz" ]]; then
  mkdir -p "$CHECK/fashion-mnist"
  python3 gpu/fashion_mnist.py join "$ROOT/gpu/bundle/fashion-mnist-rest.tar.xz" "$U/lib/vram4j.jar" "$CHECK/fashion-mnist" \
    > "$CHECK/fashion-mnist.txt" 2>&1 || fail "the Fashion-MNIST part does not rebuild" "$CHECK/fashion-mnist.txt"
fi
rm -rf "$CHECK" "$STAGE"

tracked=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
untracked=$(git ls-files -z --others --exclude-standard | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
bundle=$(du -cb "$ROOT"/gpu/bundle/*.tar.xz | tail -1 | cut -f1)
total=$(( tracked + untracked + bundle ))
ls -l "$ROOT"/gpu/bundle/*.tar.xz
echo "modules: $MODULES"
echo "self-check passed: devices, train, GPU test group skipped here ($SKIPPED)$([[ -f "$ROOT/gpu/bundle/fashion-mnist-rest.tar.xz" ]] && echo ', Fashion-MNIST rebuilt')"
echo "carried with the working tree: $(( total >> 20 )) MiB of the device tool's $(( CARRY_LIMIT >> 20 )) MiB"
(( total <= CARRY_LIMIT )) || { echo "gpu/bundle.sh: over the device tool's 64 MiB" >&2; exit 1; }
