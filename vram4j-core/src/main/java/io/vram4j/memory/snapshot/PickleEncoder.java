package io.vram4j.memory.snapshot;

import java.io.IOException;
import java.io.OutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A minimal protocol-2 pickler for snapshot data, written so that both Python's {@code pickle} and the small
 * JavaScript unpickler of PyTorch's {@code memory_viz} page ({@code unpickle()} in
 * {@code torch/utils/viz/MemoryViz.js}) load the result. That unpickler throws on any opcode outside its list, so
 * only these opcodes are emitted:
 *
 * <table>
 * <caption>Opcodes emitted</caption>
 * <tr><th>opcode</th><th>for</th><th>why this one</th></tr>
 * <tr><td>{@code PROTO 2}</td><td>header</td><td>the viewer accepts protocols 2 to 4; 2 has every opcode below</td></tr>
 * <tr><td>{@code EMPTY_DICT}, {@code MARK}, {@code SETITEMS}</td><td>dicts</td><td>the form Python itself writes;
 *     {@code SETITEMS} is exercised by every real snapshot ({@code SETITEM} is marked untested in the viewer)</td></tr>
 * <tr><td>{@code EMPTY_LIST}, {@code MARK}, {@code APPENDS}, {@code APPEND}</td><td>lists</td><td>batches of at most
 *     1000 items as Python writes them: the viewer pushes a whole batch with one {@code push(...spread)}, which
 *     must stay far below JavaScript's argument limit; {@code APPEND} for a batch of one</td></tr>
 * <tr><td>{@code BININT1}, {@code BININT2}, {@code BININT}</td><td>int in [−2^31, 2^31)</td><td>Python's choice;
 *     the viewer decodes {@code BININT} as signed 32-bit, the others unsigned</td></tr>
 * <tr><td>{@code LONG1}</td><td>other ints (addresses above 2^31, {@code time_us}, unsigned stream handles)</td>
 *     <td>the viewer has no {@code BININT8}; it decodes {@code LONG1} of up to 8 bytes as a Number (exact below
 *     2^53, which covers every address and time) and of 9 bytes (unsigned handles ≥ 2^63) as a BigInt.
 *     Minimal little-endian two's complement, as Python writes it</td></tr>
 * <tr><td>{@code BINUNICODE}</td><td>str</td><td>UTF-8 with a 4-byte length; {@code SHORT_BINUNICODE} is
 *     protocol 4</td></tr>
 * <tr><td>{@code BINFLOAT}</td><td>float</td><td>8 bytes big-endian</td></tr>
 * <tr><td>{@code NEWTRUE}, {@code NEWFALSE}, {@code NONE}</td><td>bool, None</td><td></td></tr>
 * <tr><td>{@code TUPLE2}; {@code EMPTY_TUPLE}, {@code TUPLE1}, {@code TUPLE3}, {@code MARK}+{@code TUPLE}</td>
 *     <td>{@code segment_pool_id}; other tuples</td><td>as Python writes them</td></tr>
 * <tr><td>{@code BINPUT}/{@code LONG_BINPUT}, {@code BINGET}/{@code LONG_BINGET}</td><td>repeated strings, frame
 *     dicts and frame lists</td><td>the memo keeps the file near the size of PyTorch's own (stacks repeat across
 *     thousands of entries); protocol 2 has no {@code MEMOIZE}. The viewer stores {@code memo[index]} for both
 *     put forms</td></tr>
 * <tr><td>{@code STOP}</td><td>end</td><td></td></tr>
 * </table>
 *
 * <p>No {@code FRAME}, bytes, sets or class references are ever written. Dict keys are written in the order given.
 * Only immutable things are memoized (strings, frame dicts and frame lists, which PyTorch also shares); the
 * viewer annotates entry, segment and block dicts in place, so those are never shared. Not thread-safe; one
 * instance per output.
 *
 * <h2>Why this is hand-written rather than the pickle library's {@code Pickler}</h2>
 * {@code net.razorvine.pickle.Pickler} memoizes by value by default (its {@code valueCompare} flag): it writes a second dict that is
 * {@code equals} to an earlier one as a {@code BINGET} of the first. Trace entries and blocks are often equal (the
 * same size freed and allocated at the same address from the same stack), so they would arrive in the viewer as one
 * shared JavaScript object, and {@code memory_viz} edits those objects in place (it adds fields to entries and
 * blocks while it builds the timeline), so one edit would show up in every "copy". This encoder controls exactly
 * what is shared (strings, frames and frame lists only) and emits only the opcodes the viewer's unpickler knows.
 */
