package dev.affinity.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import java.util.List;
import org.junit.jupiter.api.Test;

class TrtllmKvEventCodecTest {
  static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void parsesTensorRtLlmEventsIncludingUnsigned64BitAndHexHashes() throws Exception {
    String body = """
        [{"event_id": 1, "data": {"type": "created", "num_blocks_per_cache_level": [1024, 4096]}, "window_size": 2048},
         {"event_id": 2, "data": {"type": "stored", "parent_hash": null, "blocks": [
            {"type": "stored_block", "block_hash": 18446744073709551615, "tokens": [{"type": "unique_token", "token_id": 5, "token_extra_id": 0}],
             "lora_id": null, "cache_level": 0, "priority": 35},
            {"type": "stored_block", "block_hash": "8e3e5d894fbe3dd013c6c0a5660d6b8a075ce0ada8f9fffaf8df7dc82210c3cc", "tokens": []}]},
          "window_size": 2048, "attention_dp_rank": 3},
         {"event_id": 3, "data": {"type": "removed", "block_hashes": [1, 2]}, "window_size": 2048},
         {"event_id": 4, "data": {"type": "updated", "block_hash": 9, "cache_level": null, "priority": {"old_value": 35, "new_value": 90}}}]
        """;
    List<KvEvent> ev = TrtllmKvEventCodec.parse(JSON.readTree(body));
    assertEquals(4, ev.size());
    assertEquals(5120, ev.get(0).value());
    KvEvent stored = ev.get(1);
    assertEquals(KvEventType.STORED, stored.type());
    assertEquals(3, stored.rank());
    assertEquals(-1L, stored.blockHashes()[0], "2^64 - 1 is the all-ones pattern");
    assertEquals(BlockHasher.keyOfHex("8e3e5d894fbe3dd013c6c0a5660d6b8a075ce0ada8f9fffaf8df7dc82210c3cc"), stored.blockHashes()[1]);
    assertArrayEquals(new int[] {5}, stored.tokens());
    assertArrayEquals(new long[] {1, 2}, ev.get(2).blockHashes());
    assertEquals(90, ev.get(3).value());
  }

  @Test
  void roundTripsWhatTheCpuExecutorEmits() {
    List<KvEvent> in = List.of(
        new KvEvent(0, KvEventType.CREATED, 0, 128, false, 0, null, null, 64, 0),
        new KvEvent(1, KvEventType.STORED, 1, 128, true, -5L, new long[] {-2L, 3L}, new int[] {1, 2, 3, 4}, 0, 0),
        new KvEvent(2, KvEventType.REMOVED, 1, 128, false, 0, new long[] {3L}, null, 0, 0),
        new KvEvent(3, KvEventType.UPDATED, 1, 128, false, 0, new long[] {-2L}, null, 90, 0));
    List<KvEvent> out = TrtllmKvEventCodec.parse(TrtllmKvEventCodec.toJson(in, 2));
    assertEquals(in, out);
    assertTrue(TrtllmKvEventCodec.toJson(in, 2).toString().contains("\"block_hash\":18446744073709551614"));
  }

  @Test
  void badBodiesNameTheElement() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> TrtllmKvEventCodec.parse(JSON.readTree("[{\"data\": {\"type\": \"stored\", \"blocks\": [{\"block_hash\": -1}]}}]")));
    assertEquals("kv_cache_events[0].data.blocks[0].block_hash: -1 is not an unsigned 64-bit hash", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> TrtllmKvEventCodec.parse(JSON.readTree("{}")));
    IllegalArgumentException t = assertThrows(IllegalArgumentException.class,
        () -> TrtllmKvEventCodec.parse(JSON.readTree("[{\"data\": {\"type\": \"moved\"}}]")));
    assertEquals("kv_cache_events[0].data.type: unknown event type \"moved\"", t.getMessage());
  }
}
