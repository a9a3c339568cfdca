package dev.affinity.server.http;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;

/**
 * One finished request as the access log writes it: a single compact JSON object per line, keys in
 * this order. Unknown values are JSON {@code null} (worker names, ranks, reused tokens, TTFT).
 *
 * @param time wall-clock time the request was read, ISO-8601 UTC
 * @param requestId the orchestration's request id when it assigned one, else the frontend's local id
 * @param method the HTTP method
 * @param path the request path without the query
 * @param status the HTTP status sent; 499 when the client went away before any response
 * @param outcome {@code ok}, {@code error} (4xx/5xx), {@code aborted} (stream closed without [DONE])
 *     or {@code client_disconnect}
 * @param model the requested model, for completion endpoints
 * @param stream whether the client asked for a stream, for completion endpoints
 * @param conversation the request's own conversation id
 * @param affinity the sub-agent affinity id
 * @param ctxWorker the context worker that served the prefill
 * @param ctxRank its attention-DP rank
 * @param genWorker the generation worker
 * @param genRank its attention-DP rank
 * @param reusedTokens prompt tokens served from the context worker's cache
 * @param ttftMs milliseconds from the request being read to the first streamed chunk or the response
 * @param totalMs milliseconds from the request being read to the end of the response
 * @param retries worker retries spent
 * @param bytes response body bytes written
 * @param remote the client's address
 * @param error the error message sent, or the abort reason
 */
@JsonPropertyOrder({"time", "request_id", "method", "path", "status", "outcome", "model", "stream",
    "conversation", "affinity", "ctx_worker", "ctx_rank", "gen_worker", "gen_rank", "reused_tokens",
    "ttft_ms", "total_ms", "retries", "bytes", "remote", "error"})
@JsonInclude(JsonInclude.Include.ALWAYS)
public record AccessRecord(
    @JsonProperty("time") String time,
    @JsonProperty("request_id") long requestId,
    @JsonProperty("method") String method,
    @JsonProperty("path") String path,
    @JsonProperty("status") int status,
    @JsonProperty("outcome") String outcome,
    @JsonProperty("model") String model,
    @JsonProperty("stream") Boolean stream,
    @JsonProperty("conversation") String conversation,
    @JsonProperty("affinity") String affinity,
    @JsonProperty("ctx_key") String ctxKey,
    @JsonProperty("gen_key") String genKey,
    @JsonProperty("ctx_worker") String ctxWorker,
    @JsonProperty("ctx_rank") Integer ctxRank,
    @JsonProperty("gen_worker") String genWorker,
    @JsonProperty("gen_rank") Integer genRank,
    @JsonProperty("reused_tokens") Integer reusedTokens,
    @JsonProperty("ttft_ms") Double ttftMs,
    @JsonProperty("total_ms") double totalMs,
    @JsonProperty("retries") int retries,
    @JsonProperty("bytes") long bytes,
    @JsonProperty("remote") String remote,
    @JsonProperty("error") String error) {

  public static final String OK = "ok";
  public static final String ERROR = "error";
  public static final String ABORTED = "aborted";
  public static final String CLIENT_DISCONNECT = "client_disconnect";

  private static final ObjectWriter WRITER = new ObjectMapper().writer();

  /** The record as one line of compact JSON, without the line break. */
  public String toJson() {
    try {
      return WRITER.writeValueAsString(this);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialize an access record", e);
    }
  }
}