final class PickleEncoder {
    static final int PROTO = 0x80;
    static final int STOP = '.';
    static final int MARK = '(';
    static final int EMPTY_DICT = '}';
    static final int SETITEMS = 'u';
    static final int EMPTY_LIST = ']';
    static final int APPEND = 'a';
    static final int APPENDS = 'e';
    static final int BININT = 'J';
    static final int BININT1 = 'K';
    static final int BININT2 = 'M';
    static final int LONG1 = 0x8a;
    static final int BINUNICODE = 'X';
    static final int BINFLOAT = 'G';
    static final int NEWTRUE = 0x88;
    static final int NEWFALSE = 0x89;
    static final int NONE = 'N';
    static final int EMPTY_TUPLE = ')';
    static final int TUPLE = 't';
    static final int TUPLE1 = 0x85;
    static final int TUPLE2 = 0x86;
    static final int TUPLE3 = 0x87;
    static final int BINPUT = 'q';
    static final int LONG_BINPUT = 'r';
    static final int BINGET = 'h';
    static final int LONG_BINGET = 'j';

    /** Items per {@code APPENDS}/{@code SETITEMS} batch, as in Python's pickler. */
    static final int BATCH = 1000;

    private final OutputStream out;
    private final byte[] buf = new byte[1 << 16];
    private int len;
    private int nextMemo;
    private final Map<String, Integer> stringMemo = new HashMap<>();
    private final Map<Frame, Integer> frameMemo = new HashMap<>();
    private final Map<List<Frame>, Integer> frameListMemo = new HashMap<>();

    /** Whether equal frame lists are written once and then referenced (false: each list written anew, as PyTorch). */
    private boolean shareFrameLists = true;

    PickleEncoder(OutputStream out) {
        this.out = out;
    }

    /** Writes {@code PROTO 2}. */
    void header() throws IOException {
        op(PROTO);
        op(2);
    }

    /** Writes {@code STOP} and flushes the buffer to the stream (which stays open). */
    void finish() throws IOException {
        op(STOP);
        flushBuffer();
        out.flush();
    }

    void op(int b) throws IOException {
        if (len == buf.length) {
            flushBuffer();
        }
        buf[len++] = (byte) b;
    }

    private void bytes(byte[] b) throws IOException {
        if (b.length > buf.length - len) {
            flushBuffer();
            if (b.length > buf.length) {
                out.write(b);
                return;
            }
        }
        System.arraycopy(b, 0, buf, len, b.length);
        len += b.length;
    }

    private void le32(long v) throws IOException {
        op((int) v);
        op((int) (v >>> 8));
        op((int) (v >>> 16));
        op((int) (v >>> 24));
    }

    private void flushBuffer() throws IOException {
        if (len > 0) {
            out.write(buf, 0, len);
            len = 0;
        }
    }

    // ---- scalars ---------------------------------------------------------------------------------------------

    /** A signed 64-bit integer. */
    void integer(long v) throws IOException {
        if (v >= 0 && v <= 0xff) {
            op(BININT1);
            op((int) v);
        } else if (v >= 0 && v <= 0xffff) {
            op(BININT2);
            op((int) v);
            op((int) (v >>> 8));
        } else if (v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) {
            op(BININT);
            le32(v);
        } else {
            int n = 1;
            while (n < 8 && (v < -(1L << (8 * n - 1)) || v >= 1L << (8 * n - 1))) {
                n++;
            }
            op(LONG1);
            op(n);
            for (int i = 0; i < n; i++) {
                op((int) (v >>> (8 * i)));
            }
        }
    }

    /** A raw 64-bit value written as Python's unsigned integer (values with the top bit set become ≥ 2^63). */
    void unsigned(long v) throws IOException {
        if (v >= 0) {
            integer(v);
            return;
        }
        op(LONG1);
        op(9);
        for (int i = 0; i < 8; i++) {
            op((int) (v >>> (8 * i)));
        }
        op(0);
    }

    void bigInteger(BigInteger b) throws IOException {
        if (b.bitLength() < 64) {
            integer(b.longValue());
            return;
        }
        byte[] be = b.toByteArray(); // minimal big-endian two's complement
        if (be.length > 255) {
            throw new IllegalArgumentException("integer too large for LONG1: " + b.bitLength() + " bits");
        }
        op(LONG1);
        op(be.length);
        for (int i = be.length - 1; i >= 0; i--) {
            op(be[i]);
        }
    }

    void floating(double d) throws IOException {
        op(BINFLOAT);
        long bits = Double.doubleToRawLongBits(d);
        for (int i = 7; i >= 0; i--) {
            op((int) (bits >>> (8 * i)));
        }
    }

    void bool(boolean b) throws IOException {
        op(b ? NEWTRUE : NEWFALSE);
    }

    void none() throws IOException {
        op(NONE);
    }

    /** A str, memoized: the second and later occurrences are memo gets. */
    void string(String s) throws IOException {
        Integer idx = stringMemo.get(s);
        if (idx != null) {
            get(idx);
            return;
        }
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        op(BINUNICODE);
        le32(utf8.length);
        bytes(utf8);
        stringMemo.put(s, put());
    }

    // ---- containers ------------------------------------------------------------------------------------------

    /** Starts a dict: {@code EMPTY_DICT MARK}; write key/value pairs (at most {@link #BATCH}), then {@link #endDict}. */
    void beginDict() throws IOException {
        op(EMPTY_DICT);
        op(MARK);
    }

