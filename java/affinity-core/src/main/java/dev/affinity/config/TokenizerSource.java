package dev.affinity.config;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Where the frontend's model tokenizer comes from: {@code affinity.tokenizer} when it names a tokenizer directory,
 * else upstream's router arguments {@code tokenizer_dir} (then {@code model_path}) of the context router, then of
 * the generation router ({@code BlockHashMixin._init_block_hashing} in {@code tensorrt_llm/serve/router_utils.py}:
 * {@code tokenizer_dir or model}). Relative router paths are taken from the working directory, as upstream does.
 *
 * @param directory the tokenizer directory
 * @param origin the key that named it, with its location, for messages
 */
public record TokenizerSource(Path directory, String origin) {
  /**
   * Routers that match the prompt's block keys against the workers' KV events: without token ids they match nothing
   * for text and chat prompts (the routers that keep their own index, {@code conversation}, {@code sglang_cache_aware},
   * {@code llmd_scorer}, match text's code points against what they routed).
   */
  public static final Set<String> KV_EVENT_ROUTERS = Set.of("kv_cache_aware", "affinity", "dynamo_kv");

  /** The frontend's model tokenizer, if the configuration names one. */
  public static Optional<TokenizerSource> of(DisaggConfig c) {
    Optional<Path> own = c.affinity().tokenizerDirectory();
    if (own.isPresent()) {
      return Optional.of(new TokenizerSource(own.get(), "affinity.tokenizer"));
    }
    for (ServerSection s : List.of(c.context(), c.generation())) {
      for (String arg : List.of("tokenizer_dir", "model_path")) {
        Object v = s.router().args().get(arg);
        if (v instanceof String path && !path.isBlank()) {
          return Optional.of(new TokenizerSource(Path.of(path).toAbsolutePath().normalize(),
              s.name() + ".router." + arg + " (" + s.router().locationOf(arg) + ")"));
        }
      }
    }
    return Optional.empty();
  }

  /** The warnings about tokenization: a prefix-aware router in front of remote workers without a model tokenizer. */
  static void warnings(DisaggConfig c, List<ConfigWarning> out) {
    if (of(c).isPresent()) {
      return;
    }
    for (ServerSection s : List.of(c.context(), c.generation())) {
      if (!s.isEmbedded() && KV_EVENT_ROUTERS.contains(s.router().type())) {
        out.add(new ConfigWarning(s.router().typeLocation(), "affinity.tokenizer",
            "is not a model's tokenizer directory, and " + s.name() + ".router.type is " + s.router().type()
                + " in front of remote workers: it "
                + "matches the workers' KV events only for requests that send token ids (prompt_token_ids, token "
                + "prompts); text and chat prompts get no match and route by load.",
            "set affinity.tokenizer (or the router's tokenizer_dir) to the model's tokenizer directory"));
        return;  // once: the same tokenizer serves both fleets
      }
    }
  }
}
