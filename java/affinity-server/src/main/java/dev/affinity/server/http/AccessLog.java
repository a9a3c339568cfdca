package dev.affinity.server.http;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the frontend reports each finished request. {@link #log} is called on Netty event loops, once
 * per request, and must not block.
 */
@FunctionalInterface
public interface AccessLog extends AutoCloseable {

  /** The SLF4J logger name of {@link #slf4j()}. */
  String LOGGER_NAME = "affinity.access";

  void log(AccessRecord record);

  /**
   * Whether {@link #log} would keep a record now; when false the frontend does not build one (a record and its
   * JSON cost more than the rest of a request's bookkeeping). The default says true.
   */
  default boolean enabled() {
    return true;
  }

  /** Flushes and releases what the log holds; the default does nothing. */
  @Override
  default void close() {}

  /** Drops every record. */
  static AccessLog none() {
    return new AccessLog() {
      @Override
      public void log(AccessRecord record) {}

      @Override
      public boolean enabled() {
        return false;
      }
    };
  }

  /** One INFO line per request, the record's JSON, on the logger {@value #LOGGER_NAME}. */
  static AccessLog slf4j() {
    Logger log = LoggerFactory.getLogger(LOGGER_NAME);
    return new AccessLog() {
      @Override
      public void log(AccessRecord record) {
        if (log.isInfoEnabled()) {
          log.info(record.toJson());
        }
      }

      @Override
      public boolean enabled() {
        return log.isInfoEnabled();
      }
    };
  }

  /** JSON lines on standard output, written by a background thread. */
  static AccessLog stdout() {
    return new LineWriterAccessLog(new FileOutputStream(java.io.FileDescriptor.out), "stdout", false);
  }

  /** JSON lines appended to {@code file} (created when missing), written by a background thread. */
  static AccessLog file(Path file) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    OutputStream out = Files.newOutputStream(file, StandardOpenOption.CREATE, StandardOpenOption.APPEND,
        StandardOpenOption.WRITE);
    return new LineWriterAccessLog(out, file.toString(), true);
  }

  /**
   * The log {@code affinity.access_log} asks for: {@code "-"} for standard output, a path for a file, and
   * when unset the SLF4J logger {@value #LOGGER_NAME} (silent unless the logging configuration enables
   * INFO for it).
   */
  static AccessLog forSetting(Optional<String> setting) throws IOException {
    if (setting.isEmpty() || setting.get().isBlank()) {
      return slf4j();
    }
    String s = setting.get().strip();
    return s.equals("-") ? stdout() : file(Path.of(s));
  }
}
