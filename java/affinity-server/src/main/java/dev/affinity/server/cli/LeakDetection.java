package dev.affinity.server.cli;

import io.netty.util.ResourceLeakDetector;
import java.util.Optional;

/**
 * Netty's buffer-leak detector in the command's process. Netty's default ({@code simple}) records a stack trace for
 * one pooled buffer in 128; on the frontend's request path that cost about a tenth of its CPU per request
 * (docs/native.md#jvm-flags). The command turns it off unless the JVM was started with
 * {@code -Dio.netty.leakDetection.level=...} (or Netty's older {@code io.netty.noResourceLeakDetection}), which is
 * then left as given: {@code -Dio.netty.leakDetection.level=simple} brings the sampling back. The test suite runs
 * with {@code paranoid}, so every leak is still caught before a release; an embedding application keeps Netty's
 * default, since only the command line applies this.
 */
final class LeakDetection {
  static final String LEVEL_PROPERTY = "io.netty.leakDetection.level";
  static final String LEGACY_PROPERTY = "io.netty.noResourceLeakDetection";

  private LeakDetection() {}

  /** The level to set, or empty when the JVM's properties chose one. */
  static Optional<ResourceLeakDetector.Level> override(String level, String legacy) {
    return level == null && legacy == null ? Optional.of(ResourceLeakDetector.Level.DISABLED) : Optional.empty();
  }

  /** Applies {@link #override} to this JVM's system properties. */
  static void configure() {
    override(System.getProperty(LEVEL_PROPERTY), System.getProperty(LEGACY_PROPERTY))
        .ifPresent(ResourceLeakDetector::setLevel);
  }
}
