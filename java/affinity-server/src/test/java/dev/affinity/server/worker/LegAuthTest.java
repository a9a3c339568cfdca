package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.conversation.HeaderSource;
import dev.affinity.protocol.InternalAuth;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link LegAuth}: the canonical claim, signing, and the verifier's signature, window and replay checks, on an injected clock. */
class LegAuthTest {
  private static final InternalAuth AUTH = new InternalAuth("leg-auth-test-key");
  private static final long T0 = 1_764_600_000_000L;
  private static final byte[] BODY = """
      {"model":"m","prompt":[1,2,3],"disaggregated_params":{"request_type":"context_only","disagg_request_id":7}}"""
      .getBytes(StandardCharsets.UTF_8);

  /** A clock the test moves by hand. */
  static final class ManualClock extends Clock {
    long millis;

    ManualClock(long millis) {
      this.millis = millis;
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return Instant.ofEpochMilli(millis);
    }
  }

  private static HeaderSource headers(String... nameValues) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i < nameValues.length; i += 2) {
      if (nameValues[i + 1] != null) {
        m.put(nameValues[i], nameValues[i + 1]);
      }
    }
    return HeaderSource.of(m);
  }

  private static String sign(long ts, String nonce, byte[] body, String rankHint, String worker) {
    return LegAuth.headerValue(AUTH, new LegAuth.Claim("POST", "/v1/completions", LegAuth.sha256(body), rankHint, null,
        worker, ts, nonce));
  }

  private static LegAuth.Verifier verifier(Clock clock) {
    return new LegAuth.Verifier(AUTH, "ctx-0", clock, Duration.ofSeconds(60));
  }

  @Test
  void theClaimIsCanonicalJsonWithSortedKeysAndTheHeaderCarriesTimestampNonceAndHmac() {
    LegAuth.Claim claim = new LegAuth.Claim("POST", "/v1/completions", LegAuth.sha256(new byte[0]), "1", "parent",
        "ctx-0", T0, "abcdef0123456789");
    assertEquals("{\"body_sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\","
        + "\"method\":\"POST\",\"nonce\":\"abcdef0123456789\",\"path\":\"/v1/completions\","
        + "\"purpose\":\"x-affinity-leg-auth\",\"rank_hint\":\"1\",\"subagent_affinity_id\":\"parent\","
        + "\"ts\":1764600000000,\"worker\":\"ctx-0\"}", claim.canonicalJson());
    String header = LegAuth.headerValue(AUTH, claim);
    assertEquals("t=1764600000000,n=abcdef0123456789," + AUTH.sign(claim.canonicalJson()), header);
    assertTrue(header.matches("t=\\d+,n=[0-9a-f]+,sha256=[0-9a-f]{64}"), header);
  }

  @Test
  void aSignedRequestIsAcceptedOnceAndItsReplayIsRefused() {
    ManualClock clock = new ManualClock(T0);
    LegAuth.Verifier v = verifier(clock);
    HeaderSource h = headers(LegAuth.HEADER, sign(T0, "nonce-0001", BODY, "1", "ctx-0"),
        WorkerExtensions.RANK_HINT_HEADER, "1");
    assertNull(v.refusal("POST", "/v1/completions", h, BODY));
    clock.millis += 5_000;
    String replay = v.refusal("POST", "/v1/completions", h, BODY);
    assertNotNull(replay);
    assertTrue(replay.contains("replayed"), replay);
  }

  @Test
  void anAlteredBodyRankHintPathOrWorkerIsRefused() {
    LegAuth.Verifier v = verifier(new ManualClock(T0));
    String header = sign(T0, "nonce-0002", BODY, "0", "ctx-0");
    byte[] otherPrompt = new String(BODY, StandardCharsets.UTF_8).replace("[1,2,3]", "[1,2,4]")
        .getBytes(StandardCharsets.UTF_8);
    String refusal = v.refusal("POST", "/v1/completions",
        headers(LegAuth.HEADER, header, WorkerExtensions.RANK_HINT_HEADER, "0"), otherPrompt);
    assertTrue(refusal != null && refusal.contains("invalid"), "prompt altered: " + refusal);
    refusal = v.refusal("POST", "/v1/completions",
        headers(LegAuth.HEADER, header, WorkerExtensions.RANK_HINT_HEADER, "1"), BODY);
    assertTrue(refusal != null && refusal.contains("invalid"), "rank hint altered: " + refusal);
    refusal = v.refusal("POST", "/v1/completions", headers(LegAuth.HEADER, header), BODY);
    assertTrue(refusal != null && refusal.contains("invalid"), "rank hint dropped: " + refusal);
    refusal = v.refusal("POST", "/v1/chat/completions",
        headers(LegAuth.HEADER, header, WorkerExtensions.RANK_HINT_HEADER, "0"), BODY);
    assertTrue(refusal != null && refusal.contains("invalid"), "another endpoint: " + refusal);
    refusal = v.refusal("POST", "/v1/completions", headers(LegAuth.HEADER, header,
        WorkerExtensions.RANK_HINT_HEADER, "0", InternalAuth.SUBAGENT_AFFINITY_HEADER, "someone-else"), BODY);
    assertTrue(refusal != null && refusal.contains("invalid"), "affinity id added: " + refusal);
    LegAuth.Verifier other = new LegAuth.Verifier(AUTH, "ctx-1", new ManualClock(T0), Duration.ofSeconds(60));
    refusal = other.refusal("POST", "/v1/completions",
        headers(LegAuth.HEADER, header, WorkerExtensions.RANK_HINT_HEADER, "0"), BODY);
    assertTrue(refusal != null && refusal.contains("invalid"), "signed for another worker: " + refusal);
    LegAuth.Verifier otherKey = new LegAuth.Verifier(new InternalAuth("another-key"), "ctx-0", new ManualClock(T0),
        Duration.ofSeconds(60));
    assertNotNull(otherKey.refusal("POST", "/v1/completions",
        headers(LegAuth.HEADER, header, WorkerExtensions.RANK_HINT_HEADER, "0"), BODY));
    assertNull(v.refusal("POST", "/v1/completions",
        headers(LegAuth.HEADER, header, WorkerExtensions.RANK_HINT_HEADER, "0"), BODY), "unaltered: accepted");
    assertEquals(1, v.remembered(), "refused requests leave no nonce behind");
  }

  @Test
  void theTimestampMustBeWithinTheWindowEitherWay() {
    LegAuth.Verifier v = verifier(new ManualClock(T0));
    assertNull(v.refusal("POST", "/v1/completions", headers(LegAuth.HEADER, sign(T0 - 60_000, "nonce-old-edge", BODY,
        null, "ctx-0")), BODY), "60 s old: inside the window");
    assertNull(v.refusal("POST", "/v1/completions", headers(LegAuth.HEADER, sign(T0 + 60_000, "nonce-new-edge", BODY,
        null, "ctx-0")), BODY), "60 s ahead: inside the window");
    String old = v.refusal("POST", "/v1/completions", headers(LegAuth.HEADER, sign(T0 - 60_001, "nonce-too-old", BODY,
        null, "ctx-0")), BODY);
    assertTrue(old != null && old.contains("timestamp"), "" + old);
    String ahead = v.refusal("POST", "/v1/completions", headers(LegAuth.HEADER, sign(T0 + 60_001, "nonce-too-new",
        BODY, null, "ctx-0")), BODY);
    assertTrue(ahead != null && ahead.contains("timestamp"), "" + ahead);
  }

  @Test
  void noncesAreForgottenOnlyOnceTheirTimestampHasLeftTheWindow() {
    ManualClock clock = new ManualClock(T0);
    LegAuth.Verifier v = verifier(clock);
    HeaderSource h = headers(LegAuth.HEADER, sign(T0, "nonce-0003", BODY, null, "ctx-0"));
    assertNull(v.refusal("POST", "/v1/completions", h, BODY));
    clock.millis = T0 + 60_000; // the last moment the timestamp is accepted: still remembered
    assertTrue(v.refusal("POST", "/v1/completions", h, BODY).contains("replayed"));
    clock.millis = T0 + 60_001;
    assertNull(v.refusal("POST", "/v1/completions", headers(LegAuth.HEADER, sign(clock.millis, "nonce-0004", BODY,
        null, "ctx-0")), BODY));
    assertEquals(1, v.remembered(), "the first nonce expired with its timestamp");
    assertTrue(v.refusal("POST", "/v1/completions", h, BODY).contains("timestamp"), "and the window refuses it");
  }

  @Test
  void missingOrMalformedHeadersAreRefused() {
    LegAuth.Verifier v = verifier(new ManualClock(T0));
    assertTrue(v.refusal("POST", "/v1/completions", headers(), BODY).startsWith("missing"));
    String valid = sign(T0, "nonce-0005", BODY, null, "ctx-0");
    for (String bad : new String[] {"", "sha256=00", valid.replace("t=", "ts="), valid.replace(",n=", ",n=!"),
        "t=-5,n=nonce-0005," + valid.substring(valid.indexOf("sha256=")), valid + ",x=1", "t=1,n=short,sha256=00"}) {
      String r = v.refusal("POST", "/v1/completions", headers(LegAuth.HEADER, bad), BODY);
      assertNotNull(r, bad);
      assertTrue(r.startsWith("malformed"), bad + " -> " + r);
    }
  }

  @Test
  void theSignerUsesAFreshNonceForEveryWriteAndItsOwnClock() {
    ManualClock clock = new ManualClock(T0);
    LegAuth.Signer s = new LegAuth.Signer(AUTH, clock);
    String a = s.sign("POST", "/kv_cache_events", null, null, null, "ctx-0");
    String b = s.sign("POST", "/kv_cache_events", null, null, null, "ctx-0");
    assertNotEquals(a, b);
    assertTrue(a.startsWith("t=" + T0 + ",n="), a);
    LegAuth.Verifier v = verifier(clock);
    assertNull(v.refusal("POST", "/kv_cache_events", headers(LegAuth.HEADER, a), new byte[0]));
    assertNull(v.refusal("POST", "/kv_cache_events", headers(LegAuth.HEADER, b), new byte[0]));
    assertNotNull(v.refusal("POST", "/kv_cache_events", headers(LegAuth.HEADER, a), new byte[0]));
  }
}
