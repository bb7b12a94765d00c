package io.vram4j.memory.snapshot;

import java.nio.ByteBuffer;

/**
 * A validating pass over a pickle's opcodes before it is decoded: finds truncation (an argument running past the
 * end, or no {@code STOP}), unknown opcodes, unsupported protocols and the opcodes that build class instances
 * ({@code GLOBAL}, {@code REDUCE}, ...), which a memory snapshot never contains and which must not be executed.
 * Each problem is reported with its byte offset. Stateless.
 */
final class PickleScanner {
    private static final int UNKNOWN = -1;
    private static final int NONE = 0;
    private static final int LEN1 = 101;
    private static final int LEN4 = 104;
    private static final int LEN8 = 108;
    private static final int LINE = 201;
    private static final int TWO_LINES = 202;

    private static final int[] ARG = new int[256];
    private static final String[] NAME = new String[256];
    private static final boolean[] FORBIDDEN = new boolean[256];

    static {
        java.util.Arrays.fill(ARG, UNKNOWN);
        op('(', "MARK", NONE);
        op('.', "STOP", NONE);
        op('0', "POP", NONE);
        op('1', "POP_MARK", NONE);
        op('2', "DUP", NONE);
        op('F', "FLOAT", LINE);
        op('I', "INT", LINE);
        op('J', "BININT", 4);
        op('K', "BININT1", 1);
        op('L', "LONG", LINE);
        op('M', "BININT2", 2);
        op('N', "NONE", NONE);
        op('S', "STRING", LINE);
        op('T', "BINSTRING", LEN4);
        op('U', "SHORT_BINSTRING", LEN1);
        op('V', "UNICODE", LINE);
        op('X', "BINUNICODE", LEN4);
        op('a', "APPEND", NONE);
        op('d', "DICT", NONE);
        op('}', "EMPTY_DICT", NONE);
        op('e', "APPENDS", NONE);
        op('g', "GET", LINE);
        op('h', "BINGET", 1);
        op('j', "LONG_BINGET", 4);
        op('l', "LIST", NONE);
        op(']', "EMPTY_LIST", NONE);
        op('p', "PUT", LINE);
        op('q', "BINPUT", 1);
        op('r', "LONG_BINPUT", 4);
        op('s', "SETITEM", NONE);
        op('t', "TUPLE", NONE);
        op(')', "EMPTY_TUPLE", NONE);
        op('u', "SETITEMS", NONE);
        op('G', "BINFLOAT", 8);
        op(0x80, "PROTO", 1);
        op(0x85, "TUPLE1", NONE);
        op(0x86, "TUPLE2", NONE);
        op(0x87, "TUPLE3", NONE);
        op(0x88, "NEWTRUE", NONE);
        op(0x89, "NEWFALSE", NONE);
        op(0x8a, "LONG1", LEN1);
        op(0x8b, "LONG4", LEN4);
        op('B', "BINBYTES", LEN4);
        op('C', "SHORT_BINBYTES", LEN1);
        op(0x8c, "SHORT_BINUNICODE", LEN1);
        op(0x8d, "BINUNICODE8", LEN8);
        op(0x8e, "BINBYTES8", LEN8);
        op(0x8f, "EMPTY_SET", NONE);
        op(0x90, "ADDITEMS", NONE);
        op(0x91, "FROZENSET", NONE);
        op(0x94, "MEMOIZE", NONE);
        op(0x95, "FRAME", 8);
        op(0x96, "BYTEARRAY8", LEN8);
        // Opcodes that import or call Python objects, or need out-of-band data: never in a snapshot.
        forbidden('c', "GLOBAL", TWO_LINES);
        forbidden(0x93, "STACK_GLOBAL", NONE);
        forbidden('R', "REDUCE", NONE);
        forbidden('b', "BUILD", NONE);
        forbidden('i', "INST", TWO_LINES);
        forbidden('o', "OBJ", NONE);
        forbidden(0x81, "NEWOBJ", NONE);
        forbidden(0x92, "NEWOBJ_EX", NONE);
        forbidden('P', "PERSID", LINE);
        forbidden('Q', "BINPERSID", NONE);
        forbidden(0x82, "EXT1", 1);
        forbidden(0x83, "EXT2", 2);
        forbidden(0x84, "EXT4", 4);
        forbidden(0x97, "NEXT_BUFFER", NONE);
        forbidden(0x98, "READONLY_BUFFER", NONE);
    }

