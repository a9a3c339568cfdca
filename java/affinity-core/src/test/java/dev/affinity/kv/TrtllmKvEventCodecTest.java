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

  /**
   * The body read token by token gives the events the tree gives, for random batches of every type written in
   * TensorRT-LLM's shape with their fields in a random order, unknown fields among them (objects, arrays, nulls), and
   * hashes as unsigned integers, big integers or hex strings.
   */
  @Test
  void theBodyReadTokenByTokenIsTheTreesReading() throws Exception {
    java.util.Random r = new java.util.Random(46);
    for (int run = 0; run < 300; run++) {
      List<KvEvent> in = new java.util.ArrayList<>();
      for (int k = r.nextInt(6); k > 0; k--) {
        long[] hashes = r.longs(1 + r.nextInt(5)).toArray();
        int[] tokens = r.ints(hashes.length * 2L, 0, 152_000).toArray();
        in.add(switch (r.nextInt(4)) {
          case 0 -> new KvEvent(k, KvEventType.CREATED, r.nextInt(4), 128, false, 0, null, null, r.nextInt(9000), 0);
          case 1 -> {
            boolean parent = r.nextBoolean();
            yield new KvEvent(k, KvEventType.STORED, r.nextInt(4), 128, parent, parent ? r.nextLong() : 0, hashes,
                tokens, 0, 0);
          }
          case 2 -> new KvEvent(k, KvEventType.REMOVED, r.nextInt(4), 128, false, 0, hashes, null, 0, 0);
          default -> new KvEvent(k, KvEventType.UPDATED, r.nextInt(4), 128, false, 0, new long[] {hashes[0]}, null,
              r.nextInt(100), 0);
        });
      }
      com.fasterxml.jackson.databind.JsonNode tree = shuffled(TrtllmKvEventCodec.toJson(in, 2), r);
      byte[] body = JSON.writeValueAsBytes(tree);
      assertEquals(in, TrtllmKvEventCodec.parse(body), tree.toString());
      assertEquals(in, TrtllmKvEventCodec.parse(JSON.readTree(body)));
    }
  }

  /** Its fields in a random order, with unknown ones added, hashes spelled as hex where 64 hex digits would do. */
  private static com.fasterxml.jackson.databind.JsonNode shuffled(com.fasterxml.jackson.databind.JsonNode n,
      java.util.Random r) {
    if (n.isArray()) {
      com.fasterxml.jackson.databind.node.ArrayNode out = JSON.createArrayNode();
      n.forEach(e -> out.add(shuffled(e, r)));
      return out;
    }
    if (!n.isObject()) {
      return n;
    }
    List<String> names = new java.util.ArrayList<>();
    n.fieldNames().forEachRemaining(names::add);
    java.util.Collections.shuffle(names, r);
    com.fasterxml.jackson.databind.node.ObjectNode out = JSON.createObjectNode();
    if (r.nextInt(3) == 0) {
      out.putObject("x_extra").putArray("block_hash").add(-1).addObject().put("type", "moved");
    }
    for (String name : names) {
      out.set(name, shuffled(n.get(name), r));
    }
    if (r.nextInt(3) == 0) {
      out.putNull("x_null");
    }
    return out;
  }

  /** A bad body is refused, read as a tree or token by token, naming the element alike. */
  @Test
  void aBadBodyIsRefusedAlikeEitherWay() throws Exception {
    String[] bad = {
        "[{\"data\": {\"type\": \"stored\", \"blocks\": [{\"block_hash\": -1}]}}]",
        "[{\"data\": {\"blocks\": [{\"block_hash\": 1}, {\"tokens\": []}], \"type\": \"stored\"}}]",
        "[{\"data\": {\"type\": \"stored\", \"blocks\": [], \"parent_hash\": \"xyz\"}}]",
        "[{\"data\": {\"type\": \"removed\", \"block_hashes\": [1, 1.5]}}]",
        "[{\"data\": {\"type\": \"updated\"}}]",
        "[{\"data\": {\"type\": \"updated\", \"block_hash\": true}}]",
        "[{\"data\": {\"type\": \"updated\", \"block_hash\": 18446744073709551616}}]",
        "[{\"data\": {\"type\": \"moved\"}}]",
        "[{\"data\": {\"type\": 3}}]",
        "[{\"data\": []}]",
        "[{\"event_id\": 1}]",
        "[{}, 3]"};
    for (String b : bad) {
      IllegalArgumentException tree = assertThrows(IllegalArgumentException.class,
          () -> TrtllmKvEventCodec.parse(JSON.readTree(b)), b);
      IllegalArgumentException tokens = assertThrows(IllegalArgumentException.class,
          () -> TrtllmKvEventCodec.parse(b.getBytes(java.nio.charset.StandardCharsets.UTF_8)), b);
      assertEquals(tree.getMessage(), tokens.getMessage(), b);
      assertTrue(tree.getMessage().startsWith("kv_cache_events[0]"), tree.getMessage());
    }
    // removed and updated events ignore a stored event's fields, and the other way round
    assertEquals(1, TrtllmKvEventCodec.parse(("[{\"data\": {\"type\": \"removed\", \"block_hashes\": [2], "
        + "\"blocks\": [{\"block_hash\": -1}], \"block_hash\": {}}}]").getBytes()).size());
    for (String notJson : new String[] {"", "[", "[{}] x", "{}", "3"}) {
      assertThrows(IllegalArgumentException.class, () -> TrtllmKvEventCodec.parse(notJson.getBytes()), notJson);
    }
  }
}
