package io.vram4j.memory.viz;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.TraceEntry;

import java.io.IOException;
import java.io.InputStream;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.IntToLongFunction;

/**
 * Writes a {@link MemoryTimeline} as one self-contained HTML page: the data as JSON (Jackson) in a
 * {@code <script type="application/json">} element, the page's script and style sheet inlined from this package's
 * resources ({@code timeline.html}, {@code timeline.css}, {@code timeline.js}). The page loads nothing from the
 * network. It draws on canvases: the active memory timeline (zoom with the wheel, pan by dragging, hover for
 * size, address, site and stack, click for the allocator state at that moment), the headline figures and the
 * segments with their blocks. After its first drawing it writes a self-check (canvas filled, figures shown, errors,
 * load and render milliseconds) as JSON into {@code <pre id="selfcheck">}. Stateless and thread-safe.
 */
public final class TimelinePage {
    private static final JsonFactory JSON = new JsonFactory();

    private TimelinePage() {
    }

    /**
     * @param timeline the timeline
     * @param title    the page title, such as the snapshot's file name
     * @return the page
     */
    public static String render(MemoryTimeline timeline, String title) {
        StringWriter out = new StringWriter(1 << 16);
        try {
            write(timeline, title, out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString();
    }

    /**
     * Writes the page to a file (UTF-8), replacing it.
     *
     * @param timeline the timeline
     * @param title    the page title
     * @param file     the output file; its folder must exist
     * @throws IOException if the file cannot be written
     */
    public static void write(MemoryTimeline timeline, String title, Path file) throws IOException {
        try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            write(timeline, title, w);
        }
    }

    /**
     * @param timeline the timeline
     * @param title    the page title
     * @param out      where the page goes; not closed
     * @throws IOException if writing fails
     */
    public static void write(MemoryTimeline timeline, String title, Writer out) throws IOException {
        Objects.requireNonNull(title, "title");
        String template = resource("timeline.html");
        int data = template.indexOf("/*DATA*/");
        String head = template.substring(0, data)
                .replace("/*TITLE*/", escapeHtml(title))
                .replace("/*CSS*/", resource("timeline.css"));
        String tail = template.substring(data + "/*DATA*/".length()).replace("/*JS*/", resource("timeline.js"));
        out.write(head);
        JsonGenerator g = JSON.createGenerator(out);
        g.setCharacterEscapes(new HtmlSafeEscapes());
        writeData(timeline, title, g);
        g.flush();
        out.write(tail);
        out.flush();
    }

    private static void writeData(MemoryTimeline t, String title, JsonGenerator g) throws IOException {
        Headline h = t.headline();
        g.writeStartObject();
        g.writeNumberField("version", 1);
        g.writeStringField("title", title);
        g.writeNumberField("device", t.device());
        g.writeNumberField("max_entries", t.maxEntries());
        g.writeNumberField("inconsistencies", t.inconsistencies());
        g.writeStringField("first_inconsistency", t.firstInconsistency());
        g.writeObjectFieldStart("headline");
        g.writeNumberField("peak_allocated", h.peakAllocated());
        g.writeNumberField("peak_allocated_entry", h.peakAllocatedEntry());
        g.writeNumberField("peak_reserved", h.peakReserved());
        g.writeNumberField("peak_reserved_entry", h.peakReservedEntry());
        g.writeNumberField("peak_requested", h.peakRequested());
        g.writeNumberField("reserved_at_peak", h.reservedAtPeak());
        g.writeNumberField("fragmentation_at_peak", h.fragmentationAtPeak());
        g.writeNumberField("largest_free_at_peak", h.largestFreeAtPeak());
        g.writeNumberField("free_blocks_at_peak", h.freeBlocksAtPeak());
        g.writeNumberField("ooms", h.ooms());
        g.writeNumberField("entries", h.entries());
        g.writeNumberField("allocs", h.allocs());
        g.writeNumberField("segments_at_end", h.segmentsAtEnd());
        g.writeEndObject();

        int steps = t.steps();
        List<TraceEntry> trace = t.trace();
        boolean hasTime = false;
        long t0 = Long.MIN_VALUE;
        for (TraceEntry e : trace) {
            if (e.hasTimeUs()) {
                t0 = e.timeUs();
                hasTime = true;
                break;
            }
        }
        long firstTime = t0;
        int series = steps + 1;
        g.writeNumberField("steps", steps);
        packedArray(g, "step_entry", series, 1, t::entryOf);
        if (hasTime) {
            packedArray(g, "step_time_us", series, 1, s -> {
                int entry = t.entryOf(s);
                TraceEntry e = entry >= 0 ? trace.get(entry) : null;
                return e != null && e.hasTimeUs() ? e.timeUs() - firstTime : -1;
            });
        } else {
            g.writeNullField("step_time_us");
        }
        packedArray(g, "total", series, 1, t::total);
        packedArray(g, "summary", series, 1, t::summary);
        packedArray(g, "allocated", series, 1, t::allocated);
        packedArray(g, "reserved", series, 1, t::reserved);

        List<Band> bands = t.bands();
        int n = bands.size();
        long[] addr = new long[n], size = new long[n], block = new long[n];
        int[] stack = new int[n], start = new int[n], end = new int[n], vstart = new int[n + 1];
        int vertices = 0;
        for (Band b : bands) {
            vertices += b.vertexCount();
        }
        int[] vsteps = new int[vertices];
        long[] voffs = new long[vertices];
        int v = 0;
        for (int i = 0; i < n; i++) {
            Band b = bands.get(i);
            addr[i] = b.address();
            size[i] = b.size();
            block[i] = b.blockSize();
            stack[i] = b.stack();
            start[i] = b.start();
            end[i] = b.end();
            vstart[i] = v;
            for (int k = 0; k < b.vertexCount(); k++) {
                vsteps[v] = b.stepAt(k);
                voffs[v++] = b.offsetOf(k);
            }
        }
        vstart[n] = v;
        g.writeObjectFieldStart("bands");
        longArray(g, "addr", addr);
        longArray(g, "size", size);
        longArray(g, "block", block);
        intArray(g, "stack", stack);
        intArray(g, "start", start);
        intArray(g, "end", end);
        intArray(g, "vstart", vstart);
        intArray(g, "vsteps", vsteps);
        longArray(g, "voffs", voffs);
        g.writeEndObject();

        // stacks as lists of indices into a table of distinct frames
        Map<Frame, Integer> frameIds = new HashMap<>();
        g.writeArrayFieldStart("stacks");
        List<List<Frame>> stacks = t.stacks();
        List<Frame> frames = new java.util.ArrayList<>();
        for (List<Frame> st : stacks) {
            g.writeStartArray();
            for (Frame f : st) {
                Integer id = frameIds.get(f);
                if (id == null) {
                    id = frames.size();
                    frames.add(f);
                    frameIds.put(f, id);
                }
                g.writeNumber(id);
            }
            g.writeEndArray();
        }
        g.writeEndArray();
        g.writeArrayFieldStart("frames");
        for (Frame f : frames) {
            g.writeStartArray();
            g.writeString(f.name());
            g.writeString(f.filename());
            g.writeNumber(f.line());
            g.writeNumber(StackTable.isInternal(f) ? 1 : 0); // hidden unless "C++ and PyTorch frames" is ticked
            g.writeEndArray();
        }
        g.writeEndArray();
        int[] stackSite = new int[stacks.size()];
        for (int i = 0; i < stackSite.length; i++) {
            stackSite[i] = t.siteOf(i);
        }
        intArray(g, "stack_site", stackSite);
        g.writeArrayFieldStart("sites");
        for (String s : t.sites()) {
            g.writeString(s);
        }
        g.writeEndArray();
        long[] ops = t.ops();
        packedArray(g, "ops", ops, TimelineBuilder.OP_FIELDS);
        g.writeArrayFieldStart("ooms");
        for (int[] o : t.ooms()) {
            TraceEntry e = trace.get(o[0]);
            g.writeStartArray();
            g.writeNumber(o[0]);
            g.writeNumber(o[1]);
            g.writeNumber(e.size());
            g.writeNumber(e.deviceFree());
            g.writeEndArray();
        }
        g.writeEndArray();
        g.writeEndObject();
    }

    private static void intArray(JsonGenerator g, String name, int[] values) throws IOException {
        g.writeFieldName(name);
        g.writeArray(values, 0, values.length);
    }

    /**
     * Writes a long array of millions of numbers compactly, as {@code {"packed": "zigzag-delta-leb128", "stride": S,
     * "length": N, "data": BASE64}}: each value minus the one {@code stride} places before it (0 before the first
     * {@code stride}), zigzag-mapped ({@code (d << 1) ^ (d >> 63)}) and written as an unsigned LEB128 varint, the
     * bytes in base64 (Jackson's {@code writeBinary}). The page's {@code unpack} turns it into a
     * {@code Float64Array}; values are exact up to 2^53 in magnitude, as JSON numbers are in JavaScript. The per-step
     * series change little from one step to the next and the state-replay ops repeat their columns (stride 6), so a
     * 1 GB snapshot's 127 MB of per-step numbers become about a fifth of that, and the browser parses less.
     */
    static void packedArray(JsonGenerator g, String name, int length, int stride, IntToLongFunction values)
            throws IOException {
        long[] v = new long[length]; // each value computed once (a step's time looks its entry up)
        for (int i = 0; i < length; i++) {
            v[i] = values.applyAsLong(i);
        }
        packedArray(g, name, v, stride);
    }

    static void packedArray(JsonGenerator g, String name, long[] values, int stride) throws IOException {
        int length = values.length;
        long bytes = 0; // first the exact size, so that nothing is copied
        for (int i = 0; i < length; i++) {
            bytes += varintLength(zigzag(values[i] - (i >= stride ? values[i - stride] : 0)));
        }
        if (bytes > Integer.MAX_VALUE - 16) {
            throw new IllegalArgumentException(name + ": " + length + " values need " + bytes + " bytes packed");
        }
        byte[] buf = new byte[(int) bytes];
        int p = 0;
        for (int i = 0; i < length; i++) {
            long z = zigzag(values[i] - (i >= stride ? values[i - stride] : 0));
            while ((z & ~0x7fL) != 0) {
                buf[p++] = (byte) ((z & 0x7f) | 0x80);
                z >>>= 7;
            }
            buf[p++] = (byte) z;
        }
        g.writeObjectFieldStart(name);
        g.writeStringField("packed", "zigzag-delta-leb128");
        g.writeNumberField("stride", stride);
        g.writeNumberField("length", length);
        g.writeFieldName("data");
        g.writeBinary(buf);
        g.writeEndObject();
    }

    private static long zigzag(long d) {
        return (d << 1) ^ (d >> 63);
    }

    private static int varintLength(long z) {
        return z == 0 ? 1 : (63 - Long.numberOfLeadingZeros(z)) / 7 + 1;
    }

    private static void longArray(JsonGenerator g, String name, long[] values) throws IOException {
        g.writeFieldName(name);
        g.writeArray(values, 0, values.length);
    }

    static String resource(String name) {
        try (InputStream in = TimelinePage.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + name + " next to " + TimelinePage.class.getName());
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String escapeHtml(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }

    /** Escapes {@code <}, {@code >} and {@code &} so that no string can close the script element. */
    private static final class HtmlSafeEscapes extends CharacterEscapes {
        private final int[] escapes;

        HtmlSafeEscapes() {
            escapes = CharacterEscapes.standardAsciiEscapesForJSON();
            escapes['<'] = CharacterEscapes.ESCAPE_STANDARD;
            escapes['>'] = CharacterEscapes.ESCAPE_STANDARD;
            escapes['&'] = CharacterEscapes.ESCAPE_STANDARD;
        }

        @Override
        public int[] getEscapeCodesForAscii() {
            return escapes;
        }

        @Override
        public SerializableString getEscapeSequence(int ch) {
            return null; // only ASCII characters are escaped beyond JSON's own rules
        }
    }
}