    private PickleScanner() {
    }

    private static void op(int code, String name, int arg) {
        ARG[code] = arg;
        NAME[code] = name;
    }

    private static void forbidden(int code, String name, int arg) {
        op(code, name, arg);
        FORBIDDEN[code] = true;
    }

    /** @return the opcode's name, such as {@code BINUNICODE}, or its hex code if unknown */
    static String name(int code) {
        return NAME[code & 0xff] != null ? NAME[code & 0xff] : String.format("0x%02x", code & 0xff);
    }

    /**
     * Checks a whole pickle held in an array.
     *
     * @return the offset just past {@code STOP}
     * @throws IllegalArgumentException with a message (without the source name) describing the first problem
     */
    static long check(byte[] data) {
        return check(ByteBuffer.wrap(data));
    }

    /**
     * Checks a whole pickle. Bytes after {@code STOP} are ignored, as Python's {@code pickle.load} does.
     *
     * @param data the pickle from index 0 to its limit, such as a memory-mapped file
     * @return the offset just past {@code STOP}
     * @throws IllegalArgumentException with a message (without the source name) describing the first problem
     */
    static long check(ByteBuffer data) {
        int n = data.limit();
        int pos = 0;
        while (pos < n) {
            int start = pos;
            int code = at(data, pos++);
            int arg = ARG[code];
            if (arg == UNKNOWN) {
                throw new IllegalArgumentException(String.format(
                        "invalid pickle: unknown opcode 0x%02x at byte offset %d", code, start));
            }
            if (FORBIDDEN[code]) {
                throw new IllegalArgumentException("unsupported pickle opcode " + NAME[code] + " at byte offset "
                        + start + ": a memory snapshot holds only dicts, lists, tuples, str, int, float, bool and"
                        + " None, never class instances");
            }
            long len;
            switch (arg) {
                case NONE -> len = 0;
                case 1, 2, 4, 8 -> len = arg;
                case LEN1 -> {
                    need(data, pos, 1, start, code);
                    len = 1 + at(data, pos);
                }
                case LEN4 -> {
                    need(data, pos, 4, start, code);
                    long l = at(data, pos) | (long) at(data, pos + 1) << 8 | (long) at(data, pos + 2) << 16
                            | (long) at(data, pos + 3) << 24;
                    if (code == 'T' && l > Integer.MAX_VALUE) { // BINSTRING's length is signed
                        throw new IllegalArgumentException("invalid pickle: negative length in " + NAME[code]
                                + " at byte offset " + start);
                    }
                    len = 4 + l;
                }
                case LEN8 -> {
                    need(data, pos, 8, start, code);
                    long l = 0;
                    for (int i = 7; i >= 0; i--) {
                        l = l << 8 | at(data, pos + i);
                    }
                    if (l < 0 || l > Long.MAX_VALUE - 8) {
                        throw new IllegalArgumentException("invalid pickle: length out of range in " + NAME[code]
                                + " at byte offset " + start);
                    }
                    len = 8 + l;
                }
                case LINE, TWO_LINES -> {
                    int lines = arg == LINE ? 1 : 2;
                    int p = pos;
                    for (int k = 0; k < lines; k++) {
                        while (p < n && at(data, p) != '\n') {
                            p++;
                        }
                        if (p >= n) {
                            throw truncated(n, start, code);
                        }
                        p++;
                    }
                    len = p - pos;
                }
                default -> throw new IllegalStateException("opcode table");
            }
            if (len > n - pos) {
                throw truncated(n, start, code);
            }
            if (code == 0x80) {
                int version = at(data, pos);
                if (version > 5) {
                    throw new IllegalArgumentException("unsupported pickle protocol " + version
                            + " at byte offset " + start + " (Python writes protocols 0 to 5)");
                }
            }
            pos += (int) len;
            if (code == '.') {
                return pos;
            }
        }
        throw new IllegalArgumentException("truncated pickle: " + n + " bytes end without a STOP opcode");
    }

    private static int at(ByteBuffer data, int pos) {
        return data.get(pos) & 0xff;
    }

    private static void need(ByteBuffer data, int pos, int k, int start, int code) {
        if (k > data.limit() - pos) {
            throw truncated(data.limit(), start, code);
        }
    }

    private static IllegalArgumentException truncated(long size, long start, int code) {
        return new IllegalArgumentException("truncated pickle: " + size + " bytes end inside the "
                + NAME[code] + " opcode at byte offset " + start);
    }
}
