package dev.affinity.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.affinity.nativebridge.gpu.GpuInventory;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

class CudaGpuProbeTest {
  /** A machine with an NVIDIA driver has /proc/driver/nvidia; one without cannot have a usable GPU. */
  private static boolean nvidiaDriver() {
    return Files.isDirectory(Path.of("/proc/driver/nvidia"));
  }

  @Test
  void detectFindsThisProbeAndNeverThrows() {
    GpuInventory inv = GpuInventory.detect();
    assertNotNull(inv);
    assertFalse(inv.describe().contains("no GPU probe on the class path"), inv.describe());
  }

  @Test
  void withoutADriverItReportsNoGpuWithTheCause() {
    assumeFalse(nvidiaDriver(), "this machine has an NVIDIA driver");
    GpuInventory inv = GpuInventory.detect();
    assertFalse(inv.hasGpu());
    assertTrue(inv.describe().startsWith("no GPU: "), inv.describe());
    assertNotNull(inv.unavailable(), "the cause is kept");
  }

  @Test
  void versionsReadAsCudaWritesThem() {
    assertEquals("13.0", CudaGpuProbe.version(13000));
    assertEquals("12.9", CudaGpuProbe.version(12090));
    assertEquals("none", CudaGpuProbe.version(0));
  }

  @Test
  @Tag("gpu")
  void onAGpuNodeItListsTheDevices() {
    assumeTrue(nvidiaDriver(), "no NVIDIA driver");
    GpuInventory inv = GpuInventory.detect();
    assertTrue(inv.hasGpu(), inv.describe());
    assertTrue(inv.gpus().get(0).totalMemoryBytes() > 0, inv.describe());
  }
}
