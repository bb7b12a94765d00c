#!/usr/bin/env python3
"""One line for gpu/run.sh's summary table from a training run's JSON, vram4j's or PyTorch's.

  summarize.py train JSON_FILE ERR_FILE
      vram4j (`./vram4j train --json`): test accuracy, seconds per epoch, samples/s, training peaks;
      PyTorch (gpu/train_mlp_pytorch.py): test accuracy, seconds per epoch, peaks.
      When JSON_FILE is empty or not JSON, the last line of ERR_FILE that is not the JVM's incubator notice.

Needs nothing but Python's standard library; always exits 0 with a line (it describes, it does not judge).
"""
import json
import sys


def mib(n):
    return "-" if n is None else f"{n / 2**20:.1f} MiB"


def last_line(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [l.strip() for l in f if l.strip() and "incubator modules" not in l]
    except OSError:
        return f"no output ({path} missing)"
    return "failed: " + (lines[-1] if lines else "no output")


def train_line(doc):
    if "epochs" in doc and isinstance(doc["epochs"], list):          # vram4j
        epochs = doc["epochs"]
        secs = " ".join(f"{e.get('seconds', 0):.1f}" for e in epochs)
        peaks = doc.get("peaks", {})
        return (f"acc {doc.get('accuracy', float('nan')):.4f}, epochs {secs} s, "
                f"{doc.get('samples_per_sec', 0):,.0f} samples/s, peak alloc "
                f"{mib(peaks.get('training_peak_allocated_bytes'))} / reserved "
                f"{mib(peaks.get('training_peak_reserved_bytes'))} ({doc.get('device', '?')})")
    if "epoch_seconds" in doc:                                       # PyTorch
        secs = " ".join(f"{s:.1f}" for s in doc["epoch_seconds"])
        return (f"acc {doc.get('test_accuracy', float('nan')):.4f}, epochs {secs} s, peak alloc "
                f"{mib(doc.get('peak_allocated_bytes'))} / reserved {mib(doc.get('peak_reserved_bytes'))} "
                f"(torch {doc.get('torch', '?')}, loader {doc.get('loader', 'device')})")
    return "unrecognised JSON: keys " + ", ".join(sorted(doc)[:8])


def main():
    if len(sys.argv) != 4 or sys.argv[1] != "train":
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        with open(sys.argv[2], encoding="utf-8") as f:
            text = f.read().strip()
        try:
            doc = json.loads(text)
        except ValueError:                      # a log line before the JSON line: take the last line
            doc = json.loads(text.splitlines()[-1])
        if not isinstance(doc, dict):
            raise ValueError("not an object")
    except (OSError, ValueError, IndexError):
        print(last_line(sys.argv[3]))
        return
    print(train_line(doc))


if __name__ == "__main__":
    main()
