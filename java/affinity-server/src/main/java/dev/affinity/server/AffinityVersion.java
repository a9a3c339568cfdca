package dev.affinity.server;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * Affinity's version, from the pom: Maven writes it into {@code dev/affinity/server/version.properties} (resource
 * filtering), so {@code affinity --version}, {@code /version} and the workers' {@code /server_info} report the version
 * that was built, never a string someone forgot to bump.
 */
public final class AffinityVersion {
  private static final String CURRENT = read();

  private AffinityVersion() {}

  /** The version this build came from ({@code 0.1.0-SNAPSHOT}, say). */
  public static String current() {
    return CURRENT;
  }

  private static String read() {
    try (InputStream in = AffinityVersion.class.getResourceAsStream("version.properties")) {
      if (in == null) {
        throw new IllegalStateException("dev/affinity/server/version.properties is missing from the classpath: "
            + "build with Maven (it writes the pom's version there)");
      }
      Properties p = new Properties();
      p.load(in);
      String v = p.getProperty("version", "").strip();
      if (v.isEmpty() || v.startsWith("${")) {
        throw new IllegalStateException("version.properties was not filtered by Maven: " + v);
      }
      return v;
    } catch (IOException e) {
      throw new IllegalStateException("cannot read version.properties", e);
    }
  }
}
