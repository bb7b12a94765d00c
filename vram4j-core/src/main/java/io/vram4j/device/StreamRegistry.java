package io.vram4j.device;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;
import java.util.function.Supplier;

/**
 * The streams of one device, by raw handle: the default stream (handle 0), streams created with
 * {@link #newStream()} and streams named by a recorded handle through {@link #stream(long)}. By default new
 * streams are counting-model streams with handles 1, 2, 3, ... (skipping handles already in use); a backend with
 * real queues supplies its own creator and adopter. Thread-safe.
 */
final class StreamRegistry {
    private final ConcurrentMap<Long, Stream> streams = new ConcurrentHashMap<>();
    private final AtomicLong nextHandle = new AtomicLong(1);
    private final int deviceIndex;
    private final Supplier<Stream> creator;
    private final LongFunction<Stream> adopter;

    /**
     * @param deviceIndex the device index of the streams
     * @param creator makes a new stream, or returns null for a counting stream with the next free handle
     * @param adopter makes the stream of a handle seen for the first time (handle 0: the default stream)
     */
    StreamRegistry(int deviceIndex, Supplier<Stream> creator, LongFunction<Stream> adopter) {
        this.deviceIndex = deviceIndex;
        this.creator = creator;
        this.adopter = adopter;
    }

    Stream defaultStream() {
        return stream(0);
    }

    Stream newStream() {
        Stream created = creator.get();
        if (created != null) {
            streams.put(created.handle(), created);
            return created;
        }
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
        Stream s = streams.get(handle);
        return s != null ? s : streams.computeIfAbsent(handle, adopter::apply);
    }

    void synchronizeAll() {
        for (Stream s : streams.values()) {
            s.synchronize();
        }
    }

    Iterable<Stream> all() {
        return streams.values();
    }
}
