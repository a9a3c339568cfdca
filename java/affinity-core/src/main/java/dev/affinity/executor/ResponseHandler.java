package dev.affinity.executor;

/** Receives the responses of one request, on the dispatcher's poller thread, in order. */
@FunctionalInterface
public interface ResponseHandler {
  /** Called once per response; the last call has {@code response.isFinal() == true}. Must not block. */
  void onResponse(ExecutorResponse response);
}
