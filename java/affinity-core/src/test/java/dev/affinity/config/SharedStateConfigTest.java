package dev.affinity.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code affinity.shared_state}: the NATS block, its defaults, and errors naming the key and line. */
class SharedStateConfigTest {
  static final String WORKERS = """
      context_servers: {num_instances: 1, urls: ["localhost:8001"]}
      generation_servers: {num_instances: 1, urls: ["localhost:8002"]}
      """;

  @TempDir
  Path dir;

  private static DisaggConfig parse(String affinity) {
    return ConfigLoader.parse(WORKERS + "affinity:\n" + affinity, "shared.yaml").config();
  }

  private static String fails(String affinity) {
    return assertThrows(ConfigException.class, () -> parse(affinity)).getMessage();
  }

  @Test
  void absentMeansNothingShared() {
    assertEquals(Optional.empty(), parse("  model: m\n").affinity().sharedState());
    assertEquals(Optional.empty(), parse("  shared_state: null\n").affinity().sharedState());
    assertEquals(Optional.empty(), AffinitySettings.defaults().sharedState());
  }

  @Test
  void serversAndDefaults() {
    SharedStateSettings s = parse("  shared_state: {nats: \"nats://10.0.0.1:4222, tls://nats.internal:4443\"}\n")
        .affinity().sharedState().orElseThrow();
    assertEquals(List.of("nats://10.0.0.1:4222", "tls://nats.internal:4443"), s.servers());
    assertEquals(600, s.eventRetentionSeconds());
    assertEquals(3, s.drainLeaseSeconds());
    assertTrue(s.tls());
    assertEquals("none", s.authKind());
  }

  @Test
  void authenticationAndNoSecretInToString() {
    SharedStateSettings s = parse("""
          shared_state:
            nats: nats://127.0.0.1:4222
            user: affinity
            password: s3cret-pw
            event_retention_seconds: 120
            drain_lease_seconds: 5
        """).affinity().sharedState().orElseThrow();
    assertEquals(Optional.of("affinity"), s.user());
    assertEquals(Optional.of("s3cret-pw"), s.password());
    assertEquals(120, s.eventRetentionSeconds());
    assertEquals(5, s.drainLeaseSeconds());
    assertFalse(s.toString().contains("s3cret-pw"), s.toString());
    SharedStateSettings t = parse("  shared_state: {nats: nats://h:4222, token: t0ken-value}\n").affinity().sharedState()
        .orElseThrow();
    assertFalse(t.toString().contains("t0ken-value"), t.toString());
    assertFalse(parse("  shared_state: {nats: nats://h:4222, token: t0ken-value}\n").affinity().toString()
        .contains("t0ken-value"));
  }

  @Test
  void badServerNamesTheKeyAndLine() {
    String m = fails("  shared_state: {nats: \"http://x\"}\n");
    assertTrue(m.contains("shared.yaml:4:24: affinity.shared_state.nats: expected nats://HOST:PORT or tls://HOST:PORT"),
        m);
    assertTrue(m.contains("http://x"), m);
    assertTrue(fails("  shared_state: {nats: \"nats://x\"}\n").contains("no port"));
    assertTrue(fails("  shared_state: {nats: \"nats://a:1,\"}\n").contains("an empty entry"));
    assertTrue(fails("  shared_state: {nats: \"nats://u:p@a:1\"}\n").contains("not in the URL"));
  }

  @Test
  void missingServersNamesTheKey() {
    String m = fails("  shared_state: {token: abc}\n");
    assertTrue(m.contains("shared.yaml:4:3: affinity.shared_state.nats: is required"), m);
    assertTrue(fails("  shared_state: {}\n").contains("affinity.shared_state.nats: is required"));
    assertTrue(fails("  shared_state: {nats: null}\n").contains("affinity.shared_state.nats: is required"));
  }

  @Test
  void otherMistakes() {
    assertTrue(fails("  shared_state: {nats: nats://h:1, token: a, user: u, password: p}\n")
        .contains("affinity.shared_state.token: give one way to authenticate"));
    assertTrue(fails("  shared_state: {nats: nats://h:1, user: u}\n")
        .contains("affinity.shared_state.password: is required with affinity.shared_state.user"));
    assertTrue(fails("  shared_state: {nats: nats://h:1, drain_lease_seconds: 0.5}\n")
        .contains("affinity.shared_state.drain_lease_seconds: expected a number of seconds >= 1"));
    assertTrue(fails("  shared_state: {nats: nats://h:1, event_retention_seconds: 0}\n")
        .contains("affinity.shared_state.event_retention_seconds"));
    assertTrue(fails("  shared_state: {nats: nats://h:1, creds_file: /no/such.creds}\n")
        .contains("affinity.shared_state.creds_file: /no/such.creds does not exist"));
    assertTrue(fails("  shared_state: {nats: nats://h:1, natz: 1}\n")
        .contains("affinity.shared_state.natz: unknown key"));
    assertTrue(fails("  shared_state: nats://h:1\n").contains("affinity.shared_state"));
  }

  @Test
  void filesResolveAgainstTheConfigFolder() throws Exception {
    Files.writeString(dir.resolve("ca.pem"), "-----BEGIN CERTIFICATE-----\n");
    Path file = dir.resolve("disagg.yaml");
    Files.writeString(file, WORKERS + "affinity:\n  shared_state: {nats: nats://h:4222, tls_ca_file: ca.pem}\n");
    SharedStateSettings s = ConfigLoader.load(file).config().affinity().sharedState().orElseThrow();
    assertEquals(Optional.of(dir.resolve("ca.pem").toAbsolutePath().normalize().toString()), s.tlsCaFile());
    assertTrue(s.tls());
  }
}
