#!/bin/sh
# Regenerates the PTX of vram4j's CUDA kernels, which is committed as a resource of vram4j-tensor so that
# machines without nvcc build and run vram4j unchanged. Run it after every change to vram4j_kernels.cu;
# PtxFreshnessTest fails while the committed PTX is stale.
#
#   vram4j-tensor/src/main/cuda/build-ptx.sh [OUTPUT]
#
# nvcc: $NVCC, else $CUDA_HOME/bin/nvcc, else /usr/local/cuda/bin/nvcc. compute_80 is a virtual architecture:
# the driver JIT-compiles the PTX for the GPU at hand (Ampere, Hopper and later).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../resources/io/vram4j/compute/cuda/vram4j_kernels.ptx}
nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
"$nvcc" -ptx -arch=compute_80 -O3 -fmad=false -std=c++17 -o "$out" "$here/vram4j_kernels.cu"
# What the PTX was made from, for PtxFreshnessTest: nvcc 13.0 does not always write the same text for the same
# source (some unrolled attention kernels come out in one of two instruction orders), so the test compares this
# digest of the source and this script, and the entries, instead of the text.
digest=$(cat "$here/vram4j_kernels.cu" "$here/build-ptx.sh" | sha256sum | cut -d ' ' -f 1)
printf '// built from vram4j_kernels.cu and build-ptx.sh, sha256 %s\n' "$digest" >> "$out"
