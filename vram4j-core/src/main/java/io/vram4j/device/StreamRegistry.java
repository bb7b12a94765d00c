package io.vram4j.device;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The streams of one device, by raw handle: the default stream (handle 0), streams created with
 * {@link #newStream()} (handles 1, 2, 3, ... skipping handles already in use) and streams named by a recorded
 * handle through {@link #stream(long)}. Thread-safe.
 */
final class StreamRegistry {
    private final int deviceIndex;
    private final ConcurrentMap<Long, Stream> streams = new ConcurrentHashMap<>();
    private final AtomicLong nextHandle = new AtomicLong(1);
    private final Stream defaultStream;

    StreamRegistry(int deviceIndex) {
        this.deviceIndex = deviceIndex;
        this.defaultStream = stream(0);
    }

    Stream defaultStream() {
        return defaultStream;
    }

    Stream newStream() {
        while (true) {
            long handle = nextHandle.getAndIncrement();
            if (handle == 0) {
                continue; // wrapped around: 0 stays the default stream
            }
            Stream fresh = new Stream(deviceIndex, handle);
            if (streams.putIfAbsent(handle, fresh) == null) {
                return fresh;
            }
        }
    }

    Stream stream(long handle) {
        return streams.computeIfAbsent(handle, h -> new Stream(deviceIndex, h));
    }

    void synchronizeAll() {
        for (Stream s : streams.values()) {
            s.synchronize();
        }
    }
}
