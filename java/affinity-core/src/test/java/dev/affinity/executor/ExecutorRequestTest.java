package dev.affinity.executor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class ExecutorRequestTest {

  @Test
  void builderDefaultsMatchTheNativeFacade() {
    ExecutorRequest r = ExecutorRequest.builder(new int[] {1, 2}, 3).build();
    assertEquals(RequestType.CONTEXT_AND_GENERATION, r.type());
    assertEquals(ExecutorRequest.NONE, r.endId());
    assertEquals(ExecutorRequest.NONE, r.adpRankHint());
    assertEquals(0.5f, r.priority());
    assertNull(r.cacheSalt(), "no salt unless set; an empty salt is a salt");
    assertEquals("", ExecutorRequest.builder(new int[] {1}, 1).cacheSalt("").build().cacheSalt());
  }

  @Test
  void contextPhaseMakesTheRequestGenerationOnlyAndRoundTrips() {
    ContextPhaseParams cp = new ContextPhaseParams(5, 1, new int[] {42}, new byte[] {1, 2});
    ExecutorRequest r = ExecutorRequest.builder(new int[] {1, 2}, 3).contextPhase(cp).conversationId("c")
        .subagentAffinityId("parent").adpRankHint(1, false).build();
    assertEquals(RequestType.GENERATION_ONLY, r.type());
    assertEquals(r, r.toBuilder().build());
    assertArrayEquals(new int[] {42}, r.contextPhase().firstGenTokens());
  }

  @Test
  void codesMatchTheNativeEnums() {
    assertEquals(1, RequestType.CONTEXT_ONLY.code());
    assertEquals(FinishReason.CANCELLED, FinishReason.fromCode(4));
    assertEquals(KvEventType.REMOVED, KvEventType.fromCode(2));
    assertEquals("stored", KvEventType.STORED.wireName());
    assertThrows(IllegalArgumentException.class, () -> FinishReason.fromCode(17));
  }
}
