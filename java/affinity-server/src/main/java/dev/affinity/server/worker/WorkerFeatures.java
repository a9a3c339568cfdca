package dev.affinity.server.worker;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Optional;

/**
 * What a worker over HTTP takes beyond trtllm-serve's contract, as its {@code /server_info} reports it in Affinity's
 * extension object ({@link WorkerExtensions}); a stock worker reports none.
 *
 * @param completionCacheSalt a completion leg's KV cache salt is taken ({@value WorkerExtensions#CACHE_SALT_HEADER})
 * @param releaseContext held contexts are released on {@value WorkerExtensions#RELEASE_CONTEXT_PATH}
 * @param kvEventsSubject the NATS subject the worker publishes its own KV events on
 *     ({@value WorkerExtensions#KV_EVENTS_NATS}), empty when frontends drain them
 * @param kvEventsPublisher the key its batches carry on that subject (present with the subject)
 */
public record WorkerFeatures(boolean completionCacheSalt, boolean releaseContext, Optional<String> kvEventsSubject,
    Optional<String> kvEventsPublisher) {
  /** A stock trtllm-serve worker's: nothing beyond upstream's contract. */
  public static final WorkerFeatures NONE = new WorkerFeatures(false, false, Optional.empty(), Optional.empty());

  public WorkerFeatures {
    if (kvEventsSubject.isPresent() != kvEventsPublisher.isPresent()) {
      throw new IllegalArgumentException("a KV events subject and its publisher key go together");
    }
  }

  /** The features a {@code /server_info} answer reports; a missing or non-boolean flag is false. */
  static WorkerFeatures of(JsonNode serverInfo) {
    JsonNode ext = serverInfo == null ? null : serverInfo.get(WorkerExtensions.SERVER_INFO_KEY);
    if (ext == null || !ext.isObject()) {
      return NONE;
    }
    JsonNode nats = ext.get(WorkerExtensions.KV_EVENTS_NATS);
    Optional<String> subject = text(nats, WorkerExtensions.KV_EVENTS_SUBJECT);
    Optional<String> publisher = text(nats, WorkerExtensions.KV_EVENTS_PUBLISHER);
    if (subject.isEmpty() || publisher.isEmpty()) {
      subject = Optional.empty();
      publisher = Optional.empty();
    }
    return new WorkerFeatures(flag(ext, WorkerExtensions.COMPLETION_CACHE_SALT), flag(ext, WorkerExtensions.RELEASE_CONTEXT),
        subject, publisher);
  }

  private static Optional<String> text(JsonNode object, String name) {
    JsonNode n = object == null || !object.isObject() ? null : object.get(name);
    return n != null && n.isTextual() && !n.asText().isBlank() ? Optional.of(n.asText()) : Optional.empty();
  }

  private static boolean flag(JsonNode ext, String name) {
    JsonNode n = ext.get(name);
    return n != null && n.isBoolean() && n.booleanValue();
  }
}
