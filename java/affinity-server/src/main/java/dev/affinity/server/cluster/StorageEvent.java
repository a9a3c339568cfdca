package dev.affinity.server.cluster;

/**
 * A change under a watched prefix: a key set (new, overwritten or re-registered), or deleted (deleted,
 * expired, or its lease ended). A delete carries no value, as etcd's does not. {@code revision} is etcd's
 * revision of the change (0 from storages without revisions).
 */
public record StorageEvent(Type type, String key, String value, long revision) {
  public enum Type {
    SET,
    DELETE
  }

  public static StorageEvent set(String key, String value) {
    return new StorageEvent(Type.SET, key, value, 0);
  }

  public static StorageEvent delete(String key) {
    return new StorageEvent(Type.DELETE, key, "", 0);
  }
}
