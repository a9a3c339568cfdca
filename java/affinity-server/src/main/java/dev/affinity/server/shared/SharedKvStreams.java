package dev.affinity.server.shared;

import dev.affinity.config.SharedStateSettings;
import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.KeyValueManagement;
import io.nats.client.api.KeyValueConfiguration;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;
import java.time.Duration;

/** Creates or updates a cluster's stream and drain bucket, whichever frontend comes first. */
final class SharedKvStreams {
  /** JetStream's "stream not found". */
  private static final int NOT_FOUND = 10059;

  private SharedKvStreams() {
  }

  /**
   * The stream (file storage: the retained window survives a NATS restart, for frontends that start later, and
   * does not hold NATS's memory; max age = {@code event_retention_seconds}) and the drain bucket (file storage so a
   * restart keeps the bucket; entries live one lease).
   */
  static void ensure(Connection connection, KvNames names, SharedStateSettings settings)
      throws IOException, JetStreamApiException {
    ensureStream(connection, names, settings, true);
    KeyValueManagement kvm = connection.keyValueManagement();
    KeyValueConfiguration kc = KeyValueConfiguration.builder().name(names.bucketName).maxHistoryPerKey(1)
        .storageType(StorageType.File).ttl(Duration.ofMillis((long) (settings.drainLeaseSeconds() * 1000))).build();
    try {
      kvm.getStatus(names.bucketName);
      kvm.update(kc);
    } catch (JetStreamApiException e) {
      if (e.getApiErrorCode() != NOT_FOUND) {
        throw e;
      }
      try {
        kvm.create(kc);
      } catch (JetStreamApiException raced) {
        kvm.update(kc);
      }
    }
  }

  /**
   * The stream alone: created when missing, and with {@code update} set to these settings when it exists (a frontend's
   * {@code event_retention_seconds}); a worker that publishes its own events creates it with the defaults when it
   * starts first and leaves an existing one as the frontends set it.
   */
  static void ensureStream(Connection connection, KvNames names, SharedStateSettings settings, boolean update)
      throws IOException, JetStreamApiException {
    JetStreamManagement jsm = connection.jetStreamManagement();
    StreamConfiguration sc = StreamConfiguration.builder().name(names.streamName).subjects(names.subjects())
        .storageType(StorageType.File)
        .maxAge(Duration.ofMillis((long) (settings.eventRetentionSeconds() * 1000))).build();
    try {
      jsm.getStreamInfo(names.streamName);
      if (update) {
        jsm.updateStream(sc);
      }
    } catch (JetStreamApiException e) {
      if (e.getApiErrorCode() != NOT_FOUND) {
        throw e;
      }
      try {
        jsm.addStream(sc);
      } catch (JetStreamApiException raced) {
        if (update) {
          jsm.updateStream(sc); // another frontend created it first
        }
      }
    }
  }
}
