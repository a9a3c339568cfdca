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

  /** Loads {@code affinity:} lines from a file in {@link #dir}, so that relative paths resolve against it. */
  private DisaggConfig load(String affinity) throws Exception {
    Path file = dir.resolve("disagg.yaml");
    Files.writeString(file, WORKERS + "affinity:\n" + affinity);
    return ConfigLoader.load(file).config();
  }

  private String loadFails(String affinity) {
    return assertThrows(ConfigException.class, () -> load(affinity)).getMessage();
  }

  @Test
  void tokenFileIsTheTokenReadFromAFileStrippedAndRelativeToTheConfigFolder() throws Exception {
    Files.writeString(dir.resolve("nats-token"), "  t0ken-from-file\n\n");
    SharedStateSettings s = load("  shared_state: {nats: nats://h:4222, token_file: nats-token}\n").affinity().sharedState()
        .orElseThrow();
    assertEquals(Optional.of("t0ken-from-file"), s.token());
    assertEquals(Optional.of(dir.resolve("nats-token").toAbsolutePath().normalize().toString()), s.tokenFile());
    assertEquals("token_file " + dir.resolve("nats-token").toAbsolutePath().normalize(), s.authKind());
    assertFalse(s.toString().contains("t0ken-from-file"), s.toString());
    // an absolute path as well
    SharedStateSettings a = parse("  shared_state: {nats: nats://h:4222, token_file: \"" + dir.resolve("nats-token") + "\"}\n")
        .affinity().sharedState().orElseThrow();
    assertEquals(Optional.of("t0ken-from-file"), a.token());
  }

  @Test
  void passwordFileIsThePasswordReadFromAFile() throws Exception {
    Files.writeString(dir.resolve("nats-password"), "s3cret-pw-from-file\n");
    SharedStateSettings s = load("  shared_state: {nats: nats://h:4222, user: affinity, password_file: nats-password}\n")
        .affinity().sharedState().orElseThrow();
    assertEquals(Optional.of("affinity"), s.user());
    assertEquals(Optional.of("s3cret-pw-from-file"), s.password());
    assertEquals(Optional.of(dir.resolve("nats-password").toAbsolutePath().normalize().toString()), s.passwordFile());
    assertTrue(s.authKind().startsWith("user affinity"), s.authKind());
    assertFalse(s.toString().contains("s3cret-pw-from-file"), s.toString());
    assertFalse(s.authKind().contains("s3cret-pw-from-file"), s.authKind());
  }

  @Test
  void aMissingEmptyOrUnreadableSecretFileNamesTheKeyAndLine() throws Exception {
    String missing = loadFails("  shared_state: {nats: nats://h:4222, token_file: no-such-token}\n");
    assertTrue(missing.contains("disagg.yaml:4:51: affinity.shared_state.token_file: "
        + dir.resolve("no-such-token").toAbsolutePath().normalize() + " does not exist"), missing);
    Files.writeString(dir.resolve("blank"), " \n\t\n");
    String empty = loadFails("  shared_state: {nats: nats://h:4222, token_file: blank}\n");
    assertTrue(empty.contains("disagg.yaml:4:51: affinity.shared_state.token_file: "), empty);
    assertTrue(empty.contains("is empty"), empty);
    String emptyPassword = loadFails("  shared_state: {nats: nats://h:4222, user: u, password_file: blank}\n");
    assertTrue(emptyPassword.contains("affinity.shared_state.password_file: "), emptyPassword);
    assertTrue(emptyPassword.contains("is empty"), emptyPassword);
    Files.createDirectory(dir.resolve("a-directory"));
    String directory = loadFails("  shared_state: {nats: nats://h:4222, user: u, password_file: a-directory}\n");
    assertTrue(directory.contains("affinity.shared_state.password_file: "), directory);
    assertTrue(directory.contains("is not a readable file"), directory);
    Files.write(dir.resolve("not-utf8"), new byte[] {(byte) 0xff, (byte) 0xfe, 0x41});
    String unreadable = loadFails("  shared_state: {nats: nats://h:4222, token_file: not-utf8}\n");
    assertTrue(unreadable.contains("disagg.yaml:4:51: affinity.shared_state.token_file: "), unreadable);
    assertTrue(unreadable.contains("cannot read"), unreadable);
    assertTrue(loadFails("  shared_state: {nats: nats://h:4222, token_file: \"\"}\n")
        .contains("affinity.shared_state.token_file: is empty"));
  }

  @Test
  void aSecretFilesContentNeverAppearsInAnError() throws Exception {
    Files.writeString(dir.resolve("nats-token"), "t0ken-in-a-file\n");
    String m = loadFails("  shared_state: {nats: nats://h:4222, token_file: nats-token, user: u, password: p}\n");
    assertFalse(m.contains("t0ken-in-a-file"), m);
    String both = loadFails("  shared_state: {nats: nats://h:4222, token: t0ken-inline, token_file: nats-token}\n");
    assertFalse(both.contains("t0ken-in-a-file") || both.contains("t0ken-inline"), both);
  }

  @Test
  void aSecretAndItsFileTogetherNameTheFileKey() throws Exception {
    Files.writeString(dir.resolve("nats-token"), "t\n");
    Files.writeString(dir.resolve("nats-password"), "p\n");
    String token = loadFails("  shared_state: {nats: nats://h:4222, token: t, token_file: nats-token}\n");
    assertTrue(token.contains("disagg.yaml:4:49: affinity.shared_state.token_file: "), token);
    assertTrue(token.contains("affinity.shared_state.token"), token);
    String password = loadFails("  shared_state: {nats: nats://h:4222, user: u, password: p, password_file: nats-password}\n");
    assertTrue(password.contains("affinity.shared_state.password_file: "), password);
  }

  @Test
  void aTokenFileOrPasswordFileCountsAsItsWayToAuthenticate() throws Exception {
    Files.writeString(dir.resolve("nats-token"), "t\n");
    Files.writeString(dir.resolve("nats-password"), "p\n");
    Files.writeString(dir.resolve("nats.creds"), "creds\n");
    // token_file with a user: the "one way" error names a key that is there (no NullPointerException)
    String withUser = loadFails("  shared_state: {nats: nats://h:4222, token_file: nats-token, user: u, password: p}\n");
    assertTrue(withUser.contains("affinity.shared_state.token_file: give one way to authenticate"), withUser);
    String withPasswordFile = loadFails(
        "  shared_state: {nats: nats://h:4222, token_file: nats-token, user: u, password_file: nats-password}\n");
    assertTrue(withPasswordFile.contains("affinity.shared_state.token_file: give one way to authenticate"), withPasswordFile);
    String withCreds = loadFails("  shared_state: {nats: nats://h:4222, token_file: nats-token, creds_file: nats.creds}\n");
    assertTrue(withCreds.contains("affinity.shared_state.creds_file: give one way to authenticate"), withCreds);
    String passwordFileAndCreds = loadFails(
        "  shared_state: {nats: nats://h:4222, user: u, password_file: nats-password, creds_file: nats.creds}\n");
    assertTrue(passwordFileAndCreds.contains("affinity.shared_state.creds_file: give one way to authenticate"),
        passwordFileAndCreds);
    // password_file is the password: it needs a user, and a user needs it (or password)
    String noUser = loadFails("  shared_state: {nats: nats://h:4222, password_file: nats-password}\n");
    assertTrue(noUser.contains("affinity.shared_state.user: is required with affinity.shared_state.password_file"), noUser);
    String noPassword = loadFails("  shared_state: {nats: nats://h:4222, user: u}\n");
    assertTrue(noPassword.contains("affinity.shared_state.password: is required with affinity.shared_state.user"),
        noPassword);
    assertTrue(noPassword.contains("password_file"), noPassword);
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
