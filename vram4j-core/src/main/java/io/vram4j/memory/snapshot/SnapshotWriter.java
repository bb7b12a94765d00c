package io.vram4j.memory.snapshot;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Writes {@link MemorySnapshot}s as PyTorch does: a pickle that Python's {@code pickle.load} and PyTorch's
 * {@code memory_viz} web page (and {@code python -m torch.cuda._memory_viz}) load, or JSON with the same structure.
 *
 * <p>Both forms have the newest field set and PyTorch's key order: top level {@code segments},
 * {@code device_traces}, {@code allocator_settings}, {@code external_annotations}; segment {@code device, address,
 * total_size, allocated_size, active_size, requested_size, stream, segment_type, segment_pool_id, is_expandable,
 * frames, blocks}; block {@code address, size, requested_size, state, frames}; trace entry {@code action,
 * addr} (or {@code device_free} for {@code oom}) {@code , size, stream, time_us, compile_context, user_metadata,
 * frames}, leaving out {@code time_us}, {@code compile_context} and {@code user_metadata} where the entry has none;
 * frame {@code name, filename, line}. {@code segment_pool_id} is a tuple in the pickle and an array in JSON.
 * Stream handles and pool ids are written as unsigned 64-bit integers, as newer PyTorch versions do.
 *
 * <p>The pickle is protocol 2 with only the opcodes PyTorch's viewer decodes; see {@link PickleEncoder}. Strings,
 * frames and stacks are memoized, so files come out about as small as PyTorch's own. Stateless and thread-safe.
 */
public final class SnapshotWriter {
    private static final JsonFactory JSON = JsonFactory.builder()
            .disable(JsonWriteFeature.WRITE_NAN_AS_STRINGS) // NaN and Infinity bare, as Python's json writes them
            .disable(StreamWriteFeature.AUTO_CLOSE_TARGET)
            .build();

    private SnapshotWriter() {
    }

    /**
     * Writes a snapshot as a pickle.
     *
     * @param snapshot the snapshot
     * @param out      the stream; flushed, not closed
     * @throws IOException if writing fails
     */
    public static void writePickle(MemorySnapshot snapshot, OutputStream out) throws IOException {
        writePickle(snapshot, out, true);
    }

    /**
     * Writes a snapshot as a pickle, choosing how stacks are shared.
     *
     * @param snapshot    the snapshot
     * @param out         the stream; flushed, not closed
     * @param shareStacks true: an entry whose stack equals an earlier one refers to it (smallest file); false:
     *                    every entry gets its own list of (shared) frames, as PyTorch's {@code _dump_snapshot}
     *                    writes them, so the file has PyTorch's size and shape (about 5 bytes per frame of a stack)
     * @throws IOException if writing fails
     */
    public static void writePickle(MemorySnapshot snapshot, OutputStream out, boolean shareStacks) throws IOException {
        PickleEncoder e = new PickleEncoder(out);
        if (!shareStacks) {
            e.perEntryFrameLists();
        }
        e.header();
        e.beginDict();
        e.string("segments");
        e.list(snapshot.segments(), s -> segment(e, s));
        e.string("device_traces");
        e.list(snapshot.deviceTraces(), t -> e.list(t, x -> entry(e, x)));
        e.string("allocator_settings");
        e.value(snapshot.allocatorSettings());
        e.string("external_annotations");
        e.value(snapshot.externalAnnotations());
        e.endDict();
        e.finish();
    }

