package io.vram4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ExplainOomCommandTest {
    private static Path real(String name) {
        return io.vram4j.testsupport.SharedData.snapshot(name);
    }

    @Test
    void explainsTheFirstOomAWhatIfPredicts() throws Exception {
        Path f = real("decomfl-opt-zo-finetune_from-empty.pickle");
        CliRunner.Result r = CliRunner.run("explain-oom", "--capacity", "1GiB", "--json", f.toString());
        assertEquals(0, r.exitCode(), r.err());
        JsonNode e = new ObjectMapper().readTree(r.out()).get("events").get(0);
        assertTrue(Set.of("capacity", "fragmentation", "cache_held_elsewhere").contains(e.get("cause").asText()), r.out());
        assertTrue(e.get("frames").size() > 0, "the stack of the failing allocation");
        long smallest = e.get("counterfactuals").get("smallest_fitting_capacity").asLong();
        assertTrue(smallest > 1L << 30, r.out());
        // the counterfactual holds: a replay at that capacity runs out of memory nowhere
        CliRunner.Result check = CliRunner.run("replay", "--json", "--capacity", smallest + "B", f.toString());
        assertEquals(0, new ObjectMapper().readTree(check.out()).get(0).get("predicted_ooms").asInt(), check.out());
        CliRunner.Result text = CliRunner.run("explain-oom", "--capacity", "1GiB", f.toString());
        assertTrue(text.out().contains("cause: " + e.get("cause").asText().replace('_', ' ')), text.out());
        assertTrue(text.out().contains("smallest capacity that fits"), text.out());
    }

    @Test
    void aSnapshotWithoutTraceIsRefused() {
        CliRunner.Result r = CliRunner.run("explain-oom", real("verl-megatron-vllm_segments-only.pickle").toString());
        assertEquals(2, r.exitCode(), r.out());
        assertTrue(r.err().contains("has no trace"), r.err());
    }
}
