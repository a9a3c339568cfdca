package dev.affinity.worker;

import dev.affinity.protocol.ChatChoice;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.CompletionChoice;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.ResponseScan;
import dev.affinity.protocol.SentPrompt;
import dev.affinity.protocol.TokenIds;
import dev.affinity.protocol.UsageInfo;
import java.util.Objects;
import java.util.Optional;

/**
 * A worker's whole (non-streamed) answer, and the client's form of it: as records (an in-process worker's answer,
 * or one the scan could not vouch for) or as the bytes a worker over HTTP sent, scanned once
 * ({@link ResponseScan}) and, on a leg that answers the client, copied into the client's JSON in the same pass.
 * What the orchestration reads ({@link #usage()}, {@link #promptTokenIds()}, the first choice's
 * {@code disaggregated_params} and finish reason, the choices' count, whether the first carries its output) comes from
 * the scan; {@link #parsed()} reads the records on
 * demand (for an endpoint that reshapes the answer, e.g. Anthropic's). Immutable; thread-safe.
 */
public final class EncodedResponse {
  private final ResponseScan scan;
  private final byte[] json;
  private final boolean chat;
  private final ProtocolCodec codec;
  /** Whether this is the client's form ({@link #forClient}): without disaggregated params, usage rewritten. */
  private final boolean client;
  private final UsageInfo ctxUsage;
  /** The worker's answer as records (parsed on first use when scanned). */
  private volatile OpenAiResponse worker;

  private EncodedResponse(ResponseScan scan, byte[] json, boolean chat, ProtocolCodec codec, boolean client,
      UsageInfo ctxUsage, OpenAiResponse worker) {
    this.scan = scan;
    this.json = json;
    this.chat = chat;
    this.codec = codec;
    this.client = client;
    this.ctxUsage = ctxUsage;
    this.worker = worker;
  }

  /** An answer that exists as records (an in-process worker's). */
  public static EncodedResponse of(OpenAiResponse response) {
    return new EncodedResponse(null, null, false, null, false, null, Objects.requireNonNull(response, "response"));
  }

  /**
   * A worker's answer as it sent it: scanned, and with {@code relay} (a leg whose answer goes to the client) copied
   * into the client's JSON in the same pass; parsed into records instead when the scan gives up.
   *
   * @throws ProtocolException (502) when it is not a valid answer
   */
  public static EncodedResponse read(byte[] json, boolean chat, boolean relay, ProtocolCodec codec) {
    return read(json, chat, relay, codec, null);
  }

  /**
   * {@link #read(byte[], boolean, boolean, ProtocolCodec)} of the answer to a leg that sent its prompt as ids
   * ({@code sent}; null: as text): when not relayed, the answer's copy of them is skipped, not parsed, and what the leg
   * sent stands for it ({@link ProtocolCodec#scanResponse(byte[], boolean, boolean, SentPrompt)}).
   */
  public static EncodedResponse read(byte[] json, boolean chat, boolean relay, ProtocolCodec codec, SentPrompt sent) {
    Objects.requireNonNull(codec, "codec");
    ResponseScan scan = codec.scanResponse(json, chat, relay, sent);
    if (scan == null) {
      return of(chat ? codec.parseChatCompletionResponse(json) : codec.parseCompletionResponse(json));
    }
    return new EncodedResponse(scan, json, chat, codec, false, null, null);
  }

  /** {@code usage}, or null. */
  public UsageInfo usage() {
    UsageInfo u = scan != null ? scan.usage() : worker.usage();
    return client && ctxUsage != null && u != null ? u.withContextUsage(ctxUsage) : u;
  }

  /** {@code prompt_token_ids}, or null. */
  public TokenIds promptTokenIds() {
    return scan != null ? scan.promptTokenIds() : parsed().promptTokenIds();
  }

  /**
   * {@code prompt_token_ids_b64}, the prompt ids as base64 int32 (a worker asked for them so, upstream's
   * {@code gen_tokids_ctxbytes}), or null.
   */
  public String promptTokenIdsB64() {
    if (scan != null) {
      return scan.promptTokenIdsB64();
    }
    return parsed() instanceof ChatCompletionResponse c ? c.promptTokenIdsB64() : null;
  }

  /** {@code choices[0].disaggregated_params} (none in the client's form). */
  public Optional<DisaggregatedParams> firstDisaggregatedParams() {
    if (client) {
      return Optional.empty();
    }
    return scan != null ? scan.firstDisaggregatedParams() : worker.firstDisaggregatedParams();
  }

  /** {@code choices[0].finish_reason}, when there is one. */
  public Optional<String> firstFinishReason() {
    return scan != null ? scan.firstFinishReason() : parsed().firstFinishReason();
  }

  /** Whether this is a chat completion (else a completion). */
  public boolean isChat() {
    return scan != null ? chat : worker instanceof ChatCompletionResponse;
  }

  /** How many choices the answer has. */
  public int choiceCount() {
    if (scan != null) {
      return scan.choiceCount();
    }
    return worker instanceof ChatCompletionResponse c ? c.choices().size() : ((CompletionResponse) worker).choices().size();
  }

  /**
   * Whether {@code choices[0]} carries its output: a chat answer's {@code message}, a completion's {@code text} (which
   * may be empty, e.g. a stop on the first token); false without choices.
   */
  public boolean firstChoiceHasOutput() {
    if (scan != null) {
      return scan.firstChoiceHasOutput();
    }
    if (worker instanceof ChatCompletionResponse c) {
      return c.firstChoice().map(ChatChoice::message).isPresent();
    }
    return ((CompletionResponse) worker).firstChoice().map(CompletionChoice::text).isPresent();
  }

  /**
   * The client's form of this answer: every choice without {@code disaggregated_params} and, when {@code ctxUsage}
   * is not null, {@code usage} rewritten from the context leg's ({@link OpenAiResponse#withUsageFromContext}).
   */
  public EncodedResponse forClient(UsageInfo ctxUsage) {
    if (client) {
      throw new IllegalStateException("already the client's form");
    }
    return new EncodedResponse(scan, json, chat, codec, true, ctxUsage, worker);
  }

  /** The answer as records (for the client's form: with the rewrites of {@link #forClient} applied). */
  public OpenAiResponse parsed() {
    OpenAiResponse w = worker;
    if (w == null) {
      w = chat ? codec.parseChatCompletionResponse(json) : codec.parseCompletionResponse(json);
      worker = w;
    }
    if (!client) {
      return w;
    }
    OpenAiResponse r = w.withoutDisaggregatedParams();
    return ctxUsage == null ? r : r.withUsageFromContext(ctxUsage);
  }

  /**
   * The JSON of {@link #parsed()}: for the client's form of a relayed answer, the bytes copied in the scan with the
   * usage filled in (no records built); else {@code codec} writes the records.
   */
  public byte[] json(ProtocolCodec codec) {
    if (client && scan != null && scan.relayed()) {
      return scan.clientJson(ctxUsage);
    }
    return codec.toJsonBytes(parsed());
  }

  @Override
  public String toString() {
    return "EncodedResponse[" + (scan != null ? "scanned" : "records") + (client ? ", client" : "") + "]";
  }
}
