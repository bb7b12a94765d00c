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

    @Override
    public String toString() {
        return filename + ":" + line + ":" + name;
    }
}
