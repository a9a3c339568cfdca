package dev.affinity.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Every case of TensorRT-LLM's golden vectors (test resources golden/, see its README). */
class BlockHasherGoldenTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  static List<JsonNode> lines(String name) throws Exception {
    List<JsonNode> out = new ArrayList<>();
    try (var in = BlockHasherGoldenTest.class.getResourceAsStream("/golden/" + name);
        var r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      for (String l; (l = r.readLine()) != null; ) {
        if (!l.isBlank()) {
          out.add(JSON.readTree(l));
        }
      }
    }
    return out;
  }

  private static int[] tokens(JsonNode j) {
    int[] t = new int[j.size()];
    for (int i = 0; i < t.length; i++) {
      t[i] = j.get(i).asInt();
    }
    return t;
  }

  private static String[] strings(JsonNode j) {
    String[] s = new String[j.size()];
    for (int i = 0; i < s.length; i++) {
      s[i] = j.get(i).asText();
    }
    return s;
  }

  @Test
  void chainsMatchEveryGoldenCaseForAllThreeAlgorithms() throws Exception {
    List<JsonNode> cases = lines("kv_block_hash_chains.jsonl");
    assertEquals(240, cases.size());
    for (JsonNode c : cases) {
      int[] t = tokens(c.get("tokens"));
      int tpb = c.get("tokens_per_block").asInt();
      String salt = c.get("cache_salt").isNull() ? null : c.get("cache_salt").asText();
      if (salt != null) {
        assertEquals(c.get("cache_salt_id").asText(), Long.toUnsignedString(BlockHasher.cacheSaltId(salt)));
      }
      assertArrayEquals(strings(c.get("v1")), new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, tpb).wireHashes(t, salt), c.toString());
      assertArrayEquals(strings(c.get("v2_sha256")), new BlockHasher(HashAlgorithm.V2_SHA256, tpb).wireHashes(t, salt), c.toString());
      assertArrayEquals(strings(c.get("v2_sha256_64")), new BlockHasher(HashAlgorithm.V2_SHA256_64, tpb).wireHashes(t, salt), c.toString());
      // the index keys of v2_sha256 equal those of v2_sha256_64
      String[] hex = strings(c.get("v2_sha256"));
      long[] keys = new BlockHasher(HashAlgorithm.V2_SHA256, tpb).keys(t, salt);
      for (int i = 0; i < hex.length; i++) {
        assertEquals(BlockHasher.keyOfHex(hex[i]), keys[i]);
        assertEquals(c.get("v2_sha256_64").get(i).asText(), Long.toUnsignedString(keys[i]));
      }
    }
  }

  @Test
  void singleBlockV1KeysMatchEveryGoldenCase() throws Exception {
    List<JsonNode> cases = lines("kv_block_key_v1.jsonl");
    assertEquals(120, cases.size());
    for (JsonNode c : cases) {
      int[] t = tokens(c.get("tokens"));
      Long lora = c.get("lora_task_id").isNull() ? null : Long.parseUnsignedLong(c.get("lora_task_id").asText());
      Long salt = c.get("cache_salt_id").isNull() ? null : Long.parseUnsignedLong(c.get("cache_salt_id").asText());
      long parent = Long.parseUnsignedLong(c.get("parent_hash").asText());
      assertEquals(c.get("hash").asText(),
          Long.toUnsignedString(BlockHasher.hashV1BlockKey(t, 0, t.length, parent, lora, salt)), c.toString());
    }
  }

  @Test
  void routerRulesLastTokenExcludedAndPartialBlockHashed() {
    BlockHasher h = new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, 4);
    assertEquals(2, h.blockCount(9));      // 8 usable tokens = 2 full blocks
    assertEquals(3, h.blockCount(10));     // 9 usable = 2 full + 1 partial
    assertEquals(2, h.fullBlockCount(10));
    assertEquals(0, h.blockCount(1));
    assertEquals(0, h.keys(new int[] {5}, null).length);
    int[] a = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    int[] b = {1, 2, 3, 4, 5, 6, 7, 8, 99};
    assertArrayEquals(h.keys(a, null), h.keys(b, null), "the last token never counts");
  }

  @Test
  void emptySaltIsASaltDistinctFromNone() {
    for (HashAlgorithm alg : HashAlgorithm.values()) {
      BlockHasher h = new BlockHasher(alg, 2);
      int[] t = {1, 2, 3, 4, 5};
      assertNotEquals(h.keys(t, "")[0], h.keys(t, null)[0], alg.toString());
    }
  }

  @Test
  void algorithmNamesParse() {
    assertEquals(HashAlgorithm.V2_SHA256_64, HashAlgorithm.fromWireName("v2_sha256_64"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HashAlgorithm.fromWireName("xxh3"));
    assertEquals("unknown KV cache hash algorithm \"xxh3\" (known: v1_block_key, v2_sha256, v2_sha256_64)", e.getMessage());
  }
}
