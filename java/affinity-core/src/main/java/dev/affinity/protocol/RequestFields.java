package dev.affinity.protocol;

import static dev.affinity.protocol.FieldRule.Api.CHAT;
import static dev.affinity.protocol.FieldRule.Api.COMPLETION;
import static dev.affinity.protocol.FieldRule.Api.MESSAGES;
import static dev.affinity.protocol.FieldRule.Api.RESPONSES;
import static dev.affinity.protocol.FieldRule.Type.ARRAY;
import static dev.affinity.protocol.FieldRule.Type.BOOLEAN;
import static dev.affinity.protocol.FieldRule.Type.INTEGER;
import static dev.affinity.protocol.FieldRule.Type.NONE;
import static dev.affinity.protocol.FieldRule.Type.NUMBER;
import static dev.affinity.protocol.FieldRule.Type.OBJECT;
import static dev.affinity.protocol.FieldRule.Type.STRING;
import static dev.affinity.protocol.FieldRule.Type.STRING_ARRAY;
import static dev.affinity.protocol.FieldRule.Type.STRING_OR_OBJECT;
import static dev.affinity.protocol.FieldRule.Wording.CONVERTED;
import static dev.affinity.protocol.FieldRule.Wording.FORWARDED;
import static dev.affinity.protocol.FieldRule.Wording.MODELLED;

import dev.affinity.protocol.FieldRule.Api;
import dev.affinity.protocol.FieldRule.Range;
import dev.affinity.protocol.FieldRule.Type;
import dev.affinity.protocol.FieldRule.Wording;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Every request field's rule in one table ({@link FieldRule}: type, range, what absence means, the error's words).
 * The chat and completion records check their modelled fields through it, admission the OpenAI fields the records
 * forward unread ({@code frequency_penalty}, {@code best_of}, ...), the Messages and Responses conversions theirs,
 * and {@code RequestFieldsTest} sends a body breaking each rule through each API that carries it.
 *
 * <p>The OpenAI ranges are OpenAI's API reference and TensorRT-LLM's {@code tensorrt_llm/serve/openai_protocol.py};
 * the Messages ranges Anthropic's API reference; the Responses ranges OpenAI's.
 */
public final class RequestFields {
  private RequestFields() {}

  private static final Set<Api> OPENAI = Set.of(CHAT, COMPLETION);
  private static final String WORKER = "the worker's default";

  // The chat and completion records' modelled fields.
  public static final FieldRule TEMPERATURE = rule("temperature", OPENAI, NUMBER, null, WORKER, MODELLED);
  public static final FieldRule TOP_P = rule("top_p", OPENAI, NUMBER, null, WORKER, MODELLED);
  public static final FieldRule PRIORITY =
      rule("priority", OPENAI, NUMBER, Range.closed(0, 1), "the worker's (TensorRT-LLM: 0.5)", MODELLED);
  public static final FieldRule TOOLS = rule("tools", Set.of(CHAT), ARRAY, null, "no tools", MODELLED);
  public static final FieldRule TOOL_CHOICE =
      rule("tool_choice", Set.of(CHAT), STRING_OR_OBJECT, null, "auto with tools, none without", MODELLED);
  public static final FieldRule RESPONSE_FORMAT =
      rule("response_format", OPENAI, OBJECT, null, "free text", MODELLED);
  public static final FieldRule CHAT_TEMPLATE_KWARGS =
      rule("chat_template_kwargs", Set.of(CHAT), OBJECT, null, "none", MODELLED);

  // disaggregated_params' opaque values (both OpenAI bodies carry disaggregated_params).
  public static final FieldRule FIRST_GEN_LOG_PROBS = rule("first_gen_log_probs", OPENAI, ARRAY, null, "none", MODELLED);
  public static final FieldRule FIRST_GEN_LOGITS = rule("first_gen_logits", OPENAI, ARRAY, null, "none", MODELLED);
  public static final FieldRule CONTEXT_TRANSCEIVER_LIFECYCLE =
      rule("context_transceiver_lifecycle", OPENAI, OBJECT, null, "none", MODELLED);

