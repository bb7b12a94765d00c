package io.vram4j.memory.snapshot;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Objects;
import java.util.Set;
import java.util.zip.GZIPInputStream;

/**
 * Reads PyTorch memory snapshots: the pickles written by {@code torch.cuda.memory._dump_snapshot()} (any protocol
 * from 2 to 5) and JSON documents with the same structure (such as {@link SnapshotWriter#writeJson} writes), either
 * of them also gzip-compressed ({@code .pickle.gz}, {@code .json.gz}; told by content, the gzip magic bytes
 * {@code 1f 8b}, whatever the file name). JSON is read into a tree by Jackson's {@code ObjectMapper}.
 *
 * <p>Every generation of the format is accepted: a bare list of segments ({@code torch.cuda.memory_snapshot()}),
 * {@code {segments, device_traces}} (with or without {@code allocator_settings} and {@code external_annotations}),
 * trace entries with or without {@code time_us}, {@code compile_context}, {@code user_metadata} and
 * {@code frames}, segments without {@code requested_size}, {@code segment_pool_id} or {@code is_expandable}, and
 * PyTorch 2.0's blocks that keep their stack and request in {@code history}. Integers may arrive as Python's
 * signed or unsigned 64-bit values; stream handles and pool ids keep their 64 bits either way. Keys this model has
 * no field for are ignored.
 *
 * <p>Malformed input raises {@link SnapshotFormatException} whose message names the source and the location
 * ({@code x.pickle: device_traces[0][12]: field 'size' must be an integer, got str 'abc'}); I/O failures raise
 * {@link IOException}. A pickle is never allowed to import or call Python objects: opcodes such as
 * {@code GLOBAL} and {@code REDUCE} are refused, never executed. Stateless and thread-safe.
 */
public final class SnapshotReader {
    /**
     * Jackson's reader, made on the first JSON document: building an {@code ObjectMapper} loads and initialises a
     * few hundred classes, about 60 ms in a fresh JVM, which reading a pickle does not need (BENCHMARKS.md, "Start-up").
     */
    private static final class Json {
        static final JsonFactory FACTORY = JsonFactory.builder()
                .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS) // Python's json writes NaN and Infinity
                .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .build();

