package io.vram4j.memory.snapshot;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * Decodes a pickle into plain objects in one pass, reading straight from a
 * {@link ByteBuffer} (a memory-mapped file or a wrapped byte array), so a snapshot of a gigabyte or more never has
 * to be on the Java heap as bytes.
 *
 * <p>The objects are those {@link SnapshotDecoder} reads: dicts as compact insertion-ordered {@link Map}s, lists as
 * {@link List}s, tuples as {@code Object[]}, {@code Integer}/{@code Long}/{@code BigInteger}, {@code Double},
 * {@code String}, {@code Boolean}, null, {@code byte[]} and sets as {@link HashSet}. Three things keep big
 * snapshots small in memory:
 * <ul>
 *   <li>with a hook ({@link #decode(ByteBuffer, Set, UnaryOperator)}), each trace entry dict is replaced by what the
 *       hook makes of it (a {@link TraceEntry}) as soon as it is complete, so the dicts of millions of entries never
 *       exist at once;</li>
 *   <li>a frame dict (exactly {@code name}: str, {@code filename}: str, {@code line}: int) becomes an interned
 *       {@link Frame} when it is appended to its list, and a list made only of frames becomes an interned
 *       immutable {@code List<Frame>} when it is stored in its dict; memo slots that held them are updated, so
 *       the memo does not keep the originals alive (PyTorch's pickles memoize every dict and list);</li>
 *   <li>other dicts are arrays of keys and values, not hash tables.</li>
 * </ul>
 *
 * <p>Written by hand rather than with {@code net.razorvine.pickle.Unpickler} because that builds every dict as a
 * hash map and every stack as a fresh list, about 1.7 GB of heap for a 1 GB snapshot of 2 million entries, and
 * reads from an {@code InputStream} only. Opcodes that import or call Python objects are never executed: they are
 * refused like unknown ones. Every length is checked against the input before anything is allocated for it.
 * Errors are {@link IllegalArgumentException}s with the byte offset, or {@link IndexOutOfBoundsException} where the
 * input ends early; {@link PickleScanner#check} then names the first problem in file order. One instance per
 * document; not thread-safe.
 */
final class PickleDecoder {
    /** Items per APPENDS / SETITEMS batch in Python's pickler: a shorter batch ends its container. */
    private static final int BATCH = 1000;
    /** A memoized None (an empty memo slot is null). */
    private static final Object NONE = new Object();

    private final ByteBuffer in;
    private int pos;
    private Object[] stack = new Object[256];
    private int sp;
    private int[] marks = new int[32];
    private int mp;
    private Object[] memo = new Object[1024];
    private int memoCount;
    /** Strs of at most this many bytes are shared ({@link #shortString}). */
    private static final int SHORT_STRING = 32;
    private static final int SHORT_STRINGS = 512;
    private final String[] shortStrings = new String[SHORT_STRINGS];
    private final byte[][] shortStringBytes = new byte[SHORT_STRINGS][];
    private final HashMap<Frame, Frame> frames = new HashMap<>();
    private final HashMap<StackKey, List<Frame>> stacks = new HashMap<>();
    private final HashMap<RunKey, List<Frame>> stacksByBytes = new HashMap<>();
    /** The interned stacks, by identity: {@link SnapshotDecoder} takes these as they are. */
    private final Set<Object> internedStacks;
    /** Turns a complete dict of a device's trace list into its model object (or returns it); null: keep dicts. */
    private final UnaryOperator<Object> traceEntry;

    private PickleDecoder(ByteBuffer in, Set<Object> internedStacks, UnaryOperator<Object> traceEntry) {
        this.in = in.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        this.internedStacks = internedStacks;
        this.traceEntry = traceEntry;
    }

    /**
     * The decoded document.
     *
     * @param root           the top-level object
     * @param internedStacks the frame lists this decoder made (immutable, interned), compared by identity
     */
    record Result(Object root, Set<Object> internedStacks) {
    }

    /**
     * @param data a pickle
     * @return the top-level object and the stacks interned on the way
     * @throws IllegalArgumentException describing a problem, with its byte offset
     * @throws IndexOutOfBoundsException if the input ends inside an opcode or before {@code STOP}
     */
    static Result decode(ByteBuffer data) {
        Set<Object> stacks = Collections.newSetFromMap(new IdentityHashMap<>());
        return new Result(new PickleDecoder(data, stacks, null).run(), stacks);
    }

    /**
     * Decodes a snapshot pickle, handing each trace entry to {@code traceEntry} as soon as its dict is complete, so
     * that the dicts of millions of entries never exist at once. A trace entry is a dict appended to a list that is
     * an element of the list stored under {@code 'device_traces'} in the top-level dict, told by the decoder's stack
     * and marks as Python's pickler lays them out ({@code EMPTY_DICT MARK ... 'device_traces' EMPTY_LIST ...
     * EMPTY_LIST MARK dict... APPENDS}); any other layout keeps plain dicts, which read the same, only with more
     * memory. The memo slot of a converted dict holds the replacement.
     *
     * @param data           a pickle
     * @param internedStacks receives the frame lists interned on the way (an identity set), as they are made, so
     *                       that {@code traceEntry} can recognise them
     * @param traceEntry     given a complete trace entry dict, returns what replaces it in its list: the entry's
     *                       model object, or the dict itself (such as when the dict is not a valid entry)
     * @return the top-level object
     * @throws IllegalArgumentException describing a problem, with its byte offset
     * @throws IndexOutOfBoundsException if the input ends inside an opcode or before {@code STOP}
     */
    static Object decode(ByteBuffer data, Set<Object> internedStacks, UnaryOperator<Object> traceEntry) {
        return new PickleDecoder(data, internedStacks, Objects.requireNonNull(traceEntry, "traceEntry")).run();
    }

    private Object run() {
        // One opcode per call: step() is compiled after a few hundred opcodes, where the same loop in one method
        // runs interpreted until on-stack replacement, tens of thousands of opcodes later (a cold replay decodes
        // its 600,000 opcodes in a fresh JVM).
        while (!step()) {
            // next opcode
        }
        return stack[0];
    }

    /** Executes the opcode at {@code pos}. @return whether it was STOP */
    private boolean step() {
        int start = pos;
        int code = in.get(pos++) & 0xff;
        switch (code) {
            case 0x80 -> { // PROTO
                if ((in.get(pos++) & 0xff) > 5) {
                    throw fail(start, "unsupported pickle protocol");
                }
            }
            case 0x95 -> pos += 8; // FRAME
            case '.' -> { // STOP
                if (sp != 1 || mp != 0) {
                    throw fail(start, "STOP with " + sp + " objects on the stack, " + mp + " open marks");
                }
                return true;
            }
            case '(' -> mark();
            case '}' -> push(new PyDict());
            case ']' -> {
                if (!memoizedStack()) {
                    push(new PyList(4));
                }
            }
            case ')' -> push(new Object[0]);
            case 'd' -> { // DICT
                int k = popMark(start);
                PyDict d = new PyDict();
                putAll(d, k, start);
                push(d);
            }
            case 'l' -> { // LIST
                int k = popMark(start);
                PyList l = new PyList(sp - k);
                addAll(l, k);
                push(l);
            }
            case 't' -> { // TUPLE
                int k = popMark(start);
                Object[] t = Arrays.copyOfRange(stack, k, sp);
                sp = k;
                push(t);
            }
            case 0x85 -> push(new Object[] {pop(start)});
            case 0x86 -> {
                Object b = pop(start);
                push(new Object[] {pop(start), b});
            }
            case 0x87 -> {
                Object c = pop(start);
                Object b = pop(start);
                push(new Object[] {pop(start), b, c});
            }
            case 's' -> { // SETITEM
                if (sp < 3) {
                    throw fail(start, "SETITEM needs a dict, a key and a value on the stack");
                }
                dictAt(sp - 3, start, "SETITEM").put(stack[sp - 2], storedValue(stack[sp - 1]));
                sp -= 2;
            }
            case 'u' -> { // SETITEMS
                int k = popMark(start);
                if (k < 1) {
                    throw fail(start, "SETITEMS without a dict");
                }
                putAll(dictAt(k - 1, start, "SETITEMS"), k, start);
            }
            case 'a' -> { // APPEND
                Object v = pop(start);
                listAt(sp - 1, start, "APPEND").add(inDeviceTrace(sp - 1) ? traceValue(v) : appendedValue(v));
            }
            case 'e' -> { // APPENDS
                int k = popMark(start);
                if (k < 1) {
                    throw fail(start, "APPENDS without a list");
                }
                addAll(listAt(k - 1, start, "APPENDS"), k);
            }
            case 0x8f -> push(new HashSet<>()); // EMPTY_SET
            case 0x90 -> { // ADDITEMS
                int k = popMark(start);
                if (k < 1 || !(stack[k - 1] instanceof Set<?>)) {
                    throw fail(start, "ADDITEMS without a set");
                }
                @SuppressWarnings("unchecked")
                Set<Object> s = (Set<Object>) stack[k - 1];
                s.addAll(Arrays.asList(stack).subList(k, sp));
                sp = k;
            }
            case 0x91 -> { // FROZENSET
                int k = popMark(start);
                Set<Object> s = new HashSet<>(Arrays.asList(stack).subList(k, sp));
                sp = k;
                push(s);
            }
            case 'J' -> {
                push(in.getInt(pos));
                pos += 4;
            }
            case 'K' -> push(in.get(pos++) & 0xff);
            case 'M' -> {
                push(in.getShort(pos) & 0xffff);
                pos += 2;
            }
            case 0x8a -> { // LONG1
                int n = in.get(pos++) & 0xff;
                push(longValue(n, start));
            }
            case 0x8b -> { // LONG4
                int n = in.getInt(pos);
                pos += 4;
                push(longValue(n, start));
            }
            case 'G' -> {
                push(Double.longBitsToDouble(Long.reverseBytes(in.getLong(pos))));
                pos += 8;
            }
            case 0x88 -> push(Boolean.TRUE);
            case 0x89 -> push(Boolean.FALSE);
            case 'N' -> push(null);
            case 'X' -> { // BINUNICODE
                long n = in.getInt(pos) & 0xffffffffL;
                pos += 4;
                push(string(n, start, true));
            }
            case 0x8c -> push(string(in.get(pos++) & 0xff, start, true));
            case 0x8d -> {
                long n = in.getLong(pos);
                pos += 8;
                push(string(n, start, true));
            }
            case 'T' -> { // BINSTRING (Python 2 str): bytes read as Latin-1
                long n = in.getInt(pos);
                pos += 4;
                push(string(n, start, false));
            }
            case 'U' -> push(string(in.get(pos++) & 0xff, start, false));
            case 'B' -> {
                long n = in.getInt(pos) & 0xffffffffL;
                pos += 4;
                push(bytes(n, start));
            }
            case 'C' -> push(bytes(in.get(pos++) & 0xff, start));
            case 0x8e, 0x96 -> {
                long n = in.getLong(pos);
                pos += 8;
                push(bytes(n, start));
            }
            case 'I', 'L', 'F', 'V', 'S', 'g', 'p' -> textOpcode(code, start);
            case 'q' -> memoize(in.get(pos++) & 0xff, start);
            case 'r' -> {
                long idx = in.getInt(pos) & 0xffffffffL;
                pos += 4;
                memoize(idx, start);
            }
            case 0x94 -> memoize(memoCount, start); // MEMOIZE
            case 'h' -> push(memoGet(in.get(pos++) & 0xff, start));
            case 'j' -> {
                long idx = in.getInt(pos) & 0xffffffffL;
                pos += 4;
                push(memoGet(idx, start));
            }
            case '0' -> pop(start); // POP
            case '1' -> sp = popMark(start); // POP_MARK
            case '2' -> { // DUP
                if (sp == 0) {
                    throw fail(start, "DUP on an empty stack");
                }
                push(stack[sp - 1]);
            }
            default -> throw fail(start, "opcode " + PickleScanner.name(code) + " is not supported");
        }
        return false;
    }

    // ---- stack -----------------------------------------------------------------------------------------------

    private void push(Object v) {
        if (sp == stack.length) {
            stack = Arrays.copyOf(stack, sp * 2);
        }
        stack[sp++] = v;
    }

    private Object pop(long at) {
        if (sp <= (mp > 0 ? marks[mp - 1] : 0)) {
            throw fail(at, "stack underflow");
        }
        Object v = stack[--sp];
        stack[sp] = null;
        return v;
    }

    private void mark() {
        if (mp == marks.length) {
            marks = Arrays.copyOf(marks, mp * 2);
        }
        marks[mp++] = sp;
    }

    private int popMark(long at) {
        if (mp == 0) {
            throw fail(at, "no MARK before " + PickleScanner.name(in.get((int) at)));
        }
        return marks[--mp];
    }

    private PyDict dictAt(int i, long at, String op) {
        if (i < 0 || !(stack[i] instanceof PyDict d)) {
            throw fail(at, op + " without a dict");
        }
        return d;
    }

    private PyList listAt(int i, long at, String op) {
        if (i < 0 || !(stack[i] instanceof PyList l)) {
            throw fail(at, op + " without a list");
        }
        return l;
    }

    /** Stores the key/value pairs above index {@code k} into {@code d} and drops them from the stack. */
    private void putAll(PyDict d, int k, long at) {
        if ((sp - k) % 2 != 0) {
            throw fail(at, PickleScanner.name(in.get((int) at)) + " with an odd number of items");
        }
        for (int i = k; i < sp; i += 2) {
            d.put(stack[i], storedValue(stack[i + 1]));
        }
        Arrays.fill(stack, k, sp, null);
        sp = k;
    }

    private void addAll(PyList l, int k) {
        l.ensureCapacity(l.size() + sp - k);
        if (inDeviceTrace(k - 1)) {
            for (int i = k; i < sp; i++) {
                l.add(traceValue(stack[i]));
            }
        } else {
            for (int i = k; i < sp; i++) {
                l.add(appendedValue(stack[i]));
            }
        }
        Arrays.fill(stack, k, sp, null);
        sp = k;
    }

    // ---- trace entries ---------------------------------------------------------------------------------------

    /**
     * Whether the list at {@code stack[listIndex]} is one device's trace: the stack holds, from the bottom, the
     * top-level dict, its complete key/value pairs, the key {@code 'device_traces'}, the list of devices and above
     * it only lists (devices whose traces are complete, then this one). No mark may lie inside the top-level dict's
     * pairs except the one its SETITEMS opened, so a nested dict's {@code 'device_traces'} is not taken for it.
     */
    private boolean inDeviceTrace(int listIndex) {
        if (traceEntry == null || listIndex < 3 || !(stack[0] instanceof PyDict)) {
            return false;
        }
        int j = listIndex - 1;
        while (j > 0 && stack[j] instanceof PyList) {
            j--;
        }
        if (listIndex - j < 2 || (j - 1) % 2 != 0 || !"device_traces".equals(stack[j])) {
            return false;
        }
        for (int m = 0; m < mp; m++) {
            if (marks[m] <= j && marks[m] != 1) {
                return false;
            }
        }
        return true;
    }

    /** A value appended to a device's trace: a complete dict is handed to {@link #traceEntry}. */
    private Object traceValue(Object v) {
        if (v instanceof PyDict d) {
            Object entry = traceEntry.apply(d);
            if (entry != d) {
                replaceMemo(d.memoSlot, entry);
            }
            return entry;
        }
        return v;
    }

    // ---- frames and stacks -----------------------------------------------------------------------------------

    /** A complete dict appended to a list: a frame dict becomes its interned {@link Frame}. */
    private Object appendedValue(Object v) {
        if (v instanceof PyDict d && d.size() == 3 && d.get("name") instanceof String name
                && d.get("filename") instanceof String file && d.get("line") instanceof Integer line) {
            Frame f = frames.computeIfAbsent(new Frame(name, file, line), x -> x);
            replaceMemo(d.memoSlot, f);
            return f;
        }
        return v;
    }

    /** A complete list stored in a dict: a list of frames becomes its interned immutable stack. */
    private Object storedValue(Object v) {
        if (v instanceof PyList l && !l.isEmpty() && l.size() % BATCH != 0) {
            Object[] items = l.toArray();
            for (Object o : items) {
                if (!(o instanceof Frame)) {
                    return v;
                }
            }
            List<Frame> s = internStack(items);
            replaceMemo(l.memoSlot, s);
            return s;
        }
        return v;
    }

    /** The interned immutable stack of these interned frames. */
    private List<Frame> internStack(Object[] items) {
        int hash = 1;
        for (Object o : items) {
            hash = 31 * hash + System.identityHashCode(o); // frames are interned: identity is equality
        }
        StackKey key = new StackKey(items, hash);
        List<Frame> s = stacks.get(key);
        if (s == null) {
            @SuppressWarnings("unchecked")
            List<Frame> copy = (List<Frame>) (List<?>) List.of(items);
            s = copy;
            stacks.put(key, s);
            internedStacks.add(s);
        }
        return s;
    }

    /**
     * The fast path for the commonest shape in a snapshot, a stack whose frames are all memo references:
     * {@code EMPTY_LIST [BINPUT i | LONG_BINPUT i | MEMOIZE] MARK (BINGET | LONG_BINGET)+ APPENDS}. Equal byte runs
     * of memo references give the same stack (Python never rebinds a memo slot; {@link #memoize} forgets the cache
     * if a pickle does), so the stack is found by its bytes without touching its frames. Called with {@link #pos}
     * just past {@code EMPTY_LIST}.
     *
     * @return true if the list was pushed (and memoized) and {@link #pos} is past its {@code APPENDS}; false with
     *     nothing changed when the bytes have another shape or a reference is not a frame
     */
    private boolean memoizedStack() {
        int limit = in.limit();
        int p = pos;
        long put = -1;
        int code = p < limit ? in.get(p) & 0xff : -1;
        if (code == 'q' && p + 1 < limit) {
            put = in.get(p + 1) & 0xff;
            p += 2;
        } else if (code == 'r' && p + 4 < limit) {
            put = in.getInt(p + 1) & 0xffffffffL;
            p += 5;
        } else if (code == 0x94) {
            put = memoCount;
            p += 1;
        }
        if (p >= limit || in.get(p) != '(') {
            return false;
        }
        int runStart = ++p;
        long hash = 0;
        int refs = 0;
        while (p < limit) {
            int c = in.get(p) & 0xff;
            if (c == 'h' && p + 1 < limit) {
                hash = hash * 1_000_003L + (in.get(p + 1) & 0xff);
                p += 2;
            } else if (c == 'j' && p + 4 < limit) {
                hash = hash * 1_000_003L + (in.getInt(p + 1) & 0xffffffffL) + 0x100;
                p += 5;
            } else {
                break;
            }
            refs++;
        }
        if (refs == 0 || refs >= BATCH || p >= limit || in.get(p) != 'e') {
            return false;
        }
        RunKey key = new RunKey(in, runStart, p - runStart, (int) (hash ^ hash >>> 32));
        List<Frame> stack = stacksByBytes.get(key);
        if (stack == null) {
            Object[] items = new Object[refs];
            int q = runStart;
            for (int i = 0; i < refs; i++) {
                long idx;
                if (in.get(q) == 'h') {
                    idx = in.get(q + 1) & 0xff;
                    q += 2;
                } else {
                    idx = in.getInt(q + 1) & 0xffffffffL;
                    q += 5;
                }
                Object v = idx < memoCount ? memo[(int) idx] : null;
                if (!(v instanceof Frame)) {
                    return false; // not yet interned frames, or no frames at all: the general path decides
                }
                items[i] = v;
            }
            stack = internStack(items);
            stacksByBytes.put(new RunKey(in, runStart, p - runStart, key.hash), stack);
        }
        pos = p + 1;
        push(stack);
        if (put >= 0) {
            memoize(put, runStart - 2);
        }
        return true;
    }

    /** A run of memo-reference bytes in the input, compared by content. */
    private record RunKey(ByteBuffer in, int start, int length, int hash) {
        @Override
        public boolean equals(Object o) {
            if (!(o instanceof RunKey k) || k.hash != hash || k.length != length) {
                return false;
            }
            for (int i = 0; i < length; i++) {
                if (in.get(start + i) != k.in.get(k.start + i)) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    /** A stack of interned frames as a hash key: element identity, precomputed hash. */
    private record StackKey(Object[] frames, int hash) {
        @Override
        public boolean equals(Object o) {
            if (!(o instanceof StackKey k) || k.hash != hash || k.frames.length != frames.length) {
                return false;
            }
            for (int i = 0; i < frames.length; i++) {
                if (frames[i] != k.frames[i]) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    private void replaceMemo(int slot, Object v) {
        if (slot >= 0) {
            memo[slot] = v;
        }
    }

    // ---- memo ------------------------------------------------------------------------------------------------

    private void memoize(long idx, long at) {
        if (sp == 0) {
            throw fail(at, "memo put on an empty stack");
        }
        if (idx > at || idx > Integer.MAX_VALUE - 16) { // each memoized object took at least one byte before it
            throw fail(at, "memo index " + idx + " out of range");
        }
        int i = (int) idx;
        if (i >= memo.length) {
            memo = Arrays.copyOf(memo, Math.max(i + 1, memo.length * 2));
        }
        Object v = stack[sp - 1];
        if (memo[i] != null) {
            stacksByBytes.clear(); // a rebound slot: runs of references may mean other frames now
        }
        memo[i] = v == null ? NONE : v;
        memoCount = Math.max(memoCount, i + 1);
        if (v instanceof PyDict d && d.memoSlot < 0) {
            d.memoSlot = i;
        } else if (v instanceof PyList l && l.memoSlot < 0) {
            l.memoSlot = i;
        }
    }

    private Object memoGet(long idx, long at) {
        Object v = idx < memoCount ? memo[(int) idx] : null;
        if (v == null) {
            throw fail(at, "memo index " + idx + " is not defined");
        }
        return v == NONE ? null : v;
    }

    // ---- values ----------------------------------------------------------------------------------------------

    /** LONG1 / LONG4: little-endian two's complement of {@code n} bytes, as Integer, Long or BigInteger. */
    private Object longValue(long n, long at) {
        checkLength(n, at, "long");
        if (n <= 8) {
            long v = 0;
            for (int i = (int) n - 1; i >= 0; i--) {
                v = v << 8 | (in.get(pos + i) & 0xffL);
            }
            if (n > 0 && n < 8) {
                int shift = 64 - 8 * (int) n;
                v = v << shift >> shift; // sign-extend
            }
            pos += (int) n;
            return v == (int) v ? (Object) (int) v : (Object) v;
        }
        byte[] be = new byte[(int) n];
        for (int i = 0; i < n; i++) {
            be[i] = in.get((int) (pos + n - 1 - i));
        }
        pos += (int) n;
        BigInteger b = new BigInteger(be);
        return b.bitLength() < 64 ? (Object) b.longValue() : b;
    }

    private byte[] copy(int from, int n) {
        byte[] b = new byte[n];
        in.get(from, b);
        return b;
    }

    private String string(long n, long at, boolean utf8) {
        checkLength(n, at, "string");
        if (utf8 && n <= SHORT_STRING) {
            return shortString((int) n);
        }
        byte[] b = copy(pos, (int) n);
        pos += (int) n;
        return new String(b, utf8 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
    }

    /** @return whether the input at {@code pos} starts with {@code b} */
    private boolean sameBytes(byte[] b) {
        for (int i = 0; i < b.length; i++) {
            if (in.get(pos + i) != b[i]) {
                return false;
            }
        }
        return true;
    }

    /**
     * A short str, shared with the earlier one of the same bytes when there was one: a snapshot repeats values such
     * as {@code compile_context} 'N/A' once per trace entry without memoizing them (23,105 copies in a 2 MB file).
     * The first of each is interned, so a dict key equals the literal a reader looks it up with by identity
     * ({@link PyDict#get}).
     */
    private String shortString(int n) {
        int h = n;
        for (int i = 0; i < n; i++) {
            h = 31 * h + in.get(pos + i);
        }
        int slot = (h ^ h >>> 16) & (SHORT_STRINGS - 1);
        byte[] seen = shortStringBytes[slot];
        if (seen != null && seen.length == n && sameBytes(seen)) {
            pos += n;
            return shortStrings[slot];
        }
        byte[] b = copy(pos, n);
        pos += n;
        String s = new String(b, StandardCharsets.UTF_8).intern();
        shortStringBytes[slot] = b;
        shortStrings[slot] = s;
        return s;
    }

    private byte[] bytes(long n, long at) {
        checkLength(n, at, "bytes");
        byte[] b = copy(pos, (int) n);
        pos += (int) n;
        return b;
    }

    /** Refuses a length that is negative or runs past the end of the input, before anything is allocated for it. */
    private void checkLength(long n, long at, String what) {
        if (n < 0 || n > in.limit() - pos) {
            throw fail(at, what + " of " + n + " bytes runs past the end of the input");
        }
    }

    /** The protocol-0 text opcodes that carry a plain value: INT, LONG, FLOAT, UNICODE (ASCII), GET, PUT. */
    private void textOpcode(int code, long at) {
        int end = pos;
        while (in.get(end) != '\n') {
            end++;
        }
        String text = new String(copy(pos, end - pos), StandardCharsets.ISO_8859_1);
        pos = end + 1;
        try {
            switch (code) {
                case 'I' -> push(text.equals("00") ? Boolean.FALSE : text.equals("01") ? Boolean.TRUE
                        : narrow(new BigInteger(text)));
                case 'L' -> push(narrow(new BigInteger(text.endsWith("L") ? text.substring(0, text.length() - 1) : text)));
                case 'F' -> push(Double.parseDouble(text));
                case 'V' -> {
                    if (text.indexOf('\\') >= 0) {
                        throw fail(at, "UNICODE with escapes is not supported");
                    }
                    push(text);
                }
                case 'g' -> push(memoGet(Long.parseLong(text), at));
                case 'p' -> memoize(Long.parseLong(text), at);
                default -> throw fail(at, "opcode " + PickleScanner.name(code) + " is not supported");
            }
        } catch (NumberFormatException e) {
            throw fail(at, "bad number '" + text + "' in " + PickleScanner.name(code));
        }
    }

    private static Object narrow(BigInteger b) {
        if (b.bitLength() < 32) {
            return b.intValue();
        }
        return b.bitLength() < 64 ? (Object) b.longValue() : b;
    }

    private static IllegalArgumentException fail(long at, String what) {
        return new IllegalArgumentException(what + " at byte offset " + at);
    }

    // ---- containers ------------------------------------------------------------------------------------------

    /** A list under construction, remembering the memo slot that holds it. */
    static final class PyList extends ArrayList<Object> {
        int memoSlot = -1;

        PyList(int capacity) {
            super(capacity);
        }
    }

    /**
     * A dict: keys and values in insertion order in one array, looked up linearly (snapshot dicts have a dozen
     * keys at most; a bigger one still works, only slower). Keys compare with {@code equals}, as Python's do for
     * the str and int keys of a snapshot.
     */
    static final class PyDict extends AbstractMap<Object, Object> {
        private Object[] kv = new Object[16];
        private int n;
        int memoSlot = -1;

        private int indexOf(Object key) {
            for (int i = 0; i < n; i++) { // short keys are interned (shortString): literals match by identity
                if (kv[2 * i] == key) {
                    return i;
                }
            }
            for (int i = 0; i < n; i++) {
                Object k = kv[2 * i];
                if (k != null && k.equals(key)) {
                    return i;
                }
            }
            return -1;
        }

        @Override
        public Object get(Object key) {
            int i = indexOf(key);
            return i < 0 ? null : kv[2 * i + 1];
        }

        @Override
        public boolean containsKey(Object key) {
            return indexOf(key) >= 0;
        }

        @Override
        public Object put(Object key, Object value) {
            int i = indexOf(key);
            if (i >= 0) {
                Object old = kv[2 * i + 1];
                kv[2 * i + 1] = value;
                return old;
            }
            if (2 * n == kv.length) {
                kv = Arrays.copyOf(kv, kv.length * 2);
            }
            kv[2 * n] = key;
            kv[2 * n + 1] = value;
            n++;
            return null;
        }

        @Override
        public int size() {
            return n;
        }

        @Override
        public Set<Entry<Object, Object>> entrySet() {
            return new AbstractSet<>() {
                @Override
                public Iterator<Entry<Object, Object>> iterator() {
                    return new Iterator<>() {
                        private int i;

                        @Override
                        public boolean hasNext() {
                            return i < n;
                        }

                        @Override
                        public Entry<Object, Object> next() {
                            if (i >= n) {
                                throw new NoSuchElementException();
                            }
                            i++;
                            return new SimpleImmutableEntry<>(kv[2 * i - 2], kv[2 * i - 1]);
                        }
                    };
                }

                @Override
                public int size() {
                    return n;
                }
            };
        }
    }
}
