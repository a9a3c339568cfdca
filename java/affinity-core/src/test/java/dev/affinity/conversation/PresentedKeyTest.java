package dev.affinity.conversation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** One key, whichever header carries it, is one tenant; a request cannot authenticate as one key and be scoped as another. */
class PresentedKeyTest {
  static PresentedKey of(Map<String, String> headers) {
    return PresentedKey.of(HeaderSource.of(headers));
  }

  @Test
  void eitherHeaderGivesTheSameKeyAndTenant() {
    PresentedKey bearer = of(Map.of("Authorization", "Bearer  sk-a "));
    PresentedKey anthropic = of(Map.of("X-Api-Key", "sk-a"));
    PresentedKey both = of(Map.of("authorization", "bearer sk-a", "x-api-key", "sk-a"));
    assertEquals("sk-a", bearer.key());
    assertEquals(bearer, anthropic);
    assertEquals(bearer, both);
    assertTrue(bearer.tenant().matches("t-[0-9a-f]{16}"), bearer.tenant());
    assertEquals(bearer.tenant(), ConversationResolver.tenantOf(HeaderSource.of(Map.of("x-api-key", "sk-a"))));
    assertNotEquals(bearer.tenant(), of(Map.of("x-api-key", "sk-b")).tenant());
    assertTrue(!bearer.tenant().contains("sk-a"), "the key never becomes an id");
  }

  @Test
  void twoDifferentKeysOrNoUsableKeyPresentNone() {
    PresentedKey conflict = of(Map.of("authorization", "Bearer sk-a", "x-api-key", "sk-b"));
    assertNull(conflict.key());
    assertTrue(conflict.problem().contains("different keys"), conflict.problem());
    assertEquals("anonymous", conflict.tenant());
    assertTrue(of(Map.of("authorization", "Basic sk-a")).problem().contains("Bearer scheme"));
    assertTrue(of(Map.of("authorization", "Bearer ")).problem().startsWith("missing API key"));
    assertTrue(of(Map.of("x-api-key", "  ")).problem().startsWith("missing API key"));
    assertTrue(of(Map.of()).problem().startsWith("missing API key"));
    // a Basic header beside a good x-api-key is refused rather than ignored: one header may not hide another
    assertNull(of(Map.of("authorization", "Basic x", "x-api-key", "sk-a")).key());
  }
}
