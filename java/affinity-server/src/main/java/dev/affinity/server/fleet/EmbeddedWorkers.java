package dev.affinity.server.fleet;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ServerSection;
import dev.affinity.config.WorkerPool;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.nativebridge.NativeExecutor;
import dev.affinity.nativebridge.worker.BpeTokenCodec;
import dev.affinity.nativebridge.worker.ModelTokenCodec;
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

  /** One executor of a pool: its worker name ({@code ctx-0}, {@code gen-1}, ...), backend and JSON configuration. */
  public record Instance(String name, String backend, Map<String, Object> config) {
    /** The same instance with another configuration. */
    public Instance withConfig(Map<String, Object> newConfig) {
      return new Instance(name, backend, newConfig);
    }

    public String configJson() {
      try {
        return JSON.writeValueAsString(config);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /** The executors that a fleet's {@code affinity.workers} pool describes. */
  public static List<Instance> instances(ServerSection section) {
    WorkerPool pool = section.embedded().orElseThrow(() -> new IllegalArgumentException(section.name() + " has no embedded workers"));
    String prefix = section.name().startsWith("context") ? "ctx" : "gen";
    List<Instance> out = new ArrayList<>();
    for (int i = 0; i < pool.instances(); i++) {
      Map<String, Object> cfg = new LinkedHashMap<>(pool.executorConfig());
      cfg.putIfAbsent("instance_name", prefix + "-" + i);
      out.add(new Instance(prefix + "-" + i, pool.backend(), cfg));
    }
    return out;
  }

  /**
   * One {@link NativeWorker} per instance, named {@code <fleet>-<i>}; the caller closes them. The
   * codec is a BPE encoding name, or {@code model} for the model's own tokenizer from each executor.
   * The context and generation workers of one deployment share {@code handoff} (executors and
   * workers are created in it), which the caller closes after them.
   */
  public static List<NativeWorker> create(ServerSection section, String tokenizer, int defaultMaxTokens,
      HandoffDomain handoff) {
    return create(section, ModelTokenCodec.NAME.equals(tokenizer) ? null : new BpeTokenCodec(tokenizer),
        defaultMaxTokens, handoff);
  }

  /**
   * {@link #create(ServerSection, String, int, HandoffDomain)} with every worker on {@code shared} (a model
   * tokenizer's codec, for example), or each on its executor's own model tokenizer when null.
   */
  public static List<NativeWorker> create(ServerSection section, TokenCodec shared, int defaultMaxTokens,
      HandoffDomain handoff) {
    List<NativeWorker> out = new ArrayList<>();
    try {
      for (Instance in : instances(section)) {
        NativeExecutor ex = NativeExecutor.create(in.backend(), in.configJson(), handoff);
        try {
          out.add(new NativeWorker(in.name(), ex, shared != null ? shared : new ModelTokenCodec(ex), defaultMaxTokens,
              handoff));
        } catch (RuntimeException e) {
          ex.close();
          throw e;
        }
      }
    } catch (RuntimeException e) {
      out.forEach(NativeWorker::close);
      throw e;
    }
    return out;
  }
}
