package dev.affinity.cuda;

import static org.bytedeco.cuda.global.cudart.cudaDriverGetVersion;
import static org.bytedeco.cuda.global.cudart.cudaGetDeviceCount;
import static org.bytedeco.cuda.global.cudart.cudaGetDeviceProperties;
import static org.bytedeco.cuda.global.cudart.cudaGetErrorString;
import static org.bytedeco.cuda.global.cudart.cudaRuntimeGetVersion;
import static org.bytedeco.cuda.global.cudart.cudaSuccess;

import dev.affinity.nativebridge.gpu.Gpu;
import dev.affinity.nativebridge.gpu.GpuInventory;
import dev.affinity.nativebridge.gpu.GpuProbe;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.cuda.cudart.cudaDeviceProp;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.Loader;

/**
 * GPU inventory through the CUDA runtime API of JavaCPP's CUDA presets: device count, names, memory
 * and compute capability. It creates no CUDA context. Loading the presets throws
 * {@link UnsatisfiedLinkError} on a machine without the CUDA runtime; {@link GpuInventory#detect()}
 * turns that into "no GPU" with the cause.
 */
public final class CudaGpuProbe implements GpuProbe {
  @Override
  public GpuInventory probe() {
    Loader.load(cudart.class);
    try (IntPointer n = new IntPointer(1); IntPointer driver = new IntPointer(1); IntPointer runtime = new IntPointer(1)) {
      cudaDriverGetVersion(driver);
      cudaRuntimeGetVersion(runtime);
      String source = "cuda runtime " + version(runtime.get()) + ", driver " + version(driver.get());
      int err = cudaGetDeviceCount(n);
      if (err != cudaSuccess) {
        return new GpuInventory(List.of(), source, "cudaGetDeviceCount: " + cudaGetErrorString(err).getString());
      }
      List<Gpu> gpus = new ArrayList<>();
      for (int i = 0; i < n.get(); i++) {
        try (cudaDeviceProp p = new cudaDeviceProp()) {
          err = cudaGetDeviceProperties(p, i);
          if (err != cudaSuccess) {
            return new GpuInventory(gpus, source, "cudaGetDeviceProperties(" + i + "): " + cudaGetErrorString(err).getString());
          }
          gpus.add(new Gpu(i, p.name().getString().trim(), p.totalGlobalMem(), p.major() + "." + p.minor()));
        }
      }
      return new GpuInventory(gpus, source, null);
    }
  }

  /** CUDA's version integer (1000 x major + 10 x minor) as "major.minor"; "none" for 0. */
  static String version(int v) {
    return v <= 0 ? "none" : (v / 1000) + "." + (v % 1000) / 10;
  }
}