  // OpenAI fields the records forward unread: admission checks them.
  public static final FieldRule FREQUENCY_PENALTY =
      rule("frequency_penalty", OPENAI, NUMBER, Range.closed(-2, 2), "0", FORWARDED);
  public static final FieldRule PRESENCE_PENALTY =
      rule("presence_penalty", OPENAI, NUMBER, Range.closed(-2, 2), "0", FORWARDED);
  public static final FieldRule MIN_TOKENS =
      rule("min_tokens", OPENAI, INTEGER, Range.closed(0, Integer.MAX_VALUE), "0", FORWARDED);
  public static final FieldRule BEST_OF = rule("best_of", Set.of(COMPLETION), INTEGER, Range.closed(1, 20), "n",
      FORWARDED);
  public static final FieldRule SUFFIX = rule("suffix", Set.of(COMPLETION), STRING, null, "none", FORWARDED);
  public static final FieldRule DETOKENIZE = rule("detokenize", OPENAI, BOOLEAN, null, "true", FORWARDED);
  public static final FieldRule SKIP_SPECIAL_TOKENS =
      rule("skip_special_tokens", OPENAI, BOOLEAN, null, "true", FORWARDED);
  public static final FieldRule PARALLEL_TOOL_CALLS =
      rule("parallel_tool_calls", Set.of(CHAT), BOOLEAN, null, "true", FORWARDED);
  public static final FieldRule RETURN_PERF_METRICS =
      rule("return_perf_metrics", OPENAI, BOOLEAN, null, "the workers' return_perf_metrics", FORWARDED);
  // Fields TensorRT-LLM models on chats only: on a completion no stock worker could take them (extra="forbid").
  public static final FieldRule COMPLETION_PROMPT_TOKEN_IDS = refused("prompt_token_ids", Set.of(COMPLETION),
      "is accepted on chat completions only (TensorRT-LLM models it on chat requests): send the token ids of a completion "
          + "as its prompt, a list of integers");
  public static final FieldRule COMPLETION_CACHE_SALT = refused("cache_salt", Set.of(COMPLETION),
      "is accepted on chat completions only (TensorRT-LLM models it on chat requests): send the prompt as a chat, or "
          + "leave cache_salt out");

  // Anthropic's Messages API.
  public static final FieldRule MESSAGES_MAX_TOKENS = rule("max_tokens", Set.of(MESSAGES), INTEGER,
      Range.closed(1, Integer.MAX_VALUE), "required (count_tokens: not needed)", CONVERTED);
  public static final FieldRule MESSAGES_TEMPERATURE =
      rule("temperature", Set.of(MESSAGES), NUMBER, Range.closed(0, 1), "1.0", CONVERTED);
  public static final FieldRule MESSAGES_TOP_P =
      rule("top_p", Set.of(MESSAGES), NUMBER, Range.aboveZero(1), WORKER, CONVERTED);
  public static final FieldRule MESSAGES_TOP_K =
      rule("top_k", Set.of(MESSAGES), INTEGER, Range.closed(0, Integer.MAX_VALUE), WORKER, CONVERTED);
  public static final FieldRule MESSAGES_METADATA =
      rule("metadata", Set.of(MESSAGES), OBJECT, null, "none (not used by this frontend)", CONVERTED);
  public static final FieldRule MESSAGES_SERVICE_TIER = oneOf("service_tier", Set.of(MESSAGES),
      Set.of("auto", "standard_only"), "auto (one tier is served)", CONVERTED);

