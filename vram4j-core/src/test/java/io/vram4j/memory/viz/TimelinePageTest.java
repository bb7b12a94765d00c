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

    @Test
    void pageIsSelfContainedAndEmbedsTheModel() throws Exception {
        MemoryTimeline t = MemoryTimeline.of(MemoryTimelineTest.dumpAfterTrace(), 0, 100);
        String page = TimelinePage.render(t, "run <1> & co");
        assertFalse(Pattern.compile("(src|href)\\s*=", Pattern.CASE_INSENSITIVE).matcher(page).find(), "nothing loaded from elsewhere");
        assertFalse(page.contains("http://") || page.contains("https://"), "no network address");
        assertFalse(page.contains("/*CSS*/") || page.contains("/*JS*/") || page.contains("/*DATA*/"), "every placeholder filled");
        assertTrue(page.contains("<title>run &lt;1&gt; &amp; co · memory timeline</title>"));
        assertTrue(page.contains("<canvas id=\"timeline\">"));
        JsonNode d = data(page);
        assertEquals(t.headline().peakAllocated(), d.get("headline").get("peak_allocated").asLong());
        assertEquals(t.headline().peakReserved(), d.get("headline").get("peak_reserved").asLong());
        assertEquals(t.headline().fragmentationAtPeak(), d.get("headline").get("fragmentation_at_peak").asLong());
        assertEquals(1, d.get("headline").get("ooms").asInt());
        assertEquals(t.steps(), d.get("steps").asInt());
        assertEquals(t.bands().size(), d.get("bands").get("size").size());
        assertEquals(t.bands().size() + 1, d.get("bands").get("vstart").size());
        assertEquals(t.total(3), d.get("total").get(3).asLong());
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
