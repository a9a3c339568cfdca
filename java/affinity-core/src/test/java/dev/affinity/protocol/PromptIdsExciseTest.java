package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The byte pass that takes a context answer's top-level {@code prompt_token_ids} out before the scan
 * ({@link ResponseScan#withoutPromptIds}): for random answers (the field anywhere among the others, any whitespace,
 * decoys in strings and nested objects), the result is the same JSON with that array empty; answers whose array is
 * not plain integers, or that have none at the top level, are left as they are.
 */
class PromptIdsExciseTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static String ws(Random r) {
    return new String[] {"", "", " ", "\n  ", "\t"}[r.nextInt(5)];
  }

  @Test
  void theTopLevelIdsAreEmptiedAndNothingElseChanges() throws Exception {
    Random r = new Random(46);
    for (int i = 0; i < 500; i++) {
      StringBuilder ids = new StringBuilder("[");
      int n = r.nextInt(50);
      for (int k = 0; k < n; k++) {
        ids.append(k == 0 ? "" : "," + ws(r)).append(r.nextInt(200_000));
      }
      ids.append(ws(r)).append(']');
      String[] fields = {
          "\"id\":" + ws(r) + "\"chatcmpl-1 \\\"prompt_token_ids\\\":[1]\"",
          "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"a]}\\\\\",\"prompt_token_ids\":[9]}}]",
          "\"usage\":{\"prompt_tokens\":" + n + ",\"prompt_token_ids\":[5,6]}",
          "\"prompt_token_ids\"" + ws(r) + ":" + ws(r) + ids};
      for (int k = fields.length - 1; k > 0; k--) { // the ids anywhere among the fields
        int j = r.nextInt(k + 1);
        String t = fields[k];
        fields[k] = fields[j];
        fields[j] = t;
      }
      String answer = "{" + ws(r) + String.join("," + ws(r), fields) + ws(r) + "}";
      byte[] bytes = answer.getBytes(StandardCharsets.UTF_8);
      JsonNode out = JSON.readTree(ResponseScan.withoutPromptIds(bytes));
      ObjectNode expected = (ObjectNode) JSON.readTree(bytes);
      expected.putArray("prompt_token_ids");
      assertEquals(expected, out, answer);
    }
  }

  @Test
  void anArrayOfOtherThingsOrNoneAtTheTopIsLeftAsItIs() {
    for (String answer : new String[] {
        "{\"prompt_token_ids\":[1,\"2\"]}", "{\"prompt_token_ids\":null}", "{\"prompt_token_ids\":[1.5]}",
        "{\"a\":{\"prompt_token_ids\":[1]}}", "{\"a\":\"\\\"prompt_token_ids\\\":[1]\"}", "{\"prompt_token_ids\":[1,2"}) {
      byte[] bytes = answer.getBytes(StandardCharsets.UTF_8);
      assertSame(bytes, ResponseScan.withoutPromptIds(bytes), answer);
    }
  }
}
