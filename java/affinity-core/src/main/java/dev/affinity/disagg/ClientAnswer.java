package dev.affinity.disagg;

import dev.affinity.agent.AgentScheduling;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;

/**
 * The client's side of one request: its sink, and the stream as it is relayed ({@link StreamRelay}), opened once
 * before its first chunk. The flow calls one ending; this class never decides. Runs under its flow's lock.
 */
final class ClientAnswer {
  private final ClientSink sink;
  private final StreamRelay relay;
  private final AgentScheduling agents;
  private final boolean streaming;
  private boolean streamStarted;

  /** {@code resume}: the relayed stream kept for a resume, or null for a request that is not streamed. */
  ClientAnswer(ClientSink sink, StreamResume resume, AgentScheduling agents, boolean streaming) {
    this.sink = sink;
    this.relay = new StreamRelay(sink, resume, agents);
    this.agents = agents;
    this.streaming = streaming;
  }

  boolean streamStarted() {
    return streamStarted;
  }

  /** Relays a generation leg's chunk, opening the stream with {@code opening} before the first. */
  void chunk(EncodedChunk chunk, RouteInfo opening) {
    open(opening);
    relay.relay(chunk);  // relayed as the worker's bytes
  }

  /**
   * The whole answer came from one leg (the context finished the request): sent without its
   * {@code disaggregated_params}, whole or as a stream (a resumed stream's chunks continue the stream).
   */
  void whole(EncodedResponse answer, RouteInfo route) {
    EncodedResponse response = answer.forClient(null);
    if (streaming) {
      open(route);
      for (OpenAiStreamChunk chunk : StreamConversion.toChunks(response.parsed())) {
        relay.relay(EncodedChunk.of(chunk));
      }
      sink.streamEnd(route);
    } else {
      sink.respondEncoded(response, route);
    }
  }

  /**
   * The generation leg's answer: the stream's end, or its whole answer ({@code generation}, with the {@code context}
   * leg's usage when there was one) in the client's form; the agent's turn in {@code conversation} ends first.
   */
  void generationAnswer(EncodedResponse generation, EncodedResponse context, String conversation, RouteInfo route) {
    if (streaming) {
      open(route);
      agents.turnEnded(conversation, relay.toolCall());
      sink.streamEnd(route);
    } else {
      EncodedResponse whole = generation.forClient(context == null ? null : context.usage());
      if (agents.active()) {  // reading the finish reason may parse the answer
        agents.turnEnded(conversation, ToolCalls.in(generation));
      }
      sink.respondEncoded(whole, route);
    }
  }

  /** A cut stream ends cleanly: the client already has the whole answer. */
  void endStream(RouteInfo route) {
    sink.streamEnd(route);
  }

  /** An error: the status and body before anything was sent, else the stream's last event. */
  void fail(int status, String message, RouteInfo route) {
    sink.fail(status, ErrorResponse.of(status, message, null), route);
  }

  private void open(RouteInfo route) {
    if (!streamStarted) {
      streamStarted = true;
      sink.streamStart(route);
    }
  }
}
