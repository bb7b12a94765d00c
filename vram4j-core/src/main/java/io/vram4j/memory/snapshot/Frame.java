package io.vram4j.memory.snapshot;

import java.util.Objects;

/**
 * One stack frame of a recorded allocation or free, PyTorch's frame dict {@code {'name', 'filename', 'line'}}.
 *
 * <p>Python, TorchScript and C++ frames look alike: C++ frames from the unwinder often carry the filename
 * {@code "??"} and line {@code 0}. Newer PyTorch versions may add {@code fx_node_*} keys to a frame; those are not
 * kept. Immutable and thread-safe.
 *
 * @param name     PyTorch {@code name}: the function name
 * @param filename PyTorch {@code filename}: the source file (may be a Windows path)
 * @param line     PyTorch {@code line}: the line number (0 when unknown)
 */
public record Frame(String name, String filename, int line) {
    /** @throws NullPointerException if {@code name} or {@code filename} is null */
    public Frame {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(filename, "filename");
    }

    /*
     * equals and hashCode are written out, with the record's own meaning (all three components), because a record's
     * generated ones are bootstrapped through invokedynamic (java.lang.runtime.ObjectMethods) on first use: 20 to 40 ms
     * of method-handle set-up in a fresh JVM, paid by every snapshot read, whose decoder interns frames in a hash map
     * (BENCHMARKS.md, "Start-up").
     */
    @Override
    public boolean equals(Object o) {
        return o instanceof Frame f && line == f.line && name.equals(f.name) && filename.equals(f.filename);
    }

    @Override
    public int hashCode() {
        return (31 * name.hashCode() + filename.hashCode()) * 31 + line;
    }

    @Override
    public String toString() {
        return filename + ":" + line + ":" + name;
    }
}
