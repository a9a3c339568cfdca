package dev.affinity.nativebridge.gpu;

import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The GPUs of this machine, or why there are none to see. {@link #detect()} never throws and never
 * fails the CPU path: a missing driver or CUDA runtime ({@link LinkageError}) becomes "no GPU" with
 * its cause.
 *
 * @param gpus the devices found (empty when none or unknown)
 * @param source what looked ("cuda runtime 13.0, driver 13.0", or "none")
 * @param unavailable why no GPU is reported, or null when the probe ran
 */
public record GpuInventory(List<Gpu> gpus, String source, String unavailable) {
  private static final Logger log = LoggerFactory.getLogger(GpuInventory.class);

  public GpuInventory {
    gpus = List.copyOf(gpus);
  }

  public static GpuInventory unavailable(String why) {
    return new GpuInventory(List.of(), "none", why);
  }

  /** The inventory from the first {@link GpuProbe} on the class path. */
  public static GpuInventory detect() {
    Optional<GpuProbe> probe;
    try {
      probe = ServiceLoader.load(GpuProbe.class).findFirst();
    } catch (java.util.ServiceConfigurationError e) {
      return unavailable("the GPU probe could not be loaded: " + e.getMessage());
    }
    if (probe.isEmpty()) {
      return unavailable("no GPU probe on the class path (build with the Maven profile -Pcuda to add affinity-cuda)");
    }
    try {
      return probe.get().probe();
    } catch (LinkageError | RuntimeException e) {
      log.debug("GPU probe failed", e);
      return unavailable(causes(e));
    }
  }

  /** "Type: message" of a throwable and each cause (the root names the missing library). */
  static String causes(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      b.append(b.length() == 0 ? "" : "; caused by ").append(t.getClass().getSimpleName()).append(": ").append(t.getMessage());
    }
    return b.toString();
  }

  /** True when at least one GPU was found. */
  public boolean hasGpu() {
    return !gpus.isEmpty();
  }

  /** One line per GPU, or "no GPU: &lt;cause&gt;". */
  public String describe() {
    if (gpus.isEmpty()) {
      return "no GPU: " + (unavailable == null ? "the probe found no device (" + source + ")" : unavailable);
    }
    StringBuilder b = new StringBuilder(gpus.size() + " GPU(s), " + source);
    for (Gpu g : gpus) {
      b.append(String.format("%n  %d: %s, %.1f GiB, compute %s", g.index(), g.name(), g.totalMemoryGiB(), g.computeCapability()));
    }
    return b.toString();
  }
}
