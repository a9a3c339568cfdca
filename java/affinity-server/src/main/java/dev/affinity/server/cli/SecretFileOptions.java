package dev.affinity.server.cli;

import dev.affinity.config.ConfigSecrets;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import picocli.CommandLine.Option;

/**
 * {@code --auth-key-file} and {@code --api-keys-file} of {@code serve} and {@code config check}: the
 * {@code internal_request_auth_key} and {@code affinity.api_keys} read from files (a Kubernetes Secret mounted as
 * a volume, say) instead of the YAML, which then must not set them (docs/configuration.md).
 */
final class SecretFileOptions {
  static final String AUTH_KEY_FILE = "--auth-key-file";
  static final String API_KEYS_FILE = "--api-keys-file";

  @Option(names = AUTH_KEY_FILE, paramLabel = "FILE",
      description = "internal_request_auth_key read from FILE (its text, surrounding whitespace stripped) instead of the YAML, which then must not set it.")
  Path authKeyFile;

  @Option(names = API_KEYS_FILE, paramLabel = "FILE",
      description = "affinity.api_keys read from FILE (one key per line; blank lines ignored, surrounding whitespace stripped) instead of the YAML, which then must not set them.")
  Path apiKeysFile;

  /**
   * The secrets the options name; an {@link IllegalArgumentException} naming the option and its file when a file
   * cannot be read or holds no key.
   */
  ConfigSecrets read() {
    Optional<ConfigSecrets.Given<String>> authKey = Optional.empty();
    if (authKeyFile != null) {
      authKey = Optional.of(new ConfigSecrets.Given<>(authKey(authKeyFile), AUTH_KEY_FILE + " " + authKeyFile));
    }
    Optional<ConfigSecrets.Given<List<String>>> apiKeys = Optional.empty();
    if (apiKeysFile != null) {
      List<String> keys = text(API_KEYS_FILE, apiKeysFile).lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
      if (keys.isEmpty()) {
        throw new IllegalArgumentException(API_KEYS_FILE + " " + apiKeysFile
            + ": the file holds no key (expected one API key per line)");
      }
      apiKeys = Optional.of(new ConfigSecrets.Given<>(keys, API_KEYS_FILE + " " + apiKeysFile));
    }
    return new ConfigSecrets(authKey, apiKeys);
  }

  /** The key in {@code file} (the {@value #AUTH_KEY_FILE} of serve and worker): its text, whitespace stripped. */
  static String authKey(Path file) {
    return secret(AUTH_KEY_FILE, file, "the internal_request_auth_key shared by the frontends and workers");
  }

  /**
   * A secret that {@code option} reads from {@code file}: its text, surrounding whitespace stripped; an
   * {@link IllegalArgumentException} naming the option and the file (never its content) when it cannot be read or is
   * empty ({@code what}: what it should have held).
   */
  static String secret(String option, Path file, String what) {
    String secret = text(option, file).strip();
    if (secret.isEmpty()) {
      throw new IllegalArgumentException(option + " " + file + ": the file is empty (expected " + what + ")");
    }
    return secret;
  }

  private static String text(String option, Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (java.nio.file.NoSuchFileException e) {
      throw new IllegalArgumentException(option + " " + file + ": no such file");
    } catch (IOException e) {
      throw new IllegalArgumentException(option + " " + file + ": cannot read: " + e.getMessage());
    }
  }
}
