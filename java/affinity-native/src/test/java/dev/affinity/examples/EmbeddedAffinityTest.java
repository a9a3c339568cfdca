package dev.affinity.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The embedding example of docs/embedding.md works as documented. */
class EmbeddedAffinityTest {

  @Test
  void aSubAgentRunsOnItsParentsContextWorkerAndRank() throws Exception {
    try (EmbeddedAffinity affinity = new EmbeddedAffinity()) {
      String body = "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"Say hello\"}], \"max_tokens\": 8}";
      EmbeddedAffinity.Answer parent = affinity.chat(body, Map.of("x-session-id", "agent-1"));
      EmbeddedAffinity.Answer child = affinity.chat(body, Map.of("x-session-id", "sub-1", "X-Dynamo-Parent-Session-ID", "agent-1"));
      assertEquals(parent.route().ctxWorker(), child.route().ctxWorker());
      assertEquals(parent.route().ctxRank(), child.route().ctxRank());
      assertEquals("agent-1", child.route().affinityId());
      assertEquals(8, child.response().usage().completionTokens());
    }
  }
}
