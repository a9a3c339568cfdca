package dev.affinity.frontend;

import dev.affinity.conversation.HeaderSource;
import dev.affinity.conversation.Resolution;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.TokenIds;
import java.util.Objects;

/**
 * A client request that passed admission ({@link dev.affinity.admission.RequestAdmission}): everything
 * orchestration needs, resolved once.
 *
 * @param request the parsed body, checked against the public API's rules
 * @param headers the request's headers (handlers that read internal headers, such as worker mode, use them)
 * @param resolution the conversation id, the sub-agent affinity id and the fleets' routing keys
 * @param promptTokens the prompt as token ids, or null when no tokenizer applies (routers then work from
 *     text); shared, never modified
 * @param cacheSalt the KV cache salt of the request (a chat's {@code cache_salt}, under tenant isolation
 *     prefixed by its tenant), or null; the routers' block keys and in-process executors use it
 * @param forwardTokens whether {@code promptTokens} replace the prompt on the legs (workers then skip tokenizing);
 *     false when the workers would render a chat otherwise (the chat goes as text)
 * @param legIds {@code promptTokens} as the one object every leg carries, its JSON following the conversation's last
 *     turn's ({@link dev.affinity.admission.KeptTurns#legIds}); null: made from {@code promptTokens} when needed
 * @param blockChains the conversation's last prompt as the routers hashed it, which this one's block keys continue
 *     ({@link dev.affinity.admission.KeptTurns#blockChains}); null: hashed whole
 */
public record AdmittedRequest(OpenAiRequest request, HeaderSource headers, Resolution resolution, int[] promptTokens,
    String cacheSalt, boolean forwardTokens, TokenIds legIds, dev.affinity.kv.BlockChains blockChains) {

  /** An admitted request hashed whole. */
  public AdmittedRequest(OpenAiRequest request, HeaderSource headers, Resolution resolution, int[] promptTokens,
      String cacheSalt, boolean forwardTokens, TokenIds legIds) {
    this(request, headers, resolution, promptTokens, cacheSalt, forwardTokens, legIds, null);
  }

  /** An admitted request whose legs' ids are made from {@code promptTokens}. */
  public AdmittedRequest(OpenAiRequest request, HeaderSource headers, Resolution resolution, int[] promptTokens,
      String cacheSalt, boolean forwardTokens) {
    this(request, headers, resolution, promptTokens, cacheSalt, forwardTokens, null);
  }

  /** An admitted request whose salt is its body's. */
  public AdmittedRequest(OpenAiRequest request, HeaderSource headers, Resolution resolution, int[] promptTokens) {
    this(request, headers, resolution, promptTokens, request.cacheSalt());
  }

  /** An admitted request whose ids, when known, go to the legs. */
  public AdmittedRequest(OpenAiRequest request, HeaderSource headers, Resolution resolution, int[] promptTokens,
      String cacheSalt) {
    this(request, headers, resolution, promptTokens, cacheSalt, true);
  }

  public AdmittedRequest {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(headers, "headers");
    Objects.requireNonNull(resolution, "resolution");
  }
}
