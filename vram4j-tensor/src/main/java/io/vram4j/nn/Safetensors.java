package io.vram4j.nn;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.vram4j.autograd.NoGrad;
import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Tensor;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads and writes the safetensors format: an 8-byte little-endian header length {@code N}, {@code N} bytes of
 * JSON mapping each tensor name to {@code {"dtype": "F32"|"F16"|"BF16"|"I32"|"I64"|"BOOL", "shape": [...],
 * "data_offsets": [begin, end]}} (offsets relative to the data section) plus an optional
 * {@code "__metadata__"} string map, then the little-endian tensor bytes, back to back. Files are written with
 * the header padded by spaces to a multiple of 8 bytes and tensors in the map's order.
 *
 * <p>All errors are {@link SafetensorsException}s naming the file.
 */
public final class Safetensors {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long MAX_HEADER = 100L << 20;

    private Safetensors() {
    }

    /**
     * @param file the file to (over)write
     * @param tensors names to tensors (host only), written in iteration order
     * @throws IOException on write failure
     * @throws UnsupportedOperationException for tensors on a device without storage
     */
    public static void save(Path file, Map<String, ? extends Tensor> tensors) throws IOException {
        save(file, tensors, Map.of());
    }

    /**
     * @param metadata free-form string pairs stored under {@code __metadata__}
     */
    public static void save(Path file, Map<String, ? extends Tensor> tensors, Map<String, String> metadata)
            throws IOException {
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            throw new UnsupportedOperationException("safetensors writing needs a little-endian platform");
        }
        ObjectNode header = JSON.createObjectNode();
        if (!metadata.isEmpty()) {
            ObjectNode md = header.putObject("__metadata__");
            metadata.forEach(md::put);
        }
        long pos = 0;
        for (Map.Entry<String, ? extends Tensor> e : tensors.entrySet()) {
            Tensor t = e.getValue();
            if (!t.device().hasStorage()) {
                throw new UnsupportedOperationException("cannot save '" + e.getKey() + "' from " + t.device().description()
                        + ": the device has no data");
            }
            ObjectNode n = header.putObject(e.getKey());
            n.put("dtype", t.dtype().safetensorsName());
            ArrayNode shape = n.putArray("shape");
            for (int d : t.shape()) {
                shape.add(d);
            }
            ArrayNode off = n.putArray("data_offsets");
            off.add(pos);
            pos += t.nbytes();
            off.add(pos);
        }
        byte[] json = JSON.writeValueAsBytes(header);
        int padded = (json.length + 7) / 8 * 8;
        ByteBuffer head = ByteBuffer.allocate(8 + padded).order(ByteOrder.LITTLE_ENDIAN);
        head.putLong(padded).put(json);
        while (head.hasRemaining()) {
            head.put((byte) ' ');
        }
        head.flip();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            writeFully(ch, head);
            try (NoGrad ng = NoGrad.enter()) {
                for (Tensor t : tensors.values()) {
                    try (Tensor c = t.contiguous()) {
                        writeBytes(ch, c);
                    }
                }
            }
        }
    }

    /** Writes a contiguous tensor's bytes: its memory on {@code host}, a copy to the host from device memory. */
    private static void writeBytes(FileChannel ch, Tensor c) throws IOException {
        if (c.device().hostAccessible()) {
            writeFully(ch, c.data().asByteBuffer());
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(Math.max(1, c.nbytes()));
            c.copyBytesTo(host);
            writeFully(ch, host.asSlice(0, c.nbytes()).asByteBuffer());
        }
    }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /** One entry of a parsed header. */
    private record Entry(String name, DType dtype, int[] shape, long begin, long end) {
    }

    /**
     * Reads every tensor of a file onto a device (on {@code sim}: shapes and memory only).
     *
     * @return names to new tensors in file order; the caller closes them
     * @throws SafetensorsException for a truncated or malformed file
     */
    public static Map<String, Tensor> load(Path file, Device device) throws IOException {
        Map<String, Tensor> out = new LinkedHashMap<>();
        read(file, (entries, data) -> {
            for (Entry e : entries) {
                Tensor t = device.empty(e.dtype, e.shape);
                out.put(e.name, t);
                if (device.hasStorage()) {
                    t.copyBytesFrom(data.asSlice(e.begin, e.end - e.begin));
                }
            }
        }, () -> out.values().forEach(Tensor::close));
        return out;
    }

    /**
     * Reads a file into existing tensors, converting dtypes where they differ.
     *
     * @param targets names to destination tensors; every one must be in the file with the same shape, and the
     *     file must hold nothing else
     * @throws SafetensorsException for a malformed file, a missing or unexpected name, or a shape mismatch
     */
    public static void loadInto(Path file, Map<String, ? extends Tensor> targets) throws IOException {
        read(file, (entries, data) -> {
            Map<String, Entry> byName = new LinkedHashMap<>();
            for (Entry e : entries) {
                byName.put(e.name, e);
            }
            List<String> missing = new ArrayList<>();
            for (String n : targets.keySet()) {
                if (!byName.containsKey(n)) {
                    missing.add(n);
                }
            }
            List<String> unexpected = new ArrayList<>();
            for (String n : byName.keySet()) {
                if (!targets.containsKey(n)) {
                    unexpected.add(n);
                }
            }
            if (!missing.isEmpty() || !unexpected.isEmpty()) {
                throw new SafetensorsException(file + ": tensors do not match the model (missing " + missing
                        + ", unexpected " + unexpected + ")");
            }
            for (Map.Entry<String, ? extends Tensor> t : targets.entrySet()) {
                Entry e = byName.get(t.getKey());
                if (!Arrays.equals(e.shape, t.getValue().shape())) {
                    throw new SafetensorsException(file + ": '" + e.name + "' has shape " + Arrays.toString(e.shape)
                            + " in the file but " + Arrays.toString(t.getValue().shape()) + " in the model");
                }
            }
            for (Map.Entry<String, ? extends Tensor> t : targets.entrySet()) {
                Entry e = byName.get(t.getKey());
                Tensor dst = t.getValue();
                if (!dst.device().hasStorage()) {
                    continue;
                }
                try (NoGrad ng = NoGrad.enter(); Tensor src = dst.device().empty(e.dtype, e.shape)) {
                    src.copyBytesFrom(data.asSlice(e.begin, e.end - e.begin));
                    dst.copyFrom(src);
                }
            }
        }, () -> { });
    }

    @FunctionalInterface
    private interface Body {
        void accept(List<Entry> entries, MemorySegment data) throws IOException;
    }

    private static void read(Path file, Body body, Runnable onFailure) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new SafetensorsException(file + ": not a file");
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ); Arena arena = Arena.ofConfined()) {
            long size = ch.size();
            if (size < 8) {
                throw new SafetensorsException(file + ": truncated safetensors file (" + size
                        + " bytes; it must start with an 8-byte header length)");
            }
            MemorySegment all = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            long n = all.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0);
            if (n < 2 || n > MAX_HEADER) {
                throw new SafetensorsException(file + ": invalid header length " + n + " (not a safetensors file?)");
            }
            if (n > size - 8) {
                throw new SafetensorsException(file + ": truncated safetensors file: the header needs " + n
                        + " bytes but only " + (size - 8) + " follow the length");
            }
            byte[] hb = all.asSlice(8, n).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            List<Entry> entries = parseHeader(file, new String(hb, StandardCharsets.UTF_8));
            MemorySegment data = all.asSlice(8 + n);
            long expected = entries.isEmpty() ? 0 : entries.get(entries.size() - 1).end;
            if (data.byteSize() < expected) {
                throw new SafetensorsException(file + ": truncated safetensors file: the header describes " + expected
                        + " data bytes but only " + data.byteSize() + " are present");
            }
            try {
                body.accept(entries, data);
            } catch (IOException | RuntimeException e) {
                onFailure.run();
                throw e;
            }
        }
    }

    private static List<Entry> parseHeader(Path file, String text) throws SafetensorsException {
        JsonNode root;
        try {
            root = JSON.readTree(text.strip());
        } catch (JsonProcessingException e) {
            throw new SafetensorsException(file + ": the header is not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (root == null || !root.isObject()) {
            throw new SafetensorsException(file + ": the header must be a JSON object");
        }
        List<Entry> entries = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            String name = f.getKey();
            if (name.equals("__metadata__")) {
                continue;
            }
            JsonNode v = f.getValue();
            JsonNode dt = v.get("dtype");
            JsonNode shape = v.get("shape");
            JsonNode offs = v.get("data_offsets");
            if (dt == null || !dt.isTextual() || shape == null || !shape.isArray() || offs == null || !offs.isArray()
                    || offs.size() != 2) {
                throw new SafetensorsException(file + ": tensor '" + name
                        + "' needs \"dtype\" (string), \"shape\" (array) and \"data_offsets\" ([begin, end])");
            }
            DType dtype;
            try {
                dtype = DType.fromSafetensors(dt.asText());
            } catch (IllegalArgumentException e) {
                throw new SafetensorsException(file + ": tensor '" + name + "': " + e.getMessage(), e);
            }
            int[] s = new int[shape.size()];
            long numel = 1;
            for (int i = 0; i < s.length; i++) {
                JsonNode d = shape.get(i);
                if (!d.canConvertToInt() || d.asInt() < 0) {
                    throw new SafetensorsException(file + ": tensor '" + name + "' has an invalid shape " + shape);
                }
                s[i] = d.asInt();
                numel = Math.multiplyExact(numel, s[i]);
            }
            long begin = offs.get(0).asLong(-1);
            long end = offs.get(1).asLong(-1);
            if (!offs.get(0).canConvertToLong() || !offs.get(1).canConvertToLong() || begin < 0 || end < begin) {
                throw new SafetensorsException(file + ": tensor '" + name + "' has invalid data_offsets " + offs);
            }
            if (end - begin != numel * dtype.byteSize()) {
                throw new SafetensorsException(file + ": tensor '" + name + "' has " + (end - begin) + " bytes of data but "
                        + dtype.safetensorsName() + Arrays.toString(s) + " needs " + numel * dtype.byteSize());
            }
            entries.add(new Entry(name, dtype, s, begin, end));
        }
        entries.sort(Comparator.comparingLong(Entry::begin));
        long pos = 0;
        for (Entry e : entries) {
            if (e.begin != pos) {
                throw new SafetensorsException(file + ": tensor '" + e.name + "' starts at data offset " + e.begin
                        + " but " + pos + " was expected (tensors must be contiguous and not overlap)");
            }
            pos = e.end;
        }
        return entries;
    }
}
