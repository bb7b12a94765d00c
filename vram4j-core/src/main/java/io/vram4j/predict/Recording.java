package io.vram4j.predict;

import io.vram4j.memory.snapshot.MemorySnapshot;

import java.util.Objects;

/**
 * One snapshot of the program and the value of the parameter it was recorded at.
 *
 * @param name what to call it in messages (a file name)
 * @param snapshot the snapshot; its first device with a trace is used, which must start from an empty allocator
 * @param value the parameter's value (batch size or sequence length), at least 1
 */
public record Recording(String name, MemorySnapshot snapshot, long value) {
    /**
     * @throws IllegalArgumentException when {@code value < 1}
     */
    public Recording {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(snapshot, "snapshot");
        if (value < 1) {
            throw new IllegalArgumentException(name + ": the value must be at least 1, got " + value);
        }
    }
}