        /** Jackson's untyped tree reading: objects keep their key order, integers stay exact. */
        static final ObjectMapper TREE = new ObjectMapper(FACTORY);
    }

    /**
     * Files of this size and more are decoded from a mapping, smaller ones from a heap array: mapping a file costs a
     * few milliseconds of set-up in a fresh JVM and each byte read from a mapped buffer goes through a memory-session
     * check, which shows while the decoder still runs interpreted (BENCHMARKS.md, "Start-up"). The size is the one
     * from which the launcher turns on the C2 compiler for a long read.
     */
    private static final long MAPPED_FROM = 64L << 20;

    /** The largest file read: a mapping (and the decoder's offsets) are limited to 2 GiB - 1 bytes. */
    private static final long MAX_SIZE = Integer.MAX_VALUE;

    private SnapshotReader() {
    }

    /**
     * Reads a snapshot file, telling pickle from JSON by content: a pickle starts with the {@code PROTO} opcode
     * (byte 0x80), JSON with <code>&#123;</code> or <code>[</code> after optional whitespace or a byte-order mark.
     * A pickle of 64 MiB or more is decoded straight from a memory mapping of the file (its bytes never on the heap),
     * so snapshots of a gigabyte and more read with a heap of about their size; a smaller file is read into a heap
     * array first, which starts faster; files of 2 GiB and more are refused. Gzip-compressed
     * files are decompressed on the heap first.
     *
     * @param file the file; messages name it by its file name
     * @return the snapshot
     * @throws IOException              if the file cannot be read
     * @throws SnapshotFormatException if the content is not a valid snapshot, or the file has 2 GiB or more
     */
    public static MemorySnapshot read(Path file) throws IOException {
        return read(file, MAPPED_FROM);
    }

    /** {@link #read(Path)} with the size from which the file is mapped instead of read (tests take both paths). */
    static MemorySnapshot read(Path file, long mappedFrom) throws IOException {
        Path fileName = file.getFileName();
        String name = fileName != null ? fileName.toString() : file.toString();
        ByteBuffer mapped;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < Math.max(2, mappedFrom)) {
                return read(Files.readAllBytes(file), name);
            }
            if (size > MAX_SIZE) {
                throw new SnapshotFormatException(name + ": " + size + " bytes: snapshots of 2 GiB and more are not"
                        + " supported (split the recording, or lower max_entries of _record_memory_history)");
            }
            mapped = ch.map(FileChannel.MapMode.READ_ONLY, 0, size); // unmapped when collected
        }
        if (isGzip(mapped)) {
            return read(Files.readAllBytes(file), name);
        }
        return decode(mapped, null, name); // a pickle is decoded from the mapping: its bytes stay off the heap
    }

    /**
     * Reads a snapshot held in memory, telling pickle from JSON by content.
     *
     * @param data       the bytes
     * @param sourceName the name used in messages, such as the file name
     * @return the snapshot
     * @throws SnapshotFormatException if the content is not a valid snapshot
     */
    public static MemorySnapshot read(byte[] data, String sourceName) {
        Objects.requireNonNull(sourceName, "sourceName");
        data = gunzipIfCompressed(data, sourceName);
        return decode(ByteBuffer.wrap(data), data, sourceName);
    }

    /** Tells pickle from JSON by content; {@code array} is the segment's array when it has one, else null. */
    private static MemorySnapshot decode(ByteBuffer data, byte[] array, String sourceName) {
        int n = data.limit();
        if (n > 0 && byteAt(data, 0) == 0x80) {
            return decodePickle(data, sourceName);
        }
        int i = skipBomAndWhitespace(data);
        if (i < n && (byteAt(data, i) == '{' || byteAt(data, i) == '[')) {
            byte[] json = array;
            if (json == null) {
                json = new byte[n];
                data.get(0, json);
            }
            return decodeJson(json, sourceName);
        }
        if (n == 0) {
            throw new SnapshotFormatException(sourceName + ": empty input, not a pickle or JSON snapshot");
        }
        throw new SnapshotFormatException(sourceName + ": not a pickle or JSON snapshot (starts with bytes "
                + hex(data, 4) + ")");
    }

    /**
     * Reads a pickled snapshot.
     *
     * @param in         the stream, read to its end and not closed
     * @param sourceName the name used in messages, such as the file name
     * @return the snapshot
     * @throws IOException              if the stream cannot be read
     * @throws SnapshotFormatException if the content is not a valid pickled snapshot
     */
    public static MemorySnapshot readPickle(InputStream in, String sourceName) throws IOException {
        Objects.requireNonNull(sourceName, "sourceName");
        byte[] data = gunzipIfCompressed(in.readAllBytes(), sourceName);
        if (data.length == 0 || (data[0] & 0xff) != 0x80) {
            throw new SnapshotFormatException(sourceName + ": not a pickle of protocol 2 or later (starts with "
                    + (data.length == 0 ? "no bytes" : "bytes " + hex(ByteBuffer.wrap(data), 4)) + ")");
        }
        return decodePickle(ByteBuffer.wrap(data), sourceName);
    }

    /**
     * Reads a snapshot stored as JSON with PyTorch's keys (tuples as arrays).
     *
     * @param in         the stream (UTF-8), read to its end and not closed
     * @param sourceName the name used in messages, such as the file name
     * @return the snapshot
     * @throws IOException              if the stream cannot be read
     * @throws SnapshotFormatException if the content is not a valid JSON snapshot
     */
    public static MemorySnapshot readJson(InputStream in, String sourceName) throws IOException {
        Objects.requireNonNull(sourceName, "sourceName");
        return decodeJson(gunzipIfCompressed(in.readAllBytes(), sourceName), sourceName);
    }

    // ---- pickle ----------------------------------------------------------------------------------------------

    /**
     * One pass over a valid pickle: the decoder executes only the opcodes of plain data and refuses anything else, so
     * the validating {@link PickleScanner} runs only when decoding fails, to name the first problem in file order
     * (truncation, an unknown or forbidden opcode, a bad protocol) ahead of the structural error the decoder met.
     * Trace entries become {@link TraceEntry}s as their dicts complete, so the dicts of millions of entries never
     * exist at once (about 800 MB for a 1 GB snapshot of 3.2 million entries).
     */
    private static MemorySnapshot decodePickle(ByteBuffer data, String source) {
        Set<Object> stacks = Collections.newSetFromMap(new IdentityHashMap<>());
        SnapshotDecoder model = new SnapshotDecoder(source, stacks);
        Object root;
        try {
            root = PickleDecoder.decode(data, stacks, model::traceEntryOrSelf); // entries built as they complete
        } catch (RuntimeException e) {
            try {
                PickleScanner.check(data);
            } catch (IllegalArgumentException scanned) {
                throw new SnapshotFormatException(source + ": " + scanned.getMessage());
            }
            String what = e instanceof IllegalArgumentException ? e.getMessage() : describe(e);
            throw new SnapshotFormatException(source + ": invalid pickle: " + what, e);
        }
        return model.decode(root);
    }

    private static String describe(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null || m.isEmpty() ? "" : ": " + m);
    }

    // ---- JSON ------------------------------------------------------------------------------------------------

    private static MemorySnapshot decodeJson(byte[] data, String source) {
        Object root;
        try (JsonParser p = Json.FACTORY.createParser(data)) {
            JsonToken t = p.nextToken();
            if (t == null) {
                throw new SnapshotFormatException(source + ": empty JSON document");
            }
            root = Json.TREE.readValue(p, Object.class); // LinkedHashMap, ArrayList, Integer/Long/BigInteger, Double, ...
            if (p.nextToken() != null) {
                throw new SnapshotFormatException(source + ": invalid JSON at " + where(p.currentTokenLocation())
                        + ": data after the end of the document");
            }
        } catch (JsonProcessingException e) {
            JsonLocation loc = e.getLocation();
            String at = loc != null ? " at " + where(loc) : "";
            throw new SnapshotFormatException(source + ": invalid JSON" + at + ": " + e.getOriginalMessage(), e);
        } catch (IOException e) {
            throw new SnapshotFormatException(source + ": invalid JSON: " + describe(e), e);
        }
        return new SnapshotDecoder(source).decode(root);
    }

    private static String where(JsonLocation loc) {
        return "line " + loc.getLineNr() + ", column " + loc.getColumnNr();
    }

    // ---- helpers ---------------------------------------------------------------------------------------------

    /**
     * The content of gzip data (magic bytes 1f 8b, as {@code .pickle.gz} / {@code .json.gz} files), else
     * {@code data} itself. Concatenated gzip members are read as one stream, as Python's {@code gzip} module does.
     */
    private static byte[] gunzipIfCompressed(byte[] data, String source) {
        if (!isGzip(ByteBuffer.wrap(data))) {
            return data;
        }
        try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(data), 1 << 16)) {
            return in.readAllBytes();
        } catch (EOFException e) {
            throw new SnapshotFormatException(source + ": truncated gzip data: the compressed stream ends before its"
                    + " end marker (" + data.length + " bytes read)", e);
        } catch (IOException e) {
            throw new SnapshotFormatException(source + ": corrupt gzip data: " + describe(e), e);
        }
    }

    private static int skipBomAndWhitespace(ByteBuffer data) {
        int n = data.limit();
        int i = 0;
        if (n >= 3 && byteAt(data, 0) == 0xef && byteAt(data, 1) == 0xbb && byteAt(data, 2) == 0xbf) {
            i = 3;
        }
        while (i < n && (byteAt(data, i) == ' ' || byteAt(data, i) == '\t' || byteAt(data, i) == '\n'
                || byteAt(data, i) == '\r')) {
            i++;
        }
        return i;
    }

    private static int byteAt(ByteBuffer data, int i) {
        return data.get(i) & 0xff;
    }

    private static boolean isGzip(ByteBuffer data) {
        return data.limit() >= 2 && byteAt(data, 0) == 0x1f && byteAt(data, 1) == 0x8b;
    }

    private static String hex(ByteBuffer data, int max) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < Math.min(max, data.limit()); i++) {
            if (i > 0) {
                b.append(' ');
            }
            b.append(String.format("%02x", byteAt(data, i)));
        }
        return b.toString();
    }
}