  // OpenAI's Responses API.
  public static final FieldRule RESPONSES_MAX_OUTPUT_TOKENS = rule("max_output_tokens", Set.of(RESPONSES), INTEGER,
      Range.closed(1, Integer.MAX_VALUE), "the model's context left", CONVERTED);
  public static final FieldRule RESPONSES_TEMPERATURE =
      rule("temperature", Set.of(RESPONSES), NUMBER, Range.closed(0, 2), "1.0", CONVERTED);
  public static final FieldRule RESPONSES_TOP_P =
      rule("top_p", Set.of(RESPONSES), NUMBER, Range.aboveZero(1), "1.0", CONVERTED);
  public static final FieldRule RESPONSES_PROMPT_CACHE_KEY =
      rule("prompt_cache_key", Set.of(RESPONSES), STRING, null, "none (routing keys are the session headers)",
          CONVERTED);
  public static final FieldRule RESPONSES_INCLUDE =
      rule("include", Set.of(RESPONSES), STRING_ARRAY, null, "nothing extra", CONVERTED);

  // The conversions' flags.
  public static final FieldRule STREAM = rule("stream", Set.of(MESSAGES, RESPONSES), BOOLEAN, null, "false",
      CONVERTED);
  public static final FieldRule RESPONSES_STORE =
      rule("store", Set.of(RESPONSES), BOOLEAN, null, "false: this frontend keeps no state", CONVERTED);
  public static final FieldRule RESPONSES_BACKGROUND =
      rule("background", Set.of(RESPONSES), BOOLEAN, null, "false", CONVERTED);

  /** Every rule, in the order above. */
  public static final List<FieldRule> ALL = List.of(TEMPERATURE, TOP_P, PRIORITY, TOOLS, TOOL_CHOICE, RESPONSE_FORMAT,
      CHAT_TEMPLATE_KWARGS, FIRST_GEN_LOG_PROBS, FIRST_GEN_LOGITS, CONTEXT_TRANSCEIVER_LIFECYCLE, FREQUENCY_PENALTY,
      PRESENCE_PENALTY, MIN_TOKENS, BEST_OF, SUFFIX, DETOKENIZE, SKIP_SPECIAL_TOKENS, PARALLEL_TOOL_CALLS,
      RETURN_PERF_METRICS, COMPLETION_PROMPT_TOKEN_IDS, COMPLETION_CACHE_SALT, MESSAGES_MAX_TOKENS,
      MESSAGES_TEMPERATURE, MESSAGES_TOP_P, MESSAGES_TOP_K, MESSAGES_METADATA, MESSAGES_SERVICE_TIER,
      RESPONSES_MAX_OUTPUT_TOKENS, RESPONSES_TEMPERATURE, RESPONSES_TOP_P, RESPONSES_PROMPT_CACHE_KEY,
      RESPONSES_INCLUDE, STREAM, RESPONSES_STORE, RESPONSES_BACKGROUND);

  private static final Map<Api, List<FieldRule>> FORWARDED_BY_API = new EnumMap<>(Api.class);

  static {
    for (Api api : Api.values()) {
      FORWARDED_BY_API.put(api, ALL.stream().filter(r -> r.wording() == FORWARDED && r.appliesTo(api)).toList());
    }
  }

  /** The rules admission checks on a body of {@code api} (every request): the fields the records forward unread. */
  public static List<FieldRule> forwarded(Api api) {
    return FORWARDED_BY_API.get(api);
  }

  private static FieldRule rule(String field, Set<Api> apis, Type type, Range range, String absent, Wording wording) {
    return new FieldRule(field, apis, type, range, Set.of(), absent, wording);
  }

  /** A string field that takes one of {@code values}. */
  private static FieldRule oneOf(String field, Set<Api> apis, Set<String> values, String absent, Wording wording) {
    return new FieldRule(field, apis, STRING, null, values, absent, wording);
  }

  /** A field refused on {@code apis}, whatever its value: {@code why} is the error's words. */
  private static FieldRule refused(String field, Set<Api> apis, String why) {
    return new FieldRule(field, apis, NONE, null, Set.of(), why, FORWARDED);
  }
}
