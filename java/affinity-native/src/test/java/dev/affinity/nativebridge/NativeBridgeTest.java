package dev.affinity.nativebridge;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Always on: the CPU path must load. A broken native build fails here instead of being skipped. */
class NativeBridgeTest {

  @Test
  void nativeLibraryLoadsOnCpu() {
    assertDoesNotThrow(NativeBridge::ensureAvailability);
    assertTrue(NativeBridge.isAvailable());
    assertNull(NativeBridge.unavailabilityCause());
  }

  @Test
  void reportsVersionAndSimBackend() {
    assertTrue(NativeBridge.version().startsWith("affinity-native"), NativeBridge.version());
    assertTrue(NativeBridge.availableBackends().contains("sim"), NativeBridge.availableBackends());
  }
}