    /**
     * @param snapshot the snapshot
     * @return the pickle's bytes
     */
    public static byte[] toPickle(MemorySnapshot snapshot) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            writePickle(snapshot, out);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return out.toByteArray();
    }

    /**
     * Writes a snapshot as compact UTF-8 JSON.
     *
     * @param snapshot the snapshot
     * @param out      the stream; flushed, not closed
     * @throws IOException if writing fails
     */
    public static void writeJson(MemorySnapshot snapshot, OutputStream out) throws IOException {
        writeJson(snapshot, out, false);
    }

    /**
     * Writes a snapshot as UTF-8 JSON.
     *
     * @param snapshot the snapshot
     * @param out      the stream; flushed, not closed
     * @param pretty   true to indent
     * @throws IOException if writing fails
     */
    public static void writeJson(MemorySnapshot snapshot, OutputStream out, boolean pretty) throws IOException {
        try (JsonGenerator g = JSON.createGenerator(out, JsonEncoding.UTF8)) {
            if (pretty) {
                g.useDefaultPrettyPrinter();
            }
            g.writeStartObject();
            g.writeFieldName("segments");
            g.writeStartArray();
            for (SegmentInfo s : snapshot.segments()) {
                segment(g, s);
            }
            g.writeEndArray();
            g.writeFieldName("device_traces");
            g.writeStartArray();
            for (List<TraceEntry> trace : snapshot.deviceTraces()) {
                g.writeStartArray();
                for (TraceEntry t : trace) {
                    entry(g, t);
                }
                g.writeEndArray();
            }
            g.writeEndArray();
            g.writeFieldName("allocator_settings");
            value(g, snapshot.allocatorSettings());
            g.writeFieldName("external_annotations");
            value(g, snapshot.externalAnnotations());
            g.writeEndObject();
        }
        out.flush();
    }

    /**
     * Writes a snapshot to a file: JSON if the name ends with {@code .json}, otherwise a pickle.
     *
     * @param snapshot the snapshot
     * @param file     the file, replaced if it exists
     * @throws IOException if writing fails
     */
    public static void write(MemorySnapshot snapshot, Path file) throws IOException {
        try (OutputStream out = new java.io.BufferedOutputStream(Files.newOutputStream(file), 1 << 16)) {
            if (file.getFileName() != null && file.getFileName().toString().endsWith(".json")) {
                writeJson(snapshot, out);
            } else {
                writePickle(snapshot, out);
            }
        }
    }

    // ---- pickle ----------------------------------------------------------------------------------------------

    private static void segment(PickleEncoder e, SegmentInfo s) throws IOException {
        e.beginDict();
        e.string("device");
        e.integer(s.device());
        e.string("address");
        e.integer(s.address());
        e.string("total_size");
        e.integer(s.totalSize());
        e.string("allocated_size");
        e.integer(s.allocatedSize());
        e.string("active_size");
        e.integer(s.activeSize());
        e.string("requested_size");
        e.integer(s.requestedSize());
        e.string("stream");
        e.unsigned(s.stream());
        e.string("segment_type");
        e.string(s.segmentType());
        e.string("segment_pool_id");
        e.unsignedPair(s.segmentPoolId().first(), s.segmentPoolId().second());
        e.string("is_expandable");
        e.bool(s.isExpandable());
        e.string("frames");
        e.frames(s.frames());
        e.string("blocks");
        e.list(s.blocks(), b -> block(e, b));
        e.endDict();
    }

    private static void block(PickleEncoder e, BlockInfo b) throws IOException {
        e.beginDict();
        e.string("address");
        e.integer(b.address());
        e.string("size");
        e.integer(b.size());
        e.string("requested_size");
        e.integer(b.requestedSize());
        e.string("state");
        e.string(b.state().pytorchName());
        e.string("frames");
        e.frames(b.frames());
        e.endDict();
    }

    private static void entry(PickleEncoder e, TraceEntry t) throws IOException {
        e.beginDict();
        e.string("action");
        e.string(t.action().pytorchName());
        if (t.action() == TraceAction.OOM) {
            e.string("device_free");
            e.integer(t.deviceFree());
        } else {
            e.string("addr");
            e.integer(t.addr());
        }
        e.string("size");
        e.integer(t.size());
        e.string("stream");
        e.unsigned(t.stream());
        if (t.hasTimeUs()) {
            e.string("time_us");
            e.integer(t.timeUs());
        }
        if (t.compileContext() != null) {
            e.string("compile_context");
            e.string(t.compileContext());
        }
        if (t.userMetadata() != null) {
            e.string("user_metadata");
            e.string(t.userMetadata());
        }
        e.string("frames");
        e.frames(t.frames());
        e.endDict();
    }

    // ---- JSON ------------------------------------------------------------------------------------------------

    private static void segment(JsonGenerator g, SegmentInfo s) throws IOException {
        g.writeStartObject();
        g.writeNumberField("device", s.device());
        g.writeNumberField("address", s.address());
        g.writeNumberField("total_size", s.totalSize());
        g.writeNumberField("allocated_size", s.allocatedSize());
        g.writeNumberField("active_size", s.activeSize());
        g.writeNumberField("requested_size", s.requestedSize());
        g.writeFieldName("stream");
        unsigned(g, s.stream());
        g.writeStringField("segment_type", s.segmentType());
        g.writeFieldName("segment_pool_id");
        g.writeStartArray();
        unsigned(g, s.segmentPoolId().first());
        unsigned(g, s.segmentPoolId().second());
        g.writeEndArray();
        g.writeBooleanField("is_expandable", s.isExpandable());
        g.writeFieldName("frames");
        frames(g, s.frames());
        g.writeFieldName("blocks");
        g.writeStartArray();
        for (BlockInfo b : s.blocks()) {
            g.writeStartObject();
            g.writeNumberField("address", b.address());
            g.writeNumberField("size", b.size());
            g.writeNumberField("requested_size", b.requestedSize());
            g.writeStringField("state", b.state().pytorchName());
            g.writeFieldName("frames");
            frames(g, b.frames());
            g.writeEndObject();
        }
        g.writeEndArray();
        g.writeEndObject();
    }

    private static void entry(JsonGenerator g, TraceEntry t) throws IOException {
        g.writeStartObject();
        g.writeStringField("action", t.action().pytorchName());
        if (t.action() == TraceAction.OOM) {
            g.writeNumberField("device_free", t.deviceFree());
        } else {
            g.writeNumberField("addr", t.addr());
        }
        g.writeNumberField("size", t.size());
        g.writeFieldName("stream");
        unsigned(g, t.stream());
        if (t.hasTimeUs()) {
            g.writeNumberField("time_us", t.timeUs());
        }
        if (t.compileContext() != null) {
            g.writeStringField("compile_context", t.compileContext());
        }
        if (t.userMetadata() != null) {
            g.writeStringField("user_metadata", t.userMetadata());
        }
        g.writeFieldName("frames");
        frames(g, t.frames());
        g.writeEndObject();
    }

    private static void frames(JsonGenerator g, List<Frame> frames) throws IOException {
        g.writeStartArray();
        for (Frame f : frames) {
            g.writeStartObject();
            g.writeStringField("name", f.name());
            g.writeStringField("filename", f.filename());
            g.writeNumberField("line", f.line());
            g.writeEndObject();
        }
        g.writeEndArray();
    }

    private static void unsigned(JsonGenerator g, long v) throws IOException {
        if (v >= 0) {
            g.writeNumber(v);
        } else {
            g.writeNumber(new BigInteger(Long.toUnsignedString(v)));
        }
    }

    private static void value(JsonGenerator g, Object v) throws IOException {
        switch (v) {
            case null -> g.writeNull();
            case String s -> g.writeString(s);
            case Boolean b -> g.writeBoolean(b);
            case Long l -> g.writeNumber(l);
            case Integer i -> g.writeNumber(i);
            case BigInteger b -> g.writeNumber(b);
            case Double d -> g.writeNumber(d);
            case Float f -> g.writeNumber(f.doubleValue());
            case List<?> l -> {
                g.writeStartArray();
                for (Object o : l) {
                    value(g, o);
                }
                g.writeEndArray();
            }
            case Object[] a -> {
                g.writeStartArray();
                for (Object o : a) {
                    value(g, o);
                }
                g.writeEndArray();
            }
            case Map<?, ?> m -> {
                g.writeStartObject();
                for (Map.Entry<?, ?> en : m.entrySet()) {
                    g.writeFieldName(String.valueOf(en.getKey()));
                    value(g, en.getValue());
                }
                g.writeEndObject();
            }
            default -> throw new IllegalArgumentException("cannot write a " + v.getClass().getName() + " as JSON");
        }
    }
}
