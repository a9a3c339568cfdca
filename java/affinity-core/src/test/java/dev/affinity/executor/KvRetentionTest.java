package dev.affinity.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

/** TensorRT-LLM's KvCacheRetentionConfig rules, and its JSON on the wire between Affinity processes. */
class KvRetentionTest {
  @Test
  void upstreamsRulesHold() {
    KvRetention.TokenRange a = new KvRetention.TokenRange(20, KvRetention.NONE, 60, 1000);
    KvRetention.TokenRange b = new KvRetention.TokenRange(0, 20, 40, KvRetention.NONE);
    assertEquals(List.of(a, b), new KvRetention(List.of(a, b), 35, KvRetention.NONE).ranges(), "any order; touching is fine");
    assertMessage("priority 101 is outside [0, 100]", () -> new KvRetention.TokenRange(0, 10, 101, 0));
    assertMessage("token_start -1 is negative", () -> new KvRetention.TokenRange(-1, 10, 50, 0));
    assertMessage("positive, non-zero length", () -> new KvRetention.TokenRange(5, 5, 50, 0));
    assertMessage("duration_ms -2 is negative", () -> new KvRetention.TokenRange(0, 5, 50, -2));
    assertMessage("only the last token range may be open-ended", () -> new KvRetention(List.of(
        new KvRetention.TokenRange(0, KvRetention.NONE, 50, 0), new KvRetention.TokenRange(10, 20, 50, 0)), 35, -1));
    assertMessage("overlap", () -> new KvRetention(List.of(new KvRetention.TokenRange(0, 20, 50, 0),
        new KvRetention.TokenRange(10, 30, 50, 0)), 35, -1));
    assertMessage("decode_retention_priority -1", () -> new KvRetention(List.of(), -1, -1));
  }

  private static void assertMessage(String part, Runnable r) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
    assertTrue(e.getMessage().contains(part), e.getMessage());
  }

  @Test
  void theJsonUsesTheBindingsFieldNames() {
    assertEquals("{\"token_range_retention_configs\":[{\"token_start\":0,\"token_end\":null,\"priority\":80,"
        + "\"duration_ms\":30000}],\"decode_retention_priority\":35,\"decode_duration_ms\":null}",
        KvRetentionJson.toJson(KvRetention.wholePrompt(80, 30_000)));
  }

  @Test
  void malformedJsonIsNamed() {
    for (String[] c : new String[][] {
        {"[1]", "must be a JSON object"},
        {"{\"decode_retention_priority\": 35}", "token_range_retention_configs must be an array"},
        {"{\"token_range_retention_configs\": [{\"token_start\": 0, \"priority\": 50, \"colour\": 1}]}",
            "token_range_retention_configs[0].colour is not a field"},
        {"{\"token_range_retention_configs\": [{\"token_start\": \"0\", \"priority\": 50}]}", "token_start must be an integer"},
        {"{\"token_range_retention_configs\": [{\"token_start\": 0, \"priority\": 50, \"duration_ms\": -4}]}",
            "duration_ms must be a number of milliseconds"},
        {"{\"token_range_retention_configs\": [{\"token_start\": 0, \"token_end\": 4, \"priority\": 500}]}",
            "token_range_retention_configs[0]: priority 500 is outside"},
        {"{not json", "is not JSON"}}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> KvRetentionJson.parse(c[0]));
      assertTrue(e.getMessage().contains(c[1]), c[0] + " -> " + e.getMessage());
    }
  }

  @Property
  void everyValidRetentionSurvivesItsJson(@ForAll @IntRange(max = 100_000) int start, @ForAll @IntRange(min = 1, max = 1000) int length,
      @ForAll boolean open, @ForAll @IntRange(max = 100) int priority, @ForAll @LongRange(min = -1, max = 1L << 40) long duration,
      @ForAll @IntRange(max = 100) int decode) {
    KvRetention r = new KvRetention(List.of(new KvRetention.TokenRange(start, open ? KvRetention.NONE : start + length,
        priority, duration)), decode, duration);
    assertEquals(r, KvRetentionJson.parse(KvRetentionJson.toJson(r)));
  }
}
