package dev.affinity.server.workermode;

import java.time.Duration;
import java.util.Objects;

/**
 * How an Affinity worker process serves its executor (the HTTP side is {@code FrontendOptions}).
 *
 * @param name the worker's name: the executor's {@code instance_name} unless the configuration sets one,
 *     and the id in logs, the access log and {@code /server_info}
 * @param model the model name requests must carry, or null to accept any (like trtllm-serve)
 * @param authKey the shared {@code internal_request_auth_key}, or null: with it, every completion request
 *     and {@code /kv_cache_events} must carry a valid, fresh {@code x-affinity-leg-auth} (401 otherwise),
 *     generation legs that carry hand-off state must also be signed ({@code x-trtllm-disagg-auth}) and a
 *     signed sub-agent affinity id is honoured; without it, requests are accepted unsigned and affinity
 *     ids are ignored
 * @param tokenizer the BPE encoding of text prompts ({@code cl100k_base}, ...) or a model's tokenizer directory (the
 *     model's ids, chat template and KV events over them)
 * @param requestTimeout the longest a leg may run before it fails with 504
 * @param defaultMaxTokens the output limit of a request without {@code max_tokens}
 * @param requireInternalAuth a key is required, and a sub-agent affinity id with a missing or wrong signature
 *     is refused with 401 instead of ignored (upstream's behaviour)
 * @param authWindow with a key: how far the timestamp of a request's {@code x-affinity-leg-auth} may be from
 *     this worker's clock, either way ({@code LegAuth}); nonces are remembered this long after it
 */
public record WorkerSettings(String name, String model, String authKey, String tokenizer, Duration requestTimeout,
    int defaultMaxTokens, boolean requireInternalAuth, Duration authWindow) {

  public static final String DEFAULT_NAME = "worker";
  public static final String DEFAULT_TOKENIZER = "cl100k_base";
  public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(600);
  public static final int DEFAULT_MAX_TOKENS = 128;

  public WorkerSettings {
    Objects.requireNonNull(name, "name");
    if (name.isBlank()) {
      throw new IllegalArgumentException("the worker name is blank");
    }
    model = model == null || model.isBlank() ? null : model;
    authKey = authKey == null || authKey.isEmpty() ? null : authKey;
    Objects.requireNonNull(tokenizer, "tokenizer");
    Objects.requireNonNull(requestTimeout, "requestTimeout");
    if (requestTimeout.isNegative() || requestTimeout.isZero()) {
      throw new IllegalArgumentException("requestTimeout must be positive: " + requestTimeout);
    }
    if (defaultMaxTokens <= 0) {
      throw new IllegalArgumentException("defaultMaxTokens must be positive: " + defaultMaxTokens);
    }
    Objects.requireNonNull(authWindow, "authWindow");
    if (authWindow.isNegative() || authWindow.isZero()) {
      throw new IllegalArgumentException("the auth window must be positive: " + authWindow);
    }
    if (requireInternalAuth && authKey == null) {
      throw new IllegalArgumentException("--require-internal-auth needs the internal_request_auth_key shared with the "
          + "frontends (--auth-key or $AFFINITY_AUTH_KEY)");
    }
  }

  /** Named {@value #DEFAULT_NAME}, any model, no key, cl100k_base, 600 s, 128 tokens, a 60 s auth window. */
  public static WorkerSettings defaults() {
    return new WorkerSettings(DEFAULT_NAME, null, null, DEFAULT_TOKENIZER, DEFAULT_REQUEST_TIMEOUT, DEFAULT_MAX_TOKENS, false,
        dev.affinity.server.worker.LegAuth.DEFAULT_WINDOW);
  }

  public WorkerSettings withName(String n) {
    return new WorkerSettings(n, model, authKey, tokenizer, requestTimeout, defaultMaxTokens, requireInternalAuth, authWindow);
  }

  public WorkerSettings withModel(String m) {
    return new WorkerSettings(name, m, authKey, tokenizer, requestTimeout, defaultMaxTokens, requireInternalAuth, authWindow);
  }

  public WorkerSettings withAuthKey(String key) {
    return new WorkerSettings(name, model, key, tokenizer, requestTimeout, defaultMaxTokens, requireInternalAuth, authWindow);
  }

  public WorkerSettings withTokenizer(String t) {
    return new WorkerSettings(name, model, authKey, t, requestTimeout, defaultMaxTokens, requireInternalAuth, authWindow);
  }

  public WorkerSettings withRequestTimeout(Duration d) {
    return new WorkerSettings(name, model, authKey, tokenizer, d, defaultMaxTokens, requireInternalAuth, authWindow);
  }

  public WorkerSettings withRequireInternalAuth(boolean require) {
    return new WorkerSettings(name, model, authKey, tokenizer, requestTimeout, defaultMaxTokens, require, authWindow);
  }

  public WorkerSettings withAuthWindow(Duration w) {
    return new WorkerSettings(name, model, authKey, tokenizer, requestTimeout, defaultMaxTokens, requireInternalAuth, w);
  }

  /** Never shows the auth key. */
  @Override
  public String toString() {
    return "WorkerSettings[name=" + name + ", model=" + (model == null ? "any" : model) + ", authKey="
        + (authKey == null ? "none" : "***") + ", tokenizer=" + tokenizer + ", requestTimeout=" + requestTimeout
        + ", defaultMaxTokens=" + defaultMaxTokens + ", requireInternalAuth=" + requireInternalAuth + ", authWindow=" + authWindow + "]";
  }
}
