package dev.affinity.nativebridge.gpu;

/**
 * One CUDA device.
 *
 * @param index the CUDA device ordinal
 * @param name the device name (e.g. "NVIDIA H200")
 * @param totalMemoryBytes global memory
 * @param computeCapability "major.minor"
 */
public record Gpu(int index, String name, long totalMemoryBytes, String computeCapability) {
  /** Memory in GiB, for display. */
  public double totalMemoryGiB() {
    return totalMemoryBytes / (double) (1L << 30);
  }
}
