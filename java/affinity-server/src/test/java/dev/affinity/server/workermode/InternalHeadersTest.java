package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.conversation.HeaderSource;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.SubagentAffinityClaim;
import dev.affinity.server.worker.WorkerExtensions;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What a worker process makes of the internal headers: signatures, the affinity claim's role, the rank hint. */
class InternalHeadersTest {
  static final ProtocolCodec CODEC = new ProtocolCodec();
  static final InternalAuth AUTH = new InternalAuth("k");
  static final InternalHeaders KEYED = new InternalHeaders("w", AUTH, 2);
  static final InternalHeaders KEYLESS = new InternalHeaders("w", null, 2);

  static OpenAiRequest leg(String type, boolean withState) {
    return CODEC.parseCompletionRequest(("""
        {"model": "m", "prompt": [1, 2, 3], "conversation_params": {"conversation_id": "child"},
         "disaggregated_params": {"request_type": "%s", "ctx_request_id": 7, "disagg_request_id": 9%s}}"""
        .formatted(type, withState ? ", \"encoded_opaque_state\": \"AAEC\"" : "")).getBytes(StandardCharsets.UTF_8));
  }

  static HeaderSource headers(String... kv) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return HeaderSource.of(m);
  }

  @Test
  void handOffStateNeedsAValidSignatureOnlyWhenAKeyIsSet() {
    OpenAiRequest gen = leg("generation_only", true);
    String good = AUTH.signDisagg(gen.disaggregatedParams());
    assertNull(KEYED.refusal(gen, headers(InternalAuth.DISAGG_AUTH_HEADER, good)));
    assertTrue(KEYED.refusal(gen, headers()).startsWith("missing"));
    assertTrue(KEYED.refusal(gen, headers(InternalAuth.DISAGG_AUTH_HEADER, "sha256=" + "0".repeat(64)))
        .startsWith("invalid"));
    assertNull(KEYLESS.refusal(gen, headers()), "no key: accepted unsigned, with a warning");
    assertNull(KEYED.refusal(leg("generation_only", false), headers()), "no hand-off state: nothing to sign");
    assertNull(KEYED.refusal(leg("context_only", true), headers()),
        "only generation legs use the state in the CPU executor");
  }

  @Test
  void anAffinityIdCountsOnlyWhenSignedForTheRoleItsRequestTypeImplies() {
    OpenAiRequest ctx = leg("context_only", false);
    OpenAiRequest gen = leg("generation_only", false);
    String forContext = AUTH.signSubagentAffinity(SubagentAffinityClaim.of(ctx, InternalAuth.Role.CONTEXT, "parent"));
    String forGeneration = AUTH.signSubagentAffinity(SubagentAffinityClaim.of(gen, InternalAuth.Role.GENERATION, "parent"));
    assertEquals("parent", KEYED.affinityId(ctx, headers(InternalAuth.SUBAGENT_AFFINITY_HEADER, " parent ",
        InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER, forContext)), "stripped, as the sender signs it");
    assertEquals("parent", KEYED.affinityId(gen, headers(InternalAuth.SUBAGENT_AFFINITY_HEADER, "parent",
        InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER, forGeneration)));

    OpenAiRequest genClaimedAsContext = leg("generation_only", false);
    assertNull(KEYED.affinityId(genClaimedAsContext, headers(InternalAuth.SUBAGENT_AFFINITY_HEADER, "parent",
        InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER, forContext)), "a signature for another role does not count");
    assertNull(KEYED.affinityId(ctx, headers(InternalAuth.SUBAGENT_AFFINITY_HEADER, "other-parent",
        InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER, forContext)), "nor one for another id");
    assertNull(KEYED.affinityId(ctx, headers(InternalAuth.SUBAGENT_AFFINITY_HEADER, "parent")), "unsigned");
    assertNull(KEYLESS.affinityId(ctx, headers(InternalAuth.SUBAGENT_AFFINITY_HEADER, "parent",
        InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER, forContext)), "no key: never trusted");
    OpenAiRequest aggregated = ctx.withDisaggregatedParams(
        ctx.disaggregatedParams().withRequestType(DisaggRequestType.CONTEXT_AND_GENERATION));
    assertNull(KEYED.affinityId(aggregated, headers(InternalAuth.SUBAGENT_AFFINITY_HEADER, "parent",
        InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER, AUTH.signSubagentAffinity(
            SubagentAffinityClaim.of(aggregated, InternalAuth.Role.GENERATION, "parent")))),
        "no role for an aggregated request: ignored");
    assertNull(KEYED.affinityId(ctx, headers(InternalAuth.SUBAGENT_AFFINITY_HEADER, "  ")));
  }

  @Test
  void theRankHintIsARankOfThisWorkerOrNothing() {
    assertEquals(1, KEYED.rankHint(headers(WorkerExtensions.RANK_HINT_HEADER, "1")));
    assertEquals(0, KEYED.rankHint(headers(WorkerExtensions.RANK_HINT_HEADER, " 0 ")));
    assertEquals(-1, KEYED.rankHint(headers()));
    for (String bad : new String[] {"2", "-1", "one", "", "99999999999"}) {
      assertEquals(-1, KEYED.rankHint(headers(WorkerExtensions.RANK_HINT_HEADER, bad)), bad);
    }
  }
}
