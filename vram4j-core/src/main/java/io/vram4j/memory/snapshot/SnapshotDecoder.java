package io.vram4j.memory.snapshot;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns the plain objects of a decoded pickle or JSON document (maps, lists, {@code Object[]} tuples,
 * {@code Integer}/{@code Long}/{@code BigInteger}, {@code Double}, {@code String}, {@code Boolean}, null) into a
 * {@link MemorySnapshot}, checking every field and naming the location of the first problem. Accepts every
 * generation of the format (spec section 10.2 and PyTorch 2.0's {@code history} blocks); unknown keys are ignored.
 *
 * <p>Frames and frame lists are shared: objects the pickle memoized once (PyTorch shares them between entries)
 * become one Java object, and equal frames are interned. {@link Frame}s and immutable frame lists that
 * {@link PickleDecoder} already made are taken as they are. One instance per document; not thread-safe.
 */
final class SnapshotDecoder {
    private static final BigInteger TWO_64 = BigInteger.ONE.shiftLeft(64);
    private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
    private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);

    private final String source;
    private final IdentityHashMap<Object, List<Frame>> frameLists = new IdentityHashMap<>();
    private final IdentityHashMap<Object, Frame> frameObjects = new IdentityHashMap<>();
    private final HashMap<Frame, Frame> internedFrames = new HashMap<>();
    private final HashMap<List<Frame>, List<Frame>> internedLists = new HashMap<>();

    /** Frame lists that {@link PickleDecoder} interned (identity); empty for JSON. */
    private final java.util.Set<Object> decodedStacks;

    SnapshotDecoder(String source) {
        this(source, java.util.Set.of());
    }

    /**
     * @param source        the name used in messages
     * @param decodedStacks the frame lists {@link PickleDecoder} already interned, compared by identity
     */
    SnapshotDecoder(String source, java.util.Set<Object> decodedStacks) {
        this.source = source;
        this.decodedStacks = decodedStacks;
    }

    MemorySnapshot decode(Object root) {
        if (root instanceof List<?> bare) {
            return new MemorySnapshot(segments(bare, "segments"), List.of(), Map.of(), List.of());
        }
        if (!(root instanceof Map<?, ?> top)) {
            throw error("top level", "must be a dict with 'segments' or a list of segments, got " + describe(root));
        }
        if (!top.containsKey("segments")) {
            throw error("top level", "missing key 'segments'");
        }
        List<SegmentInfo> segments = segments(top.get("segments"), "segments");
        List<List<TraceEntry>> traces = List.of();
        Object rawTraces = top.get("device_traces");
        if (rawTraces != null) {
            List<?> devices = list(rawTraces, "device_traces");
            traces = new ArrayList<>(devices.size());
            for (int d = 0; d < devices.size(); d++) {
                String path = "device_traces[" + d + "]";
                List<?> entries = list(devices.get(d), path);
                List<TraceEntry> trace = new ArrayList<>(entries.size());
                for (int i = 0; i < entries.size(); i++) {
                    Object raw = entries.get(i); // a pickle's entries are decoded already (traceEntryOrSelf)
                    trace.add(raw instanceof TraceEntry e ? e : entry(raw, path + "[" + i + "]"));
                }
                traces.add(trace);
            }
        }
        Map<String, Object> settings = Map.of();
        Object rawSettings = top.get("allocator_settings");
        if (rawSettings != null) {
            settings = plainDict(rawSettings, "allocator_settings");
        }
        List<Map<String, Object>> annotations = List.of();
        Object rawAnnotations = top.get("external_annotations");
        if (rawAnnotations != null) {
            List<?> list = list(rawAnnotations, "external_annotations");
            annotations = new ArrayList<>(list.size());
            for (int i = 0; i < list.size(); i++) {
                annotations.add(plainDict(list.get(i), "external_annotations[" + i + "]"));
            }
        }
        return new MemorySnapshot(segments, traces, settings, annotations);
    }

    private List<SegmentInfo> segments(Object raw, String path) {
        List<?> list = list(raw, path);
        List<SegmentInfo> result = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            result.add(segment(list.get(i), path + "[" + i + "]"));
        }
        return result;
    }

    private SegmentInfo segment(Object raw, String path) {
        Map<?, ?> m = dict(raw, path);
        int device = int32(m, "device", path);
        long address = size(m, "address", path);
        long totalSize = size(m, "total_size", path);
        long allocatedSize = size(m, "allocated_size", path);
        long activeSize = size(m, "active_size", path);
        long stream = raw64(required(m, "stream", path), "stream", path);
        String type = string(required(m, "segment_type", path), "segment_type", path);
        if (!type.equals(SegmentInfo.SMALL) && !type.equals(SegmentInfo.LARGE)) {
            throw error(path, "field 'segment_type' must be 'small' or 'large', got " + describe(type));
        }
        PoolId pool = PoolId.DEFAULT;
        Object rawPool = m.get("segment_pool_id");
        if (rawPool != null) {
            pool = poolId(rawPool, path);
        }
        boolean expandable = false;
        Object rawExpandable = m.get("is_expandable");
        if (rawExpandable != null) {
            if (!(rawExpandable instanceof Boolean b)) {
                throw error(path, "field 'is_expandable' must be a bool, got " + describe(rawExpandable));
            }
            expandable = b;
        }
        List<Frame> frames = m.containsKey("frames") ? frames(m.get("frames"), path) : List.of();
        String blocksPath = path + ".blocks";
        List<?> rawBlocks = list(required(m, "blocks", path), blocksPath);
        List<BlockInfo> blocks = new ArrayList<>(rawBlocks.size());
        long next = address;
        long requested = 0;
        for (int i = 0; i < rawBlocks.size(); i++) {
            BlockInfo b = block(rawBlocks.get(i), blocksPath + "[" + i + "]", next);
            blocks.add(b);
            next = b.address() + b.size();
            if (b.isActive()) {
                requested += b.requestedSize();
            }
        }
        long requestedSize = m.get("requested_size") != null ? size(m, "requested_size", path) : requested;
        return new SegmentInfo(device, address, totalSize, allocatedSize, activeSize, requestedSize, stream, type,
                pool, expandable, frames, blocks);
    }

    private BlockInfo block(Object raw, String path, long defaultAddress) {
        Map<?, ?> m = dict(raw, path);
        long size = size(m, "size", path);
        String rawState = string(required(m, "state", path), "state", path);
        BlockState state;
        try {
            state = BlockState.fromPytorchName(rawState);
        } catch (IllegalArgumentException e) {
            throw error(path, "field 'state' must be 'active_allocated', 'active_pending_free' or 'inactive', got "
                    + describe(rawState));
        }
        long address = m.get("address") != null ? size(m, "address", path) : defaultAddress;
        Long requested = m.get("requested_size") != null ? size(m, "requested_size", path) : null;
        List<Frame> frames;
        if (m.containsKey("frames")) {
            frames = frames(m.get("frames"), path);
        } else {
            // PyTorch 2.0: frames and the request live in 'history', newest first (as PyTorch's viewer reads it).
            frames = List.of();
            Object rawHistory = m.get("history");
            if (rawHistory != null) {
                List<?> history = list(rawHistory, path + ".history");
                if (!history.isEmpty()) {
                    String hPath = path + ".history[0]";
                    Map<?, ?> h = dict(history.get(0), hPath);
                    if (h.containsKey("frames")) {
                        frames = frames(h.get("frames"), hPath);
                    }
                    if (requested == null && h.get("real_size") != null) {
                        requested = size(h, "real_size", hPath);
                    }
                }
            }
        }
        return new BlockInfo(address, size, requested != null ? requested : size, state, frames);
    }

    /**
     * A trace entry's dict as its {@link TraceEntry}, made while the pickle is decoded ({@link PickleDecoder}'s
     * hook), or the dict itself when it is not a valid entry: {@link #decode} then names the problem with the entry's
     * path, exactly as it does for dicts kept as they are.
     */
    Object traceEntryOrSelf(Object raw) {
        try {
            return entry(raw, "device_traces");
        } catch (SnapshotFormatException e) {
            return raw;
        }
    }

    private TraceEntry entry(Object raw, String path) {
        if (raw instanceof TraceEntry decoded) { // made while decoding (traceEntryOrSelf)
            return decoded;
        }
        Map<?, ?> m = dict(raw, path);
        String rawAction = string(required(m, "action", path), "action", path);
        TraceAction action = TraceAction.lookup(rawAction);
        if (action == null) {
            StringBuilder known = new StringBuilder();
            for (TraceAction a : TraceAction.values()) {
                known.append(known.isEmpty() ? "" : ", ").append(a.pytorchName());
            }
            throw error(path, "unknown action " + PyValues.quote(rawAction) + " (expected one of " + known + ")");
        }
        long addr = 0;
        long deviceFree = 0;
        if (action == TraceAction.OOM) {
            deviceFree = size(m, "device_free", path);
            if (m.get("addr") != null) {
                addr = size(m, "addr", path);
            }
        } else {
            addr = size(m, "addr", path);
        }
        long size = size(m, "size", path);
        long stream = raw64(required(m, "stream", path), "stream", path);
        long time = TraceEntry.NO_TIME;
        Object rawTime = m.get("time_us");
        if (rawTime != null) {
            time = int64(rawTime, "time_us", path);
        }
        List<Frame> frames = m.containsKey("frames") ? frames(m.get("frames"), path) : List.of();
        String compileContext = optionalString(m, "compile_context", path);
        String userMetadata = optionalString(m, "user_metadata", path);
        return new TraceEntry(action, addr, size, stream, time, deviceFree, frames, compileContext, userMetadata);
    }

    /** @param owner the path of the dict holding {@code frames} (the list's own path is built only when read) */
    private List<Frame> frames(Object raw, String owner) {
        if (raw == null) {
            return List.of();
        }
        if (decodedStacks.contains(raw)) { // interned by PickleDecoder already: taken as it is
            @SuppressWarnings("unchecked")
            List<Frame> stack = (List<Frame>) raw;
            return stack;
        }
        List<Frame> cached = frameLists.get(raw);
        if (cached != null) {
            return cached;
        }
        String path = owner + ".frames";
        List<?> list = list(raw, path);
        Frame[] frames = new Frame[list.size()];
        for (int i = 0; i < frames.length; i++) {
            frames[i] = frame(list.get(i), path, i);
        }
        List<Frame> result = internedLists.computeIfAbsent(List.of(frames), k -> k);
        frameLists.put(raw, result);
        return result;
    }

    private Frame frame(Object raw, String listPath, int index) {
        if (raw instanceof Frame f) {
            return internedFrames.computeIfAbsent(f, k -> k);
        }
        Frame cached = frameObjects.get(raw);
        if (cached != null) {
            return cached;
        }
        String path = listPath + "[" + index + "]";
        Map<?, ?> m = dict(raw, path);
        String name = string(required(m, "name", path), "name", path);
        String filename = string(required(m, "filename", path), "filename", path);
        int line = int32(m, "line", path);
        Frame f = internedFrames.computeIfAbsent(new Frame(name, filename, line), k -> k);
        frameObjects.put(raw, f);
        return f;
    }

    private PoolId poolId(Object raw, String path) {
        Object[] items;
        if (raw instanceof Object[] a) {
            items = a;
        } else if (raw instanceof List<?> l) {
            items = l.toArray();
        } else {
            throw error(path, "field 'segment_pool_id' must be a tuple of two integers, got " + describe(raw));
        }
        if (items.length != 2) {
            throw error(path, "field 'segment_pool_id' must be a tuple of two integers, got " + describe(raw));
        }
        return new PoolId(raw64(items[0], "segment_pool_id[0]", path), raw64(items[1], "segment_pool_id[1]", path));
    }

    private Map<String, Object> plainDict(Object raw, String path) {
        Map<?, ?> m = dict(raw, path);
        try {
            @SuppressWarnings("unchecked")
            Map<String, Object> result = (Map<String, Object>) PyValues.normalize(m, path, 0);
            return result;
        } catch (IllegalArgumentException e) {
            throw new SnapshotFormatException(source + ": " + e.getMessage());
        }
    }

    // ---- field access ----------------------------------------------------------------------------------------

    private Object required(Map<?, ?> m, String key, String path) {
        Object v = m.get(key);
        if (v == null) {
            if (m.containsKey(key)) {
                throw error(path, "field '" + key + "' must not be None");
            }
            throw error(path, "missing field '" + key + "'");
        }
        return v;
    }

    /** A non-negative size or address that fits a signed 64-bit integer. */
    private long size(Map<?, ?> m, String key, String path) {
        Object v = required(m, key, path);
        long x = int64(v, key, path);
        if (x < 0) {
            throw error(path, "field '" + key + "' must be a non-negative integer, got " + describe(v));
        }
        return x;
    }

    private int int32(Map<?, ?> m, String key, String path) {
        Object v = required(m, key, path);
        long x = int64(v, key, path);
        if (x < Integer.MIN_VALUE || x > Integer.MAX_VALUE) {
            throw error(path, "field '" + key + "' must be a 32-bit integer, got " + describe(v));
        }
        return (int) x;
    }

    private long int64(Object v, String key, String path) {
        if (v instanceof Integer || v instanceof Long) {
            return ((Number) v).longValue();
        }
        if (v instanceof BigInteger b) {
            if (b.compareTo(LONG_MIN) >= 0 && b.compareTo(LONG_MAX) <= 0) {
                return b.longValue();
            }
            throw error(path, "field '" + key + "' must be a 64-bit integer, got " + describe(v));
        }
        throw error(path, "field '" + key + "' must be an integer, got " + describe(v));
    }

    /** A raw 64-bit handle: signed (−2^63 …) or unsigned (… 2^64 − 1) in Python, kept as the same 64 bits. */
    private long raw64(Object v, String key, String path) {
        if (v instanceof BigInteger b) {
            if (b.compareTo(LONG_MIN) >= 0 && b.compareTo(TWO_64) < 0) {
                return b.longValue(); // the low 64 bits: 2^64 - 1 and -1 are the same handle
            }
            throw error(path, "field '" + key + "' must be a 64-bit integer, got " + describe(v));
        }
        return int64(v, key, path);
    }

    private String string(Object v, String key, String path) {
        if (v instanceof String s) {
            return s;
        }
        throw error(path, "field '" + key + "' must be a str, got " + describe(v));
    }

    private String optionalString(Map<?, ?> m, String key, String path) {
        Object v = m.get(key);
        return v == null ? null : string(v, key, path);
    }

    private List<?> list(Object v, String path) {
        if (v instanceof List<?> l) {
            return l;
        }
        if (v instanceof Object[] tuple) { // PyTorch writes lists; a tuple reads the same (as in PyTorch's viewer)
            return java.util.Arrays.asList(tuple);
        }
        throw error(path, "must be a list, got " + describe(v));
    }

    private Map<?, ?> dict(Object v, String path) {
        if (v instanceof Map<?, ?> m) {
            return m;
        }
        throw error(path, "must be a dict, got " + describe(v));
    }

    private static String describe(Object v) {
        return PyValues.describe(v);
    }

    private SnapshotFormatException error(String path, String message) {
        return new SnapshotFormatException(source + ": " + path + ": " + message);
    }
}
