package dev.affinity.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigSecrets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** serve's and config check's --auth-key-file / --api-keys-file, and worker's --auth-key-file. */
class SecretFileOptionsTest {
  @TempDir
  Path dir;

  private static final String CLUSTER = """
      hostname: 0.0.0.0
      disagg_cluster:
        cluster_uri: etcd://etcd:2379
      context_servers: {}
      generation_servers: {}
      affinity:
        require_internal_auth: true
        tenant_isolation: true
      """;

  private static CliRun run(String... args) {
    return CliRun.of(args);
  }

  private SecretFileOptions options(String authKey, String apiKeys) throws Exception {
    SecretFileOptions o = new SecretFileOptions();
    if (authKey != null) {
      o.authKeyFile = Files.writeString(dir.resolve("auth-key"), authKey);
    }
    if (apiKeys != null) {
      o.apiKeysFile = Files.writeString(dir.resolve("api-keys"), apiKeys);
    }
    return o;
  }

  @Test
  void theFilesAreReadAsASecretVolumeHoldsThem() throws Exception {
    ConfigSecrets s = options("s3cret-key\n", "key-a\n\n  key-b  \r\nkey-c").read();
    assertEquals("s3cret-key", s.internalRequestAuthKey().orElseThrow().value(), "surrounding whitespace stripped");
    assertEquals(List.of("key-a", "key-b", "key-c"), s.apiKeys().orElseThrow().value(), "one per line, blanks ignored");
    assertTrue(s.internalRequestAuthKey().get().origin().startsWith("--auth-key-file "), s.toString());
    assertFalse(s.toString().contains("s3cret"), "a secret's toString names its origin, never its value");
    assertEquals(ConfigSecrets.NONE, new SecretFileOptions().read(), "without the options: everything from the YAML");
  }

  @Test
  void aMissingOrEmptyFileIsAnErrorNamingTheOptionAndTheFile() throws Exception {
    SecretFileOptions missing = new SecretFileOptions();
    missing.authKeyFile = dir.resolve("nope");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, missing::read);
    assertEquals("--auth-key-file " + dir.resolve("nope") + ": no such file", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> options(" \n", null).read());
    assertTrue(e.getMessage().startsWith("--auth-key-file " + dir.resolve("auth-key") + ": the file is empty"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> options(null, "\n\n").read());
    assertTrue(e.getMessage().startsWith("--api-keys-file " + dir.resolve("api-keys") + ": the file holds no key"),
        e.getMessage());
  }

  @Test
  void configCheckTakesTheKeysFromTheFilesAndRefusesTheYamlSettingThemToo() throws Exception {
    Path config = Files.writeString(dir.resolve("c.yaml"), CLUSTER);
    SecretFileOptions o = options("k", "key-a\n");
    CliRun without = run("config", "check", config.toString());
    assertEquals(1, without.code(), without.err());
    assertTrue(without.err().contains("affinity.require_internal_auth"), without.err());
    assertTrue(without.err().contains("affinity.tenant_isolation"), without.err());

    CliRun with = run("config", "check", config.toString(), "--auth-key-file", o.authKeyFile.toString(),
        "--api-keys-file", o.apiKeysFile.toString());
    assertEquals(0, with.code(), with.err());

    Path both = Files.writeString(dir.resolve("both.yaml"), CLUSTER.replace("affinity:\n",
        "internal_request_auth_key: in-clear\naffinity:\n  api_keys: [in-clear]\n"));
    CliRun twice = run("config", "check", both.toString(), "--auth-key-file", o.authKeyFile.toString(),
        "--api-keys-file", o.apiKeysFile.toString());
    assertEquals(1, twice.code(), twice.err());
    assertTrue(twice.err().contains("internal_request_auth_key: is also given by --auth-key-file " + o.authKeyFile),
        twice.err());
    assertTrue(twice.err().contains("affinity.api_keys: is also given by --api-keys-file " + o.apiKeysFile), twice.err());

    CliRun missing = run("config", "check", config.toString(), "--api-keys-file", dir.resolve("absent").toString());
    assertEquals(1, missing.code());
    assertTrue(missing.err().contains("--api-keys-file " + dir.resolve("absent") + ": no such file"), missing.err());
  }

  @Test
  void serveRefusesToStartWithAMissingKeyFile() {
    CliRun r = run("serve", "--port", "0", "--auth-key-file", dir.resolve("absent").toString());
    assertEquals(1, r.code(), r.err());
    assertEquals("affinity serve: --auth-key-file " + dir.resolve("absent") + ": no such file", r.err().strip());
  }

  @Test
  void theWorkerReadsItsKeyFileAsServeDoesAndRefusesASecondKey() throws Exception {
    Path key = Files.writeString(dir.resolve("auth-key"), "shared-key\n");
    WorkerCommand w = new WorkerCommand();
    new CommandLine(w).parseArgs("--port", "0", "--auth-key-file", key.toString());
    if (System.getenv("AFFINITY_AUTH_KEY") == null) {
      assertEquals("shared-key", w.authKey(), "stripped as serve strips it");
    }
    WorkerCommand twice = new WorkerCommand();
    new CommandLine(twice).parseArgs("--port", "0", "--auth-key", "other", "--auth-key-file", key.toString());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, twice::authKey);
    assertTrue(e.getMessage().contains("--auth-key-file " + key + " and --auth-key"), e.getMessage());
    CliRun r = run("worker", "--port", "0", "--auth-key-file", dir.resolve("absent").toString());
    assertEquals(1, r.code(), r.err());
    assertTrue(r.err().contains("affinity worker: --auth-key-file " + dir.resolve("absent") + ": no such file"), r.err());
  }
}
