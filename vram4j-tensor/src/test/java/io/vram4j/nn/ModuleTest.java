package io.vram4j.nn;

import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ModuleTest {
    Device dev;

    @TempDir
    Path tmp;

    @BeforeEach
    void open() {
        dev = Device.open("host:256MiB");
    }

    @AfterEach
    void close() {
        assertEquals(0, dev.memoryAllocated());
        dev.close();
    }

    @Test
    void linearInitialisationFollowsPyTorch() {
        try (Linear l = new Linear(dev, 100, 50, new Generator(1))) {
            float bound = (float) (1 / Math.sqrt(100));
            float[] w = l.weight().toFloatArray();
            float[] b = l.bias().toFloatArray();
            float maxAbs = 0;
            double mean = 0;
            for (float v : w) {
                assertTrue(Math.abs(v) <= bound);
                maxAbs = Math.max(maxAbs, Math.abs(v));
                mean += v;
            }
            assertTrue(maxAbs > 0.9 * bound, "uniform over the whole range");
            assertEquals(0, mean / w.length, 0.01);
            for (float v : b) {
                assertTrue(Math.abs(v) <= bound);
            }
            assertArrayEquals(new int[] {50, 100}, l.weight().shape());
            assertTrue(l.weight().requiresGrad());
            assertEquals(5050, l.parameterCount());
        }
        try (Linear a = new Linear(dev, 8, 8, new Generator(5)); Linear b = new Linear(dev, 8, 8, new Generator(5));
             Linear c = new Linear(dev, 8, 8, new Generator(6))) {
            assertArrayEquals(a.weight().toFloatArray(), b.weight().toFloatArray(), "seeded");
            assertFalse(java.util.Arrays.equals(a.weight().toFloatArray(), c.weight().toFloatArray()));
        }
        try (Embedding e = new Embedding(dev, 200, 50, new Generator(2))) {
            double s = 0;
            double s2 = 0;
            for (float v : e.weight().toFloatArray()) {
                s += v;
                s2 += v * v;
            }
            assertEquals(0, s / 10000, 0.05);
            assertEquals(1, s2 / 10000, 0.05);
        }
    }

    @Test
    void namesTrainingModeAndClose() {
        Generator g = new Generator(3);
        Sequential m = new Sequential(new Linear(dev, 4, 8, g), new ReLU(), new TransformerBlock(dev, 8, 2, 0.1f, g));
        Map<String, Parameter> named = m.namedParameters();
        assertEquals(List.of("0.weight", "0.bias", "2.ln_1.weight", "2.ln_1.bias", "2.attn.c_attn.weight",
                "2.attn.c_attn.bias", "2.attn.c_proj.weight", "2.attn.c_proj.bias", "2.ln_2.weight", "2.ln_2.bias",
                "2.c_fc.weight", "2.c_fc.bias", "2.c_proj.weight", "2.c_proj.bias"), List.copyOf(named.keySet()));
        assertTrue(m.isTraining());
        m.eval();
        assertFalse(m.layers().get(2).children().get("dropout").isTraining());
        try (MemoryScope s = MemoryScope.open()) {
            Tensor y = m.forward(dev.randn(g, 2, 3, 4));
            assertArrayEquals(new int[] {2, 3, 8}, y.shape());
            y.sum().backward();
            assertTrue(named.values().stream().allMatch(p -> p.grad() != null));
        }
        m.zeroGrad(true);
        assertTrue(named.values().stream().allMatch(p -> p.grad() == null));
        m.close();
        assertTrue(named.get("0.weight").isClosed());
    }

    @Test
    void parametersSurviveTheScopeTheyWereCreatedIn() {
        Linear l;
        try (MemoryScope s = MemoryScope.open()) {
            l = new Linear(dev, 3, 3, new Generator(0));
        }
        assertFalse(l.weight().isClosed());
        l.close();
    }

    @Test
    void safetensorsRoundTrip() throws IOException {
        Path f = tmp.resolve("model.safetensors");
        Generator g = new Generator(4);
        try (Sequential a = new Sequential(new Linear(dev, 5, 7, g), new GELU(), new Linear(dev, 7, 3, g), new LayerNorm(dev, 3));
             Sequential b = new Sequential(new Linear(dev, 5, 7, g), new GELU(), new Linear(dev, 7, 3, g), new LayerNorm(dev, 3))) {
            a.save(f);
            assertNotEquals(a.parameters().get(0).getFloat(0, 0), b.parameters().get(0).getFloat(0, 0));
            b.load(f);
            for (int i = 0; i < a.parameters().size(); i++) {
                assertArrayEquals(a.parameters().get(i).toFloatArray(), b.parameters().get(i).toFloatArray());
            }
        }
        // every dtype, read back onto host and onto sim
        Map<String, Tensor> all = new LinkedHashMap<>();
        try (MemoryScope s = MemoryScope.open()) {
            all.put("f32", dev.tensor(new float[] {1.5f, -2}, 2, 1));
            all.put("f16", dev.tensor(new float[] {0.5f, 3}).to(DType.FLOAT16));
            all.put("bf16", dev.tensor(new float[] {-1, 256}).to(DType.BFLOAT16));
            all.put("i32", dev.tensor(new int[] {1, 2, 3}));
            all.put("i64", dev.tensor(new long[] {Long.MAX_VALUE}));
            all.put("scalar", dev.scalar(7));
            all.put("empty", dev.zeros(0, 4));
            Safetensors.save(f, all, Map.of("format", "pt"));
            String header = new String(Files.readAllBytes(f), 8, 200, StandardCharsets.UTF_8);
            assertTrue(header.contains("\"f16\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[8,12]}"), header);
            Map<String, Tensor> back = Safetensors.load(f, dev);
            assertEquals(List.copyOf(all.keySet()), List.copyOf(back.keySet()));
            for (String k : all.keySet()) {
                assertEquals(all.get(k).dtype(), back.get(k).dtype(), k);
                assertArrayEquals(all.get(k).shape(), back.get(k).shape(), k);
                assertArrayEquals(all.get(k).toLongArray(), back.get(k).toLongArray(), k);
            }
            assertEquals(Long.MAX_VALUE, back.get("i64").getLong(0));
        }
        try (Device sim = Device.open("sim:1GiB")) {
            Map<String, Tensor> onSim = Safetensors.load(f, sim);
            assertEquals(7, onSim.size());
            onSim.values().forEach(Tensor::close);
        }
    }

    @Test
    void badFilesGiveClearErrorsNamingTheFile() throws IOException {
        Path f = tmp.resolve("bad.safetensors");
        Files.write(f, new byte[] {1, 2, 3});
        assertError(f, "truncated");
        Files.write(f, header(1000, "{}"));
        assertError(f, "truncated");
        Files.write(f, header(-1, ""));
        assertError(f, "invalid header length");
        byte[] json = "{\"a\": [1, 2".getBytes(StandardCharsets.UTF_8);
        Files.write(f, header(json.length, "{\"a\": [1, 2"));
        assertError(f, "not valid JSON");
        String h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";
        Files.write(f, concat(header(h.length(), h), new byte[8]));
        assertError(f, "only 8 are present");
        h = "{\"w\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}";
        Files.write(f, concat(header(h.length(), h), new byte[8]));
        assertError(f, "unsupported safetensors dtype 'F64'");
        h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}";
        Files.write(f, concat(header(h.length(), h), new byte[8]));
        assertError(f, "needs 12");
        h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}";
        Files.write(f, concat(header(h.length(), h), new byte[8]));
        assertError(f, "data_offsets");
        // a valid file that does not match the model
        h = "{\"weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}";
        Files.write(f, concat(header(h.length(), h), new byte[24]));
        try (Linear l = new Linear(dev, 2, 3, false, new Generator(0))) {
            SafetensorsException e = assertThrows(SafetensorsException.class, () -> l.load(f));
            assertTrue(e.getMessage().contains(f.toString()) && e.getMessage().contains("shape"), e.getMessage());
        }
        try (Linear l = new Linear(dev, 3, 2, true, new Generator(0))) {
            SafetensorsException e = assertThrows(SafetensorsException.class, () -> l.load(f));
            assertTrue(e.getMessage().contains("missing [bias]"), e.getMessage());
        }
        assertThrows(SafetensorsException.class, () -> Safetensors.load(tmp.resolve("nope.safetensors"), dev));
    }

    private void assertError(Path f, String text) {
        SafetensorsException e = assertThrows(SafetensorsException.class, () -> Safetensors.load(f, dev));
        assertTrue(e.getMessage().contains(f.toString()), e.getMessage());
        assertTrue(e.getMessage().contains(text), e.getMessage());
    }

    private static byte[] header(long n, String json) {
        byte[] j = json.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(8 + j.length).order(ByteOrder.LITTLE_ENDIAN).putLong(n).put(j).array();
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] r = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }
}
