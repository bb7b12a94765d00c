#!/usr/bin/env bash
# Builds the GPU bundle: everything a Linux x86-64 machine with only an NVIDIA driver (no JDK, no Maven) needs to
# run vram4j's GPU test group, the differential test against PyTorch and the GPU benchmarks:
#   gpu/bundle/vram4j-gpu.tar.xz = runtime/ (a jlinked Java runtime with the modules vram4j uses),
#   lib/ (the CLI jar, the bench classes, JUnit's console launcher), test-classes/ (the tests of vram4j-core and
#   vram4j-tensor; the GPU group is tagged gpu in both).
# Run it here (it uses the launcher's JDK 25 and the Maven wrapper); then on the GPU machine, from the repository
# root: gpu/run.sh (it unpacks the bundle next to itself). The bundle is git-ignored; name gpu/bundle in `carry`.
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

./mvnw -B -q -DskipTests package -pl vram4j-cli,vram4j-bench -am
./mvnw -B -q test-compile -pl vram4j-core,vram4j-tensor
./mvnw -B -q dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:$JUNIT_CONSOLE \
  -DoutputDirectory="$ROOT/gpu/bundle/stage/lib" -Dmdep.stripVersion=true

STAGE="$ROOT/gpu/bundle/stage"
mkdir -p "$STAGE/lib"
cp vram4j-cli/target/vram4j.jar "$STAGE/lib/"
cp "$(ls vram4j-bench/target/original-vram4j-bench-*.jar 2>/dev/null || ls vram4j-bench/target/vram4j-bench-*[0-9T].jar | head -1)" \
  "$STAGE/lib/vram4j-bench-classes.jar"
rm -rf "$STAGE/test-classes" && cp -r vram4j-core/target/test-classes "$STAGE/test-classes"
cp -r vram4j-tensor/target/test-classes/. "$STAGE/test-classes/"
MODULES="$("$JDK/bin/jdeps" --multi-release 25 --ignore-missing-deps --print-module-deps \
  "$STAGE/lib/vram4j.jar" "$STAGE/lib/vram4j-bench-classes.jar")"
MODULES="$MODULES,jdk.incubator.vector,jdk.unsupported,java.logging,java.management,jdk.zipfs"
rm -rf "$STAGE/runtime"
"$JDK/bin/jlink" --add-modules "$MODULES" --strip-debug --no-header-files --no-man-pages \
  --strip-native-debug-symbols=objcopy=/usr/bin/objcopy --output "$STAGE/runtime"
tar -C "$STAGE" -cJf "$ROOT/gpu/bundle/vram4j-gpu.tar.xz" runtime lib test-classes
rm -rf "$STAGE"
ls -l "$ROOT/gpu/bundle/vram4j-gpu.tar.xz"
echo "modules: $MODULES"
