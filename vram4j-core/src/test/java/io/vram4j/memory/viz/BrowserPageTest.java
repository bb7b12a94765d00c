package io.vram4j.memory.viz;

import io.vram4j.testsupport.SharedData;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vram4j.memory.snapshot.MemorySnapshot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Opens the page in headless Chromium (Debian's {@code chromium}; skipped when none is installed), reads the
 * self-check the page writes into the DOM and checks a screenshot.
 */
class BrowserPageTest {
    private static final Pattern SELF_CHECK = Pattern.compile("<pre id=\"selfcheck\"[^>]*>(.*?)</pre>", Pattern.DOTALL);

    static String chromium() {
        for (String name : List.of("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")) {
            for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(File.pathSeparator)) {
                Path p = Path.of(dir, name);
                if (Files.isExecutable(p)) {
                    return p.toString();
                }
            }
        }
        return null;
    }

    record Run(String output, long wallMs) {
    }

    static Run chromium(Path profile, String... args) throws IOException, InterruptedException {
        String browser = chromium();
        SharedData.require(browser != null, "chromium");
        List<String> cmd = new ArrayList<>(List.of(browser, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--hide-scrollbars", "--no-first-run", "--user-data-dir=" + profile,
                "--window-size=1400,1700", "--virtual-time-budget=20000"));
        cmd.addAll(List.of(args));
        Path log = Files.createTempFile(profile.getParent(), "chromium", ".log");
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(false).redirectError(log.toFile()).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(180, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("chromium did not finish in 180 s");
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(0, p.exitValue(), "chromium failed: " + Files.readString(log));
        return new Run(new String(out, StandardCharsets.UTF_8), ms);
    }

    static JsonNode selfCheck(String dom) throws IOException {
        Matcher m = SELF_CHECK.matcher(dom);
        assertTrue(m.find(), "the DOM has the self-check element");
        String text = m.group(1).replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
        assertTrue(!text.isBlank(), "the page wrote its self-check (its script ran)");
        return new ObjectMapper().readTree(text);
    }

    private static JsonNode check(MemoryTimeline t, Path dir, String label) throws Exception {
        Path page = dir.resolve("page.html");
        TimelinePage.write(t, label, page);
        Run dom = chromium(dir.resolve("profile"), "--dump-dom", page.toUri().toString());
        JsonNode c = selfCheck(dom.output());
        assertTrue(c.get("ok").asBoolean(), "no JavaScript errors: " + c.get("errors"));
        assertEquals(0, c.get("errors").size(), c.get("errors").toString());
        Headline h = t.headline();
        JsonNode shown = c.get("headline");
        assertEquals(h.peakAllocated(), shown.get("peak_allocated").asLong());
        assertEquals(h.peakReserved(), shown.get("peak_reserved").asLong());
        assertEquals(h.fragmentationAtPeak(), shown.get("fragmentation_at_peak").asLong());
        assertEquals(h.ooms(), shown.get("ooms").asInt());
        JsonNode cards = c.get("cards");
        assertEquals(5, cards.size(), cards.toString());
        assertEquals(String.valueOf(h.ooms()), cards.get("OOMs").asText());
        for (String card : List.of("Peak allocated", "Peak reserved", "Fragmentation at peak")) {
            assertTrue(cards.get(card).asText().matches("[0-9.]+ (B|KiB|MiB|GiB|TiB)"), card + ": " + cards.get(card));
        }
        // the page's own replay of the state to the allocated peak agrees with the model
        JsonNode st = c.get("state_at_peak");
        assertEquals(h.reservedAtPeak(), st.get("reserved").asLong());
        assertEquals(h.peakAllocated(), st.get("allocated").asLong());
        assertEquals(h.largestFreeAtPeak(), st.get("largest_free").asLong());
        assertEquals(h.freeBlocksAtPeak(), st.get("free_blocks").asInt());
        assertEquals(t.stateAfterEntry(h.peakAllocatedEntry()).size(), st.get("segments").asInt());
        assertEquals(t.steps(), c.get("steps").asInt());
        assertTrue(c.get("timeline_pixels").asInt() > 5_000, "the timeline canvas is drawn: " + c.get("timeline_pixels"));
        assertTrue(c.get("state_pixels").asInt() > 100, "the state canvas is drawn: " + c.get("state_pixels"));
        assertTrue(c.get("bands_drawn").asInt() > 0);
        JsonNode in = c.get("interaction");
        assertTrue(in.get("tooltip").asBoolean(), "hovering shows the tooltip: " + in);
        assertTrue(in.get("clicked_step").asInt() > 0, "a click picks a step: " + in);
        assertEquals(in.get("expected_entry").asInt(), in.get("clicked_entry").asInt(), "and shows the state after its entry");
        assertTrue(in.get("heading").asText().contains("step " + String.format(Locale.US, "%,d", in.get("clicked_step").asInt())),
                in.toString());
        assertTrue(in.get("zoomed").asBoolean(), "the wheel zooms in: " + in);

        Path png = dir.resolve("page.png");
        Run shot = chromium(dir.resolve("profile2"), "--screenshot=" + png, page.toUri().toString());
        BufferedImage img = ImageIO.read(png.toFile());
        assertEquals(1400, img.getWidth());
        Set<Integer> colours = new HashSet<>();
        long nonWhite = 0;
        for (int y = 0; y < img.getHeight(); y += 2) {
            for (int x = 0; x < img.getWidth(); x += 2) {
                int rgb = img.getRGB(x, y) & 0xffffff;
                colours.add(rgb);
                if (rgb != 0xffffff && rgb != 0xf6f7f9) {
                    nonWhite++;
                }
            }
        }
        String keep = System.getProperty("vram4j.viz.keep"); // a folder to keep the page and screenshot in, for a look
        if (keep != null) {
            Files.createDirectories(Path.of(keep));
            Files.copy(page, Path.of(keep, label + ".html"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            Files.copy(png, Path.of(keep, label + ".png"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
        assertTrue(colours.size() > 50, "the screenshot is not blank: " + colours.size() + " colours");
        assertTrue(nonWhite > 20_000, "the screenshot shows drawings: " + nonWhite + " sampled pixels");
        System.out.printf(Locale.ROOT, "browser: %s: %,d entries, %,d steps, %,d bands, page %,d bytes: JSON parse %.1f ms,"
                        + " first render %.1f ms, script total %.1f ms, since navigation %.0f ms; redraw %.1f ms (while moving %.1f ms), zoomed x10 %.1f ms,"
                        + " hover %.2f ms, state at a moment %.1f ms; chromium --dump-dom %,d ms, --screenshot %,d ms%n",
                label, h.entries(), t.steps(), t.bands().size(), Files.size(page),
                c.get("parse_ms").asDouble(), c.get("render_ms").asDouble(), c.get("load_ms").asDouble(),
                c.get("since_navigation_ms").asDouble(), c.get("redraw_ms").asDouble(), c.get("moving_redraw_ms").asDouble(), c.get("zoomed_redraw_ms").asDouble(),
                c.get("hover_ms").asDouble(), c.get("state_ms").asDouble(), dom.wallMs(), shot.wallMs());
        return c;
    }

    @Test
    void syntheticHundredThousandEvents(@TempDir Path dir) throws Exception {
        SharedData.require(chromium() != null, "chromium");
        MemorySnapshot s = SyntheticSnapshots.training(100_000, 3);
        assertTrue(s.trace(0).size() >= 100_000, "at least 100,000 events: " + s.trace(0).size());
        MemoryTimeline t = MemoryTimeline.of(s, 0, MemoryTimeline.DEFAULT_MAX_ENTRIES);
        check(t, dir, "synthetic-100k");
    }

    @Test
    void smallTraceWithAnOutOfMemoryEntry(@TempDir Path dir) throws Exception {
        SharedData.require(chromium() != null, "chromium");
        MemoryTimeline t = MemoryTimeline.of(MemoryTimelineTest.dumpAfterTrace(), 0, 100);
        check(t, dir, "small-with-oom");
        Run dom = chromium(dir.resolve("profile3"), "--dump-dom", dir.resolve("page.html").toUri().toString());
        assertTrue(dom.output().contains("class=\"card bad\" data-figure=\"OOMs\""), "the OOM card is marked");
    }

    @Test
    void expandableSegments(@TempDir Path dir) throws Exception {
        SharedData.require(chromium() != null, "chromium");
        check(MemoryTimeline.of(MemoryTimelineTest.expandableRun(100_000), 0, 1000), dir, "expandable");
    }

    @Test
    void realPytorchSnapshot(@TempDir Path dir) throws Exception {
        SharedData.require(chromium() != null, "chromium");
        MemorySnapshot s = RealSnapshotTimelineTest.load("cs336-medium-ctx512_train-step_steady-state.pickle");
        JsonNode c = check(MemoryTimeline.of(s, 0, MemoryTimeline.DEFAULT_MAX_ENTRIES), dir, "cs336-medium");
        // the largest allocation at the peak: its C++ and PyTorch frames are hidden until the toggle shows them
        JsonNode frames = c.get("interaction").get("frames");
        assertTrue(frames.get("shown_default").asInt() > 0, frames.toString());
        assertTrue(frames.get("shown_all").asInt() > 3 * frames.get("shown_default").asInt(), frames.toString());
        assertTrue(frames.get("hidden_note").asBoolean(), frames.toString());
        assertTrue(frames.get("restored").asBoolean(), frames.toString());
    }

    /** A snapshot without a trace: a page about the state at the dump, without peak cards or a time axis. */
    @Test
    void segmentsOnlySnapshotGetsAStatePage(@TempDir Path dir) throws Exception {
        SharedData.require(chromium() != null, "chromium");
        MemorySnapshot s = RealSnapshotTimelineTest.load("verl-megatron-vllm_segments-only.pickle");
        Path page = dir.resolve("verl.html");
        TimelinePage.write(MemoryTimeline.of(s, 0, MemoryTimeline.DEFAULT_MAX_ENTRIES), "verl", page);
        Run dom = chromium(dir.resolve("profile"), "--dump-dom", page.toUri().toString());
        JsonNode c = selfCheck(dom.output());
        assertTrue(c.get("ok").asBoolean(), "no JavaScript errors: " + c.get("errors"));
        assertTrue(c.get("state_page").asBoolean());
        JsonNode cards = c.get("cards");
        assertEquals(List.of("Reserved", "Allocated", "Reserved but unallocated"), iterable(cards.fieldNames()));
        assertEquals(0, c.get("bands_drawn").asInt(), "no band is drawn");
        assertTrue(dom.output().contains("id=\"timeline-panel\" hidden"), "the timeline panel is hidden");
        JsonNode st = c.get("state_at_peak");
        assertEquals(s.reservedBytes(0), st.get("reserved").asLong());
        assertEquals(s.allocatedBytes(0), st.get("allocated").asLong());
        assertEquals(s.segments(0).size(), st.get("segments").asInt());
        assertTrue(c.get("state_pixels").asInt() > 100, "the state canvas is drawn: " + c.get("state_pixels"));
    }

    private static List<String> iterable(java.util.Iterator<String> it) {
        List<String> out = new java.util.ArrayList<>();
        it.forEachRemaining(out::add);
        return out;
    }
}
