package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * {@code disaggregated_params}: the hand-off between the context and the generation leg (the serve-level schema of {@code tensorrt_llm/serve/openai_protocol.py}).
 * All fields are optional except {@code request_type}. Fields this record does not model (newer lifecycle
 * fields, multimodal handles, ...) are kept in {@link #extra()} and written back, so the context
 * response's params can be copied into the generation request verbatim. A {@code subagent_affinity_id}
 * key is dropped: that name is server-private.
 *
 * <p>Opaque values ({@code first_gen_log_probs}, {@code first_gen_logits},
 * {@code context_transceiver_lifecycle}) are kept as JSON and returned as deep copies.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record DisaggregatedParams(
    @JsonProperty("request_type") DisaggRequestType requestType,
    @JsonProperty("first_gen_tokens") TokenIds firstGenTokens,
    @JsonProperty("first_gen_log_probs") JsonNode firstGenLogProbs,
    @JsonProperty("first_gen_logits") JsonNode firstGenLogits,
    @JsonProperty("ctx_request_id") Long ctxRequestId,
    @JsonProperty("encoded_opaque_state") OpaqueState opaqueState,
    @JsonProperty("draft_tokens") TokenIds draftTokens,
    @JsonProperty("disagg_request_id") Long disaggRequestId,
    @JsonProperty("ctx_dp_rank") Integer ctxDpRank,
    @JsonProperty("ctx_info_endpoint") StringOrList ctxInfoEndpoint,
    @JsonProperty("schedule_style") DisaggScheduleStyle scheduleStyle,
    @JsonProperty("ctx_usage") UsageInfo ctxUsage,
    @JsonProperty("return_prompt_token_ids_b64") Boolean returnPromptTokenIdsB64,
    @JsonProperty("resolved_thinking") Boolean resolvedThinking,
    @JsonProperty("conversation_id") String conversationId,
    @JsonProperty("logical_request_id") Long logicalRequestId,
    @JsonProperty("prefill_artifact_id") String prefillArtifactId,
    @JsonProperty("artifact_version") Long artifactVersion,
    @JsonProperty("handoff_attempt_uuid") String handoffAttemptUuid,
    @JsonProperty("consumer_grant_id") String consumerGrantId,
    @JsonProperty("transfer_session_id") String transferSessionId,
    @JsonProperty("generation_endpoint_name") String generationEndpointName,
    @JsonProperty("generation_endpoint_rank") Integer generationEndpointRank,
    @JsonProperty("generation_endpoint_incarnation") String generationEndpointIncarnation,
    @JsonProperty("context_control_endpoint") String contextControlEndpoint,
    @JsonProperty("context_transceiver_lifecycle") JsonNode contextTransceiverLifecycle,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) {

  static final Set<String> FIELDS = Set.of(
      "request_type", "first_gen_tokens", "first_gen_log_probs", "first_gen_logits", "ctx_request_id",
      "encoded_opaque_state", "draft_tokens", "disagg_request_id", "ctx_dp_rank", "ctx_info_endpoint",
      "schedule_style", "ctx_usage", "return_prompt_token_ids_b64", "resolved_thinking", "conversation_id",
      "logical_request_id", "prefill_artifact_id", "artifact_version", "handoff_attempt_uuid",
      "consumer_grant_id", "transfer_session_id", "generation_endpoint_name", "generation_endpoint_rank",
      "generation_endpoint_incarnation", "context_control_endpoint", "context_transceiver_lifecycle");

  /**
   * @throws ProtocolException (field {@code request_type}) if the request type is missing
   */
  public DisaggregatedParams {
    Json.required(requestType, "request_type");
    firstGenLogProbs = RequestFields.FIRST_GEN_LOG_PROBS.opaque(firstGenLogProbs);
    firstGenLogits = RequestFields.FIRST_GEN_LOGITS.opaque(firstGenLogits);
    contextTransceiverLifecycle = RequestFields.CONTEXT_TRANSCEIVER_LIFECYCLE.opaque(contextTransceiverLifecycle);
    extra = Json.freezeExtra(extra, FIELDS, Json.SUBAGENT_AFFINITY_ID);
  }

  public static Builder builder(DisaggRequestType requestType) {
    return new Builder().requestType(requestType);
  }

  public Builder toBuilder() {
    return new Builder(this);
  }

  /** These params with another request type (e.g. a context response's params for the generation leg). */
  public DisaggregatedParams withRequestType(DisaggRequestType type) {
    return toBuilder().requestType(type).build();
  }

  /** These params with another {@code disagg_request_id} (a retry re-issues it). */
  public DisaggregatedParams withDisaggRequestId(Long id) {
    return toBuilder().disaggRequestId(id).build();
  }

  /** Whether {@code ctx_info_endpoint} or {@code encoded_opaque_state} is set (the gen request needs internal auth). */
  @JsonIgnore
  public boolean isAuthProtected() {
    return opaqueState != null || ctxInfoEndpoint != null;
  }

  /**
   * {@code encoded_opaque_state} as base64 text, or null. Params made in process hold the executor's bytes
   * ({@link #opaqueState()}); asking for the text encodes them.
   */
  public String encodedOpaqueState() {
    return opaqueState == null ? null : opaqueState.text();
  }

  @Override
  public JsonNode firstGenLogProbs() {
    return Json.copy(firstGenLogProbs);
  }

  @Override
  public JsonNode firstGenLogits() {
    return Json.copy(firstGenLogits);
  }

  @Override
  public JsonNode contextTransceiverLifecycle() {
    return Json.copy(contextTransceiverLifecycle);
  }


  /** Mutable builder; {@link #build()} validates and freezes. */
  public static final class Builder extends ExtraFieldsBuilder<Builder> {
    private DisaggRequestType requestType;
    private TokenIds firstGenTokens;
    private JsonNode firstGenLogProbs;
    private JsonNode firstGenLogits;
    private Long ctxRequestId;
    private OpaqueState opaqueState;
    private TokenIds draftTokens;
    private Long disaggRequestId;
    private Integer ctxDpRank;
    private StringOrList ctxInfoEndpoint;
    private DisaggScheduleStyle scheduleStyle;
    private UsageInfo ctxUsage;
    private Boolean returnPromptTokenIdsB64;
    private Boolean resolvedThinking;
    private String conversationId;
    private Long logicalRequestId;
    private String prefillArtifactId;
    private Long artifactVersion;
    private String handoffAttemptUuid;
    private String consumerGrantId;
    private String transferSessionId;
    private String generationEndpointName;
    private Integer generationEndpointRank;
    private String generationEndpointIncarnation;
    private String contextControlEndpoint;
    private JsonNode contextTransceiverLifecycle;
    private Builder() {}

    private Builder(DisaggregatedParams p) {
      requestType = p.requestType;
      firstGenTokens = p.firstGenTokens;
      firstGenLogProbs = p.firstGenLogProbs;
      firstGenLogits = p.firstGenLogits;
      ctxRequestId = p.ctxRequestId;
      opaqueState = p.opaqueState;
      draftTokens = p.draftTokens;
      disaggRequestId = p.disaggRequestId;
      ctxDpRank = p.ctxDpRank;
      ctxInfoEndpoint = p.ctxInfoEndpoint;
      scheduleStyle = p.scheduleStyle;
      ctxUsage = p.ctxUsage;
      returnPromptTokenIdsB64 = p.returnPromptTokenIdsB64;
      resolvedThinking = p.resolvedThinking;
      conversationId = p.conversationId;
      logicalRequestId = p.logicalRequestId;
      prefillArtifactId = p.prefillArtifactId;
      artifactVersion = p.artifactVersion;
      handoffAttemptUuid = p.handoffAttemptUuid;
      consumerGrantId = p.consumerGrantId;
      transferSessionId = p.transferSessionId;
      generationEndpointName = p.generationEndpointName;
      generationEndpointRank = p.generationEndpointRank;
      generationEndpointIncarnation = p.generationEndpointIncarnation;
      contextControlEndpoint = p.contextControlEndpoint;
      contextTransceiverLifecycle = p.contextTransceiverLifecycle;
      extraFrom(p.extra);
    }

    public Builder requestType(DisaggRequestType v) {
      requestType = Objects.requireNonNull(v, "requestType");
      return this;
    }

    public Builder firstGenTokens(TokenIds v) {
      firstGenTokens = v;
      return this;
    }

    public Builder firstGenLogProbs(JsonNode v) {
      firstGenLogProbs = v;
      return this;
    }

    public Builder firstGenLogits(JsonNode v) {
      firstGenLogits = v;
      return this;
    }

    public Builder ctxRequestId(Long v) {
      ctxRequestId = v;
      return this;
    }

    /** {@code encoded_opaque_state} as base64 text (null: none). */
    public Builder encodedOpaqueState(String v) {
      opaqueState = v == null ? null : OpaqueState.ofText(v);
      return this;
    }

    /** {@code encoded_opaque_state}, for example as an executor's bytes ({@link OpaqueState#ofBytes}). */
    public Builder opaqueState(OpaqueState v) {
      opaqueState = v;
      return this;
    }

    public Builder draftTokens(TokenIds v) {
      draftTokens = v;
      return this;
    }

    public Builder disaggRequestId(Long v) {
      disaggRequestId = v;
      return this;
    }

    public Builder ctxDpRank(Integer v) {
      ctxDpRank = v;
      return this;
    }

    public Builder ctxInfoEndpoint(StringOrList v) {
      ctxInfoEndpoint = v;
      return this;
    }

    public Builder scheduleStyle(DisaggScheduleStyle v) {
      scheduleStyle = v;
      return this;
    }

    public Builder ctxUsage(UsageInfo v) {
      ctxUsage = v;
      return this;
    }

    public Builder returnPromptTokenIdsB64(Boolean v) {
      returnPromptTokenIdsB64 = v;
      return this;
    }

    public Builder resolvedThinking(Boolean v) {
      resolvedThinking = v;
      return this;
    }

    /** The legacy mirror of {@code conversation_params.conversation_id}. */
    public Builder conversationId(String v) {
      conversationId = v;
      return this;
    }

    public Builder logicalRequestId(Long v) {
      logicalRequestId = v;
      return this;
    }

    public Builder prefillArtifactId(String v) {
      prefillArtifactId = v;
      return this;
    }

    public Builder artifactVersion(Long v) {
      artifactVersion = v;
      return this;
    }

    public Builder handoffAttemptUuid(String v) {
      handoffAttemptUuid = v;
      return this;
    }

    public Builder consumerGrantId(String v) {
      consumerGrantId = v;
      return this;
    }

    public Builder transferSessionId(String v) {
      transferSessionId = v;
      return this;
    }

    public Builder generationEndpointName(String v) {
      generationEndpointName = v;
      return this;
    }

    public Builder generationEndpointRank(Integer v) {
      generationEndpointRank = v;
      return this;
    }

    public Builder generationEndpointIncarnation(String v) {
      generationEndpointIncarnation = v;
      return this;
    }

    public Builder contextControlEndpoint(String v) {
      contextControlEndpoint = v;
      return this;
    }

    public Builder contextTransceiverLifecycle(JsonNode v) {
      contextTransceiverLifecycle = v;
      return this;
    }

    public DisaggregatedParams build() {
      return new DisaggregatedParams(requestType, firstGenTokens, firstGenLogProbs, firstGenLogits,
          ctxRequestId, opaqueState, draftTokens, disaggRequestId, ctxDpRank, ctxInfoEndpoint,
          scheduleStyle, ctxUsage, returnPromptTokenIdsB64, resolvedThinking, conversationId,
          logicalRequestId, prefillArtifactId, artifactVersion, handoffAttemptUuid, consumerGrantId,
          transferSessionId, generationEndpointName, generationEndpointRank, generationEndpointIncarnation,
          contextControlEndpoint, contextTransceiverLifecycle, extra());
    }
  }
}
