package dev.affinity.server.fleet;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ServerSection;
import dev.affinity.config.WorkerPool;
import dev.affinity.nativebridge.NativeExecutor;
import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.worker.TokenCodec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Builds the in-process workers of a fleet from its {@code affinity.workers} pool. */
public final class EmbeddedWorkers {
  private static final ObjectMapper JSON = new ObjectMapper();

  private EmbeddedWorkers() {}

  /** One {@link NativeWorker} per instance, named {@code <fleet>-<i>}; the caller closes them. */
  public static List<NativeWorker> create(ServerSection section, TokenCodec codec, int defaultMaxTokens) {
    WorkerPool pool = section.embedded().orElseThrow(() -> new IllegalArgumentException(section.name() + " has no embedded workers"));
    String prefix = section.name().startsWith("context") ? "ctx" : "gen";
    List<NativeWorker> out = new ArrayList<>();
    try {
      for (int i = 0; i < pool.instances(); i++) {
        Map<String, Object> cfg = new LinkedHashMap<>(pool.executorConfig());
        cfg.putIfAbsent("instance_name", prefix + "-" + i);
        String json = JSON.writeValueAsString(cfg);
        out.add(new NativeWorker(prefix + "-" + i, NativeExecutor.create(pool.backend(), json), codec, defaultMaxTokens));
      }
    } catch (IOException e) {
      out.forEach(NativeWorker::close);
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      out.forEach(NativeWorker::close);
      throw e;
    }
    return out;
  }
}
