package dev.affinity.server.shared;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.SharedStateSettings;
import org.junit.jupiter.api.Test;

/** jnats's errors go to SLF4J, a warning once per kind until the connection is up again. */
class NatsErrorLogTest {
  @Test
  void theConnectionLogsItsErrorsThroughSlf4j() throws Exception {
    assertInstanceOf(NatsErrorLog.class,
        NatsConnections.options(SharedStateSettings.of("nats://127.0.0.1:4222"), "test").getErrorListener());
  }

  @Test
  void eachKindIsAWarningOnceUntilReset() {
    NatsErrorLog errors = new NatsErrorLog();
    assertTrue(errors.first("error Authorization Violation"));
    assertFalse(errors.first("error Authorization Violation"));
    assertTrue(errors.first("exception java.util.concurrent.TimeoutException"));
    errors.errorOccurred(null, "Authorization Violation"); // at debug now: no exception, no JUL line
    errors.reset();
    assertTrue(errors.first("error Authorization Violation"));
  }
}
