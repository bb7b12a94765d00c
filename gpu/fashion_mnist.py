#!/usr/bin/env python3
"""Carries the full Fashion-MNIST to the GPU machine in fewer bytes than the official files.

The CLI jar bundles the first 10,000 training and 2,000 test images of the official IDX files; only the images after
those, and the labels, need to travel. The device tool carries at most 64 MiB with the working tree.

  fashion_mnist.py split OFFICIAL_DIR JAR OUT.tar.xz
      (here, from gpu/bundle.sh) OFFICIAL_DIR holds the four official .gz files (Debian's dataset-fashion-mnist);
      writes the images the jar lacks, the labels and a manifest with each full file's SHA-256, xz-compressed.
  fashion_mnist.py join PART.tar.xz JAR OUT_DIR
      (on the GPU machine, from gpu/run.sh) rebuilds the four full IDX files in OUT_DIR and checks their SHA-256.

Exit status 2 with one line naming the file when an input is not what it should be.
"""
import gzip
import hashlib
import io
import json
import struct
import sys
import tarfile
import zipfile

IMAGES = ("train-images-idx3-ubyte", "t10k-images-idx3-ubyte")
LABELS = ("train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte")
RESOURCES = "io/vram4j/data/fashion-mnist/"
HEADER = 16   # IDX images: magic 0x00000803, count, rows, cols (big-endian int32)


def fail(message):
    print(f"fashion_mnist.py: {message}", file=sys.stderr)
    sys.exit(2)


def images_header(data, where):
    if len(data) < HEADER:
        fail(f"{where}: shorter than an IDX header")
    magic, count, rows, cols = struct.unpack(">iiii", data[:HEADER])
    if magic != 0x803 or len(data) != HEADER + count * rows * cols:
        fail(f"{where}: not an IDX image file (magic {magic:#x}, {count} images of {rows}x{cols}, {len(data)} bytes)")
    return count, rows, cols


def bundled(jar, name):
    try:
        with zipfile.ZipFile(jar) as z:
            return gzip.decompress(z.read(RESOURCES + name + ".gz"))
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        fail(f"{jar}: no bundled {name}.gz ({e})")


def split(official, jar, out):
    manifest = {}
    with tarfile.open(out, "w:xz", preset=9) as tar:
        def add(name, data):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        for name in IMAGES + LABELS:
            try:
                with gzip.open(f"{official}/{name}.gz") as f:
                    full = f.read()
            except OSError as e:
                fail(f"{official}/{name}.gz: {e}")
            manifest[name] = {"bytes": len(full), "sha256": hashlib.sha256(full).hexdigest()}
            if name in LABELS:
                add(name, full)
                continue
            count, rows, cols = images_header(full, f"{official}/{name}.gz")
            part = bundled(jar, name)
            n, r, c = images_header(part, f"{jar}!{name}.gz")
            if (r, c) != (rows, cols) or n > count or part[HEADER:] != full[HEADER:HEADER + n * r * c]:
                fail(f"{jar}!{name}.gz: not the first {n} images of {official}/{name}.gz")
            manifest[name]["bundled"] = n
            add(name + ".rest", full[HEADER + n * r * c:])
        add("manifest.json", json.dumps(manifest, indent=1).encode())


def join(part, jar, out_dir):
    try:
        with tarfile.open(part, "r:xz") as tar:
            members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    except (OSError, tarfile.TarError, EOFError) as e:
        fail(f"{part}: not a readable tar.xz ({e})")
    if "manifest.json" not in members:
        fail(f"{part}: no manifest.json")
    manifest = json.loads(members["manifest.json"])
    for name in IMAGES + LABELS:
        if name not in manifest:
            fail(f"{part}: manifest.json has no entry '{name}'")
        if name in LABELS:
            full = members.get(name, b"")
        else:
            head = bundled(jar, name)
            count, rows, cols = images_header(head, f"{jar}!{name}.gz")
            if count != manifest[name].get("bundled"):
                fail(f"{jar}!{name}.gz: {count} images; the part was made against a jar with {manifest[name].get('bundled')}")
            rest = members.get(name + ".rest", b"")
            total = count + len(rest) // (rows * cols)
            full = struct.pack(">iiii", 0x803, total, rows, cols) + head[HEADER:] + rest
        if hashlib.sha256(full).hexdigest() != manifest[name]["sha256"]:
            fail(f"{name}: the rebuilt file's SHA-256 differs from the official file's")
        with open(f"{out_dir}/{name}", "wb") as f:
            f.write(full)
        print(f"{name}: {len(full)} bytes, SHA-256 as the official file")


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("split", "join"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    (split if sys.argv[1] == "split" else join)(*sys.argv[2:])


if __name__ == "__main__":
    main()
