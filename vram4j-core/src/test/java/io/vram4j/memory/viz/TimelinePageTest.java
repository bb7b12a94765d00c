package io.vram4j.memory.viz;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.TraceEntry;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TimelinePageTest {
    static final Pattern DATA = Pattern.compile("<script type=\"application/json\" id=\"data\">(.*?)</script>", Pattern.DOTALL);

    static JsonNode data(String page) throws Exception {
        Matcher m = DATA.matcher(page);
        assertTrue(m.find(), "the page embeds its data");
        return new ObjectMapper().readTree(m.group(1));
    }

    /**
     * The reading side of {@code TimelinePage.packedArray}, written from its documented format: base64, unsigned
     * LEB128 varints, zigzag, differences to the value {@code stride} places before.
     */
    static long[] unpacked(JsonNode packed) throws java.io.IOException {
        assertEquals("zigzag-delta-leb128", packed.get("packed").asText());
        byte[] bytes = packed.get("data").binaryValue();
        int stride = packed.get("stride").asInt();
        long[] out = new long[packed.get("length").asInt()];
        int p = 0;
        for (int i = 0; i < out.length; i++) {
            long z = 0;
            int shift = 0;
            byte b;
            do {
                b = bytes[p++];
                z |= (long) (b & 0x7f) << shift;
                shift += 7;
            } while (b < 0);
            long d = (z >>> 1) ^ -(z & 1);
            out[i] = (i >= stride ? out[i - stride] : 0) + d;
        }
        assertEquals(bytes.length, p, "no bytes left over");
        return out;
    }

    /** Values of every size and sign, strides 1 and 6, and nothing at all read back as written. */
    @Test
    void packedArraysReadBack() throws Exception {
        java.util.SplittableRandom r = new java.util.SplittableRandom(3);
        long[] values = new long[5_000];
        for (int i = 0; i < values.length; i++) {
            values[i] = switch (i % 5) {
                case 0 -> r.nextLong();
                case 1 -> -1 - r.nextInt(1000);
                case 2 -> i % 7 == 0 ? Long.MAX_VALUE : Long.MIN_VALUE;
                case 3 -> 0x7f00_0000_0000L + 512L * r.nextInt(1 << 20);
                default -> r.nextInt(3);
            };
        }
        for (int stride : new int[] {1, 6}) {
            for (long[] v : new long[][] {values, new long[0], {42}}) {
                java.io.StringWriter w = new java.io.StringWriter();
                try (com.fasterxml.jackson.core.JsonGenerator g = new com.fasterxml.jackson.core.JsonFactory().createGenerator(w)) {
                    g.writeStartObject();
                    TimelinePage.packedArray(g, "a", v.length, stride, i -> v[i]);
                    g.writeEndObject();
                }
                JsonNode a = new ObjectMapper().readTree(w.toString()).get("a");
                assertEquals(stride, a.get("stride").asInt());
                assertArrayEquals(v, unpacked(a), "stride " + stride + ", " + v.length + " values");
            }
        }
    }

    @Test
    void pageIsSelfContainedAndEmbedsTheModel() throws Exception {
        MemoryTimeline t = MemoryTimeline.of(MemoryTimelineTest.dumpAfterTrace(), 0, 100);
        String page = TimelinePage.render(t, "run <1> & co");
        assertFalse(Pattern.compile("(src|href)\\s*=", Pattern.CASE_INSENSITIVE).matcher(page).find(), "nothing loaded from elsewhere");
        assertFalse(page.contains("http://") || page.contains("https://"), "no network address");
        assertFalse(page.contains("/*CSS*/") || page.contains("/*JS*/") || page.contains("/*DATA*/"), "every placeholder filled");
        assertTrue(page.contains("<title>run &lt;1&gt; &amp; co · memory timeline</title>"));
        assertTrue(page.contains("<canvas id=\"timeline\""));
        JsonNode d = data(page);
        assertEquals(t.headline().peakAllocated(), d.get("headline").get("peak_allocated").asLong());
        assertEquals(t.headline().peakReserved(), d.get("headline").get("peak_reserved").asLong());
        assertEquals(t.headline().fragmentationAtPeak(), d.get("headline").get("fragmentation_at_peak").asLong());
        assertEquals(1, d.get("headline").get("ooms").asInt());
        assertEquals(t.steps(), d.get("steps").asInt());
        assertEquals(t.bands().size(), d.get("bands").get("size").size());
        assertEquals(t.bands().size() + 1, d.get("bands").get("vstart").size());
        long[] total = unpacked(d.get("total"));
        long[] entries = unpacked(d.get("step_entry"));
        assertEquals(t.steps() + 1, total.length);
        for (int s = 0; s <= t.steps(); s++) {
            assertEquals(t.total(s), total[s], "total at step " + s);
            assertEquals(t.summary(s), unpacked(d.get("summary"))[s], "summary at step " + s);
            assertEquals(t.allocated(s), unpacked(d.get("allocated"))[s], "allocated at step " + s);
            assertEquals(t.reserved(s), unpacked(d.get("reserved"))[s], "reserved at step " + s);
            assertEquals(t.entryOf(s), entries[s], "entry of step " + s);
        }
        assertArrayEquals(t.ops(), unpacked(d.get("ops")));
        assertEquals(6, d.get("ops").get("stride").asInt());
        assertTrue(d.get("step_time_us").isNull(), "the trace has no time_us");
        assertEquals("a (model.py:40)", d.get("sites").get(d.get("stack_site").get(d.get("bands").get("stack").get(0).asInt()).asInt()).asText());
    }

    @Test
    void framesCannotCloseTheScriptElement() throws Exception {
        MemorySnapshot s = MemoryTimelineTest.dumpAfterTrace();
        List<TraceEntry> trace = s.trace(0).stream().map(e -> e.frames().isEmpty() ? e : new TraceEntry(e.action(), e.addr(),
                e.size(), e.stream(), e.timeUs(), e.deviceFree(), List.of(new Frame("</script><script>alert(1)</script>",
                "x&y.py", 1)), null, null)).toList();
        MemoryTimeline t = MemoryTimeline.of(new MemorySnapshot(s.segments(), List.of(trace), Map.of(), List.of()), 0, 100);
        String page = TimelinePage.render(t, "t");
        assertEquals(2, page.split("</script>", -1).length - 1, "only the page's own two script elements close");
        JsonNode d = data(page);
        assertEquals("</script><script>alert(1)</script>", d.get("frames").get(0).get(0).asText());
    }
}
