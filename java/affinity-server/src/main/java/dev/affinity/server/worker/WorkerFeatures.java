package dev.affinity.server.worker;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * What a worker over HTTP takes beyond trtllm-serve's contract, as its {@code /server_info} reports it in Affinity's
 * extension object ({@link WorkerExtensions}); a stock worker reports none.
 *
 * @param completionCacheSalt a completion leg's KV cache salt is taken ({@value WorkerExtensions#CACHE_SALT_HEADER})
 * @param releaseContext held contexts are released on {@value WorkerExtensions#RELEASE_CONTEXT_PATH}
 */
public record WorkerFeatures(boolean completionCacheSalt, boolean releaseContext) {
  /** A stock trtllm-serve worker's: nothing beyond upstream's contract. */
  public static final WorkerFeatures NONE = new WorkerFeatures(false, false);

  /** The features a {@code /server_info} answer reports; a missing or non-boolean flag is false. */
  static WorkerFeatures of(JsonNode serverInfo) {
    JsonNode ext = serverInfo == null ? null : serverInfo.get(WorkerExtensions.SERVER_INFO_KEY);
    if (ext == null || !ext.isObject()) {
      return NONE;
    }
    return new WorkerFeatures(flag(ext, WorkerExtensions.COMPLETION_CACHE_SALT), flag(ext, WorkerExtensions.RELEASE_CONTEXT));
  }

  private static boolean flag(JsonNode ext, String name) {
    JsonNode n = ext.get(name);
    return n != null && n.isBoolean() && n.booleanValue();
  }
}