    void endDict() throws IOException {
        op(SETITEMS);
    }

    /** Writes a whole list, batched as Python does. */
    <T> void list(List<T> items, ItemWriter<T> writer) throws IOException {
        op(EMPTY_LIST);
        appendItems(items, writer);
    }

    private <T> void appendItems(List<T> items, ItemWriter<T> writer) throws IOException {
        int n = items.size();
        for (int start = 0; start < n; start += BATCH) {
            int end = Math.min(n, start + BATCH);
            if (end - start == 1) {
                writer.write(items.get(start));
                op(APPEND);
            } else {
                op(MARK);
                for (int i = start; i < end; i++) {
                    writer.write(items.get(i));
                }
                op(APPENDS);
            }
        }
    }

    /** A frame dict {@code {'name', 'filename', 'line'}}, memoized by value. */
    void frame(Frame f) throws IOException {
        Integer idx = frameMemo.get(f);
        if (idx != null) {
            get(idx);
            return;
        }
        op(EMPTY_DICT);
        int memo = put();
        op(MARK);
        string("name");
        string(f.name());
        string("filename");
        string(f.filename());
        string("line");
        integer(f.line());
        op(SETITEMS);
        frameMemo.put(f, memo);
    }

    /**
     * Makes {@link #frames} write every list anew (its frames still shared), the layout of PyTorch's own pickles:
     * {@code _snapshot()} shares frame dicts between stacks but builds one list per traceback.
     */
    void perEntryFrameLists() {
        shareFrameLists = false;
    }

    /** A list of frames; a non-empty one is memoized by value unless {@link #perEntryFrameLists} was called. */
    void frames(List<Frame> frames) throws IOException {
        if (frames.isEmpty()) {
            op(EMPTY_LIST);
            return;
        }
        if (!shareFrameLists) {
            op(EMPTY_LIST);
            appendItems(frames, this::frame);
            return;
        }
        Integer idx = frameListMemo.get(frames);
        if (idx != null) {
            get(idx);
            return;
        }
        op(EMPTY_LIST);
        int memo = put();
        appendItems(frames, this::frame);
        frameListMemo.put(frames, memo);
    }

    /** A 2-tuple of raw 64-bit values, such as {@code segment_pool_id}. */
    void unsignedPair(long a, long b) throws IOException {
        unsigned(a);
        unsigned(b);
        op(TUPLE2);
    }

    /**
     * A plain Python value: null, Boolean, Integer/Long/Short/Byte, BigInteger, Double/Float, String, List,
     * Object[] (tuple) or Map.
     */
    void value(Object v) throws IOException {
        if (v == null) {
            none();
        } else if (v instanceof String s) {
            string(s);
        } else if (v instanceof Boolean b) {
            bool(b);
        } else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
            integer(((Number) v).longValue());
        } else if (v instanceof BigInteger b) {
            bigInteger(b);
        } else if (v instanceof Double || v instanceof Float) {
            floating(((Number) v).doubleValue());
        } else if (v instanceof List<?> l) {
            list(l, this::value);
        } else if (v instanceof Object[] t) {
            tuple(t);
        } else if (v instanceof Map<?, ?> m) {
            dict(m);
        } else {
            throw new IllegalArgumentException("cannot pickle a " + v.getClass().getName());
        }
    }

    private void tuple(Object[] t) throws IOException {
        switch (t.length) {
            case 0 -> op(EMPTY_TUPLE);
            case 1 -> {
                value(t[0]);
                op(TUPLE1);
            }
            case 2 -> {
                value(t[0]);
                value(t[1]);
                op(TUPLE2);
            }
            case 3 -> {
                value(t[0]);
                value(t[1]);
                value(t[2]);
                op(TUPLE3);
            }
            default -> {
                op(MARK);
                for (Object o : t) {
                    value(o);
                }
                op(TUPLE);
            }
        }
    }

    private void dict(Map<?, ?> m) throws IOException {
        op(EMPTY_DICT);
        int inBatch = 0;
        for (Map.Entry<?, ?> e : m.entrySet()) {
            if (inBatch == 0) {
                op(MARK);
            }
            value(e.getKey()); // always a str for snapshot data (MemorySnapshot checks); any value for tests
            value(e.getValue());
            if (++inBatch == BATCH) {
                op(SETITEMS);
                inBatch = 0;
            }
        }
        if (inBatch > 0) {
            op(SETITEMS);
        }
    }

    // ---- memo ------------------------------------------------------------------------------------------------

    private int put() throws IOException {
        int idx = nextMemo++;
        if (idx < 256) {
            op(BINPUT);
            op(idx);
        } else {
            op(LONG_BINPUT);
            le32(idx);
        }
        return idx;
    }

    private void get(int idx) throws IOException {
        if (idx < 256) {
            op(BINGET);
            op(idx);
        } else {
            op(LONG_BINGET);
            le32(idx);
        }
    }

    /** Writes one list item. */
    @FunctionalInterface
    interface ItemWriter<T> {
        void write(T item) throws IOException;
    }
}
