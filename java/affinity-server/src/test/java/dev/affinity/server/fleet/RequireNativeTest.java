package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.nativebridge.NativeRequirement;
import dev.affinity.nativebridge.NativeUnavailableException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** {@link AffinityServer#requireNative}: which configs need the native library, on a probe that says it is absent. */
class RequireNativeTest {
  static final UnsatisfiedLinkError ABSENT = new UnsatisfiedLinkError("no jniAffinityNative in java.library.path: /usr/lib");

  @Test
  void remoteWorkersNeverAskForTheLibrary() throws Exception {
    DisaggConfig cfg = ConfigLoader.parse("""
        hostname: localhost
        port: 8000
        context_servers: {num_instances: 1, urls: ["ctx-0:8001"]}
        generation_servers: {num_instances: 1, urls: ["gen-0:8002"]}
        """, "remote.yaml").config();
    AtomicInteger asked = new AtomicInteger();
    assertDoesNotThrow(() -> AffinityServer.requireNative(cfg, NativeRequirement.probing(() -> {
      asked.incrementAndGet();
      return ABSENT;
    })));
    assertEquals(0, asked.get(), "the probe (which would load the library) is not touched");
  }

  @Test
  void embeddedWorkersNameTheirFleetAndTheMissingLibrary() throws Exception {
    DisaggConfig cfg = ConfigLoader.parse("""
        hostname: localhost
        port: 8000
        context_servers: {num_instances: 1, urls: ["ctx-0:8001"]}
        generation_servers: {num_instances: 1}
        affinity:
          workers:
            generation: {instances: 1}
        """, "mixed.yaml").config();
    NativeUnavailableException e = assertThrows(NativeUnavailableException.class,
        () -> AffinityServer.requireNative(cfg, NativeRequirement.probing(() -> ABSENT)));
    assertTrue(e.getMessage().startsWith("generation_servers (embedded workers, backend sim): needs Affinity's native"
        + " library, which is not available: libjniAffinityNative.so for "), e.getMessage());
    assertTrue(e.getMessage().contains("-Daffinity.native.skip=true"), e.getMessage());
    assertEquals(-1, e.getMessage().indexOf('\n'), "one line");
    assertSame(ABSENT, e.getCause());
    assertDoesNotThrow(() -> AffinityServer.requireNative(cfg, NativeRequirement.probing(() -> null)));
  }
}
