package dev.affinity.bench.jmh;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import dev.affinity.kv.TrtllmKvEventCodec;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * A worker's {@code /kv_cache_events} answer after a long prefill, as TensorRT-LLM writes it (each stored block with
 * its tokens as objects: {@code tensorrt_llm/_utils.py}'s event serialization), read by the frontend's poller:
 * token by token ({@link TrtllmKvEventCodec#parse(byte[])}) against the tree it read before
 * ({@code ObjectMapper.readTree} then {@link TrtllmKvEventCodec#parse(com.fasterxml.jackson.databind.JsonNode)}).
 * {@code tokens}: the prefill's tokens (32-token blocks, one stored event per 64 blocks, as a worker batches them).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g"})
@State(Scope.Benchmark)
public class KvEventCodecBenchmark {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Param({"176000"})
  public int tokens;

  private byte[] body;

  @Setup
  public void setUp() throws Exception {
    SplittableRandom r = new SplittableRandom(46);
    List<KvEvent> events = new ArrayList<>();
    int blocks = tokens / 32;
    long parent = 0;
    for (int b = 0; b < blocks; b += 64) {
      int n = Math.min(64, blocks - b);
      long[] hashes = new long[n];
      int[] ids = new int[n * 32];
      for (int i = 0; i < n; i++) {
        hashes[i] = r.nextLong();
      }
      for (int i = 0; i < ids.length; i++) {
        ids[i] = r.nextInt(152_000);
      }
      events.add(new KvEvent(events.size(), KvEventType.STORED, 0, 0, b > 0, parent, hashes, ids, 0, 0));
      parent = hashes[n - 1];
    }
    body = JSON.writeValueAsBytes(TrtllmKvEventCodec.toJson(events, 32));
  }

  @Benchmark
  public List<KvEvent> tokenByToken() {
    return TrtllmKvEventCodec.parse(body);
  }

  @Benchmark
  public List<KvEvent> tree() throws Exception {
    return TrtllmKvEventCodec.parse(JSON.readTree(body));
  }
}
