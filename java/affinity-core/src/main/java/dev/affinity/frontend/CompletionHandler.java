package dev.affinity.frontend;

import dev.affinity.conversation.HeaderSource;
import dev.affinity.protocol.OpenAiRequest;

/** Serves one parsed client request (implemented by {@link DisaggService}). */
@FunctionalInterface
public interface CompletionHandler {
  void handle(OpenAiRequest request, HeaderSource headers, ClientSink sink);
}
