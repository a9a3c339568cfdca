package dev.affinity.config;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Secrets given to the loader from outside the YAML (for example {@code affinity serve --auth-key-file} and
 * {@code --api-keys-file}, files mounted from a Kubernetes Secret), so that the config file holds no key in clear.
 * A secret given here takes the place of its YAML key, before validation (so that, say,
 * {@code affinity.tenant_isolation} sees the API keys); the YAML setting the same key as well is a config error.
 *
 * @param internalRequestAuthKey the {@code internal_request_auth_key}, or empty to take it from the YAML
 * @param apiKeys the {@code affinity.api_keys}, or empty to take them from the YAML
 */
public record ConfigSecrets(Optional<Given<String>> internalRequestAuthKey, Optional<Given<List<String>>> apiKeys) {

  /** No secret from outside: every key comes from the YAML. */
  public static final ConfigSecrets NONE = new ConfigSecrets(Optional.empty(), Optional.empty());

  /**
   * A secret's value and where it came from ({@code origin}, e.g. {@code --auth-key-file /run/secrets/auth-key}),
   * which messages name instead of the value.
   */
  public record Given<T>(T value, String origin) {
    public Given {
      Objects.requireNonNull(value, "value");
      Objects.requireNonNull(origin, "origin");
    }

    /** Never the value: a secret does not belong in a log line. */
    @Override
    public String toString() {
      return "Given[" + origin + "]";
    }
  }

  public ConfigSecrets {
    Objects.requireNonNull(internalRequestAuthKey, "internalRequestAuthKey");
    Objects.requireNonNull(apiKeys, "apiKeys");
    if (internalRequestAuthKey.isPresent() && internalRequestAuthKey.get().value().isEmpty()) {
      throw new IllegalArgumentException(internalRequestAuthKey.get().origin() + ": the key is empty");
    }
    if (apiKeys.isPresent()) {
      Given<List<String>> k = apiKeys.get();
      if (k.value().isEmpty() || k.value().stream().anyMatch(String::isEmpty)) {
        throw new IllegalArgumentException(k.origin() + ": expected one or more non-empty API keys");
      }
      apiKeys = Optional.of(new Given<>(List.copyOf(k.value()), k.origin()));
    }
  }
}
