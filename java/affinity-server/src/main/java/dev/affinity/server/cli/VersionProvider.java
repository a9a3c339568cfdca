package dev.affinity.server.cli;

import dev.affinity.nativebridge.NativeBridge;
import picocli.CommandLine.IVersionProvider;

/** Affinity's version, the Java runtime, and the native library (or why it did not load). */
final class VersionProvider implements IVersionProvider {
  @Override
  public String[] getVersion() {
    String nativeLine = NativeBridge.isAvailable()
        ? NativeBridge.version() + " (backends: " + NativeBridge.availableBackends() + ")"
        : "native library unavailable: " + NativeBridge.unavailabilityCause();
    return new String[] {
      "affinity " + dev.affinity.server.AffinityVersion.current(),
      "java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ")",
      nativeLine
    };
  }
}
