package dev.affinity.nativebridge.gpu;

/**
 * Finds the machine's GPUs. Implemented by the optional {@code affinity-cuda} module (Maven profile
 * {@code cuda}, through JavaCPP's CUDA presets) and found with {@link java.util.ServiceLoader}, so
 * that builds without it never touch CUDA classes.
 */
public interface GpuProbe {
  /** The inventory; may throw LinkageError when CUDA's libraries cannot load (the caller reports it). */
  GpuInventory probe();
}
