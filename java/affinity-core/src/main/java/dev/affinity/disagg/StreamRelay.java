package dev.affinity.disagg;

import dev.affinity.agent.AgentScheduling;
import dev.affinity.frontend.ClientSink;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.worker.EncodedChunk;

/**
 * The client's stream as the generation leg relays it: a worker's chunk as its bytes, or, once a cut stream was
 * resumed, rewritten into the stream the client already has ({@link StreamResume}); each chunk kept for a resume, and
 * watched for a tool call while agent-aware scheduling needs to know (a turn that ends in one). Runs under its flow's
 * lock.
 */
final class StreamRelay {
  private final ClientSink sink;
  /** The relayed stream, kept for a resume on another worker; null for a non-streamed request. */
  private final StreamResume resume;
  private final AgentScheduling agents;
  /** Whether the answer's stream carried a tool call (a streamed turn that ends in a tool call). */
  private boolean toolCall;

  StreamRelay(ClientSink sink, StreamResume resume, AgentScheduling agents) {
    this.sink = sink;
    this.resume = resume;
    this.agents = agents;
  }

  /**
   * Sends one chunk to the client: a worker's as it came (bytes relayed as they are), or, once a cut stream was
   * resumed, rewritten into the stream the client already has; kept for a resume, and watched for a tool call.
   */
  void relay(EncodedChunk chunk) {
    EncodedChunk c = chunk;
    if (resume != null && resume.resumed()) {
      OpenAiStreamChunk rewritten = resume.rewrite(chunk.parsed());
      if (rewritten == null) {
        return;
      }
      c = EncodedChunk.of(rewritten);
    }
    if (resume != null) {
      resume.record(c);
    }
    if (watchingToolCalls()) {
      toolCall = ToolCalls.in(c);
    }
    sink.streamEncoded(c);
  }

  /** Whether a relayed chunk carried a tool call (known only while agent-aware scheduling is on). */
  boolean toolCall() {
    return toolCall;
  }

  /**
   * Whether the next streamed chunk is scanned for a tool call: only while agent-aware scheduling is on and none was
   * seen yet (a scan costs a pass over the chunk).
   */
  private boolean watchingToolCalls() {
    return !toolCall && agents.active();
  }
}
