package dev.affinity.protocol;

/**
 * What a leg sent as its prompt, which the worker's answer repeats: the ids as a JSON array, or as the base64 int32
 * string of {@code prompt_token_ids_b64}. A context answer to such a leg has its copy of them skipped, not read, and
 * these stand for it ({@link ProtocolCodec#scanResponse(byte[], boolean, boolean, SentPrompt)}).
 *
 * @param ids the ids as an array, or null
 * @param base64 the ids as base64 int32 (a chat leg's {@code prompt_token_ids_b64}), or null
 */
public record SentPrompt(TokenIds ids, String base64) {

  /** What {@code leg} carries as its prompt; null when it sent text. */
  public static SentPrompt of(OpenAiRequest leg) {
    TokenIds ids = leg.tokenPrompt();
    String base64 = leg instanceof ChatCompletionRequest chat ? chat.promptTokenIdsB64() : null;
    return ids == null && base64 == null ? null : new SentPrompt(ids, base64);
  }
}
