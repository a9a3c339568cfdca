package dev.affinity.frontend;

/**
 * Serves one admitted client request (implemented by the disaggregated orchestration, and by worker mode's
 * leg handler). Called on the frontend's thread: it must return quickly and answer through the sink, from
 * any thread, exactly as {@link ClientSink} describes.
 */
@FunctionalInterface
public interface CompletionHandler {
  void handle(AdmittedRequest request, ClientSink sink);
}
