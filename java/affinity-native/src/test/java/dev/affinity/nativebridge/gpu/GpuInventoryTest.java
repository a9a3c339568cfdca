package dev.affinity.nativebridge.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class GpuInventoryTest {
  @Test
  void withoutTheCudaModuleDetectReportsNoGpuAndHowToGetTheProbe() {
    GpuInventory inv = GpuInventory.detect(); // affinity-cuda is not on this module's class path
    assertFalse(inv.hasGpu());
    assertTrue(inv.describe().contains("no GPU probe on the class path (build with the Maven profile -Pcuda"), inv.describe());
  }

  @Test
  void causesKeepTheRootCause() {
    Throwable e = new UnsatisfiedLinkError("no jnicudart");
    e.initCause(new UnsatisfiedLinkError("libcuda.so.1: cannot open shared object file"));
    assertEquals("UnsatisfiedLinkError: no jnicudart; caused by UnsatisfiedLinkError: libcuda.so.1: cannot open shared object file",
        GpuInventory.causes(e));
  }

  @Test
  void describeListsDevices() {
    GpuInventory inv = new GpuInventory(List.of(new Gpu(0, "NVIDIA H200", 150_000_000_000L, "9.0")), "cuda runtime 13.0, driver 13.0", null);
    assertTrue(inv.hasGpu());
    assertTrue(inv.describe().contains("0: NVIDIA H200, 139.7 GiB, compute 9.0"), inv.describe());
  }
}
