package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.server.cluster.EtcdProcess;
import dev.affinity.server.cluster.ServerRole;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several frontends behind any load balancer, sharing one etcd: three {@code affinity serve} processes see the
 * same workers (registered in etcd), and 200 conversations whose turns go to random frontends keep their
 * context worker and rank, because the pins are shared (put-if-absent on a first turn, so two frontends placing
 * the same first turn at once agree); their sub-agents (the parent header) reach the same worker and rank. After one frontend is killed the others keep serving every conversation
 * where it was; a frontend started afterwards knows every pin. The assertions are about places, not timing.
 */
class MultiFrontendTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final int CONVERSATIONS = 200;
  static final int SIMULTANEOUS_FIRST_TURNS = 20;
  static final String EXECUTOR = """
      {"num_ranks": 2, "tokens_per_block": 16, "clock": {"time_scale": 0.02}, "context_hold_timeout_ms": 1000}""";
  static final Pattern ROUTE = Pattern.compile("ctx=([^;]+); ctx_rank=(-?\\d+)");

  @TempDir
  Path dir;
  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  /** The worker and rank that served a turn. */
  record Place(String worker, int rank) {}

  Place turn(WorkerProcess frontend, int conversation, int turn) throws Exception {
    return send(frontend, "conv-" + conversation, null, "conversation " + conversation + " turn " + turn);
  }

  /** A sub-agent of a conversation: its own session id, the conversation as its parent. */
  Place subAgent(WorkerProcess frontend, int conversation) throws Exception {
    return send(frontend, "sub-" + conversation, "conv-" + conversation, "sub-agent of conversation " + conversation);
  }

  Place send(WorkerProcess frontend, String session, String parent, String text) throws Exception {
    String body = "{\"model\": \"m\", \"prompt\": \"" + text
        + ": tell me more about the routing of long agentic sessions\", \"max_tokens\": 2}";
    HttpRequest.Builder req = HttpRequest.newBuilder(URI.create(frontend.url() + "/v1/completions"))
        .header("Content-Type", "application/json").header("X-Session-ID", session)
        .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofString(body));
    if (parent != null) {
      req.header("X-Dynamo-Parent-Session-ID", parent);
    }
    HttpResponse<String> r = http.send(req.build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), frontend.name() + ": " + r.body());
    Matcher m = ROUTE.matcher(r.headers().firstValue("x-affinity-route").orElse(""));
    assertTrue(m.find(), r.headers().toString());
    return new Place(m.group(1), Integer.parseInt(m.group(2)));
  }

  JsonNode clusterInfo(WorkerProcess frontend) {
    try {
      return JSON.readTree(http.send(HttpRequest.newBuilder(URI.create(frontend.url() + "/cluster_info"))
          .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString()).body());
    } catch (Exception e) {
      return JSON.createObjectNode();
    }
  }

  void awaitWorkers(WorkerProcess frontend) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
    while (true) {
      JsonNode info = clusterInfo(frontend);
      if (info.path("is_ready").asBoolean() && info.at("/server_lists/context").size() == 3) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError(frontend.name() + " never saw the workers: " + info + "\n" + frontend.output());
      }
      Thread.sleep(50);
    }
  }

  static <T> List<T> all(ExecutorService pool, List<Callable<T>> tasks) throws Exception {
    List<T> out = new ArrayList<>();
    for (Future<T> f : pool.invokeAll(tasks, 5, TimeUnit.MINUTES)) {
      out.add(f.get());
    }
    return out;
  }

  @Test
  void conversationsKeepTheirContextWorkerWhicheverFrontendServesThem() throws Exception {
    List<AutoCloseable> open = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    EtcdProcess etcd = EtcdProcess.start();
    try {
      Path config = dir.resolve("frontends.yaml");
      Files.writeString(config, """
          hostname: 127.0.0.1
          port: 8000
          disagg_cluster:
            cluster_uri: %s
            cluster_name: multi
            minimal_instances: {context_servers: 3, generation_servers: 1}
          conversation_affinity_header_for_subagents: X-Dynamo-Parent-Session-ID
          context_servers: {router: {type: conversation}}
          generation_servers: {router: {type: round_robin}}
          affinity: {model: m, debug_headers: true, access_log: false, warm_up_requests: 0}
          """.formatted(etcd.uri()));
      List<WorkerProcess> frontends = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        WorkerProcess f = WorkerProcess.frontend("frontend-" + i, config);
        open.add(f);
        frontends.add(f);
      }
      WorkerProcess gen = WorkerProcess.start("gen-1", "--executor-json", EXECUTOR, "--server-role", "generation",
          "--disagg-cluster-uri", etcd.uri(), "--disagg-cluster-name", "multi");
      open.add(gen);
      for (int i = 0; i < 3; i++) {
        WorkerServer ctx = WorkerServer.start(EXECUTOR, WorkerSettings.defaults().withName("ctx-" + i),
            FrontendOptions.defaults().withAccessLog(AccessLog.none()), "t");
        open.add(ctx);
        ctx.joinCluster(WorkerCluster.of(etcd.uri(), ServerRole.CONTEXT).withName("multi"));
      }
      for (WorkerProcess f : frontends) {
        f.awaitReady(http, Duration.ofSeconds(90));
        awaitWorkers(f);
      }

      Map<Integer, Place> home = new ConcurrentHashMap<>();
      // first turns placed by two frontends at the same moment: one wins, the other adopts its choice
      List<Callable<Boolean>> races = new ArrayList<>();
      for (int c = 0; c < SIMULTANEOUS_FIRST_TURNS; c++) {
        int conversation = c;
        races.add(() -> {
          CyclicBarrier together = new CyclicBarrier(2);
          Callable<Place> a = () -> {
            together.await(30, TimeUnit.SECONDS);
            return turn(frontends.get(conversation % 3), conversation, 1);
          };
          Callable<Place> b = () -> {
            together.await(30, TimeUnit.SECONDS);
            return turn(frontends.get((conversation + 1) % 3), conversation, 1);
          };
          ExecutorService two = Executors.newFixedThreadPool(2);
          try {
            List<Future<Place>> both = two.invokeAll(List.of(a, b), 2, TimeUnit.MINUTES);
            Place pa = both.get(0).get();
            Place pb = both.get(1).get();
            assertEquals(pa, pb, "conversation " + conversation + ": both frontends agree on its first turn");
            home.put(conversation, pa);
          } finally {
            two.shutdownNow();
          }
          return true;
        });
      }
      all(pool, races);

      // every conversation, three turns, each to a random frontend
      List<Callable<Boolean>> conversations = new ArrayList<>();
      for (int c = 0; c < CONVERSATIONS; c++) {
        int conversation = c;
        Random random = new Random(1000 + c);
        conversations.add(() -> {
          for (int turn = 2; turn <= 4; turn++) {
            Place p = turn(frontends.get(random.nextInt(3)), conversation, turn);
            Place first = home.putIfAbsent(conversation, p);
            if (first != null) {
              assertEquals(first, p, "conversation " + conversation + " turn " + turn + " moved");
            }
          }
          if (conversation % 10 == 0) {
            assertEquals(home.get(conversation), subAgent(frontends.get(random.nextInt(3)), conversation),
                "a sub-agent of conversation " + conversation + " reaches its parent's worker and rank");
          }
          return true;
        });
      }
      all(pool, conversations);
      assertEquals(CONVERSATIONS, home.size());
      assertTrue(home.values().stream().map(Place::worker).distinct().count() > 1, "the conversations are spread");

      // one frontend dies; the others keep serving every conversation where it was
      frontends.get(0).kill();
      List<Callable<Boolean>> survivors = new ArrayList<>();
      for (int c = 0; c < CONVERSATIONS; c++) {
        int conversation = c;
        survivors.add(() -> {
          assertEquals(home.get(conversation), turn(frontends.get(1 + conversation % 2), conversation, 5),
              "conversation " + conversation + " after a frontend died");
          return true;
        });
      }
      all(pool, survivors);

      // a frontend started now knows every pin
      WorkerProcess late = WorkerProcess.frontend("frontend-3", config);
      open.add(late);
      late.awaitReady(http, Duration.ofSeconds(90));
      awaitWorkers(late);
      List<Callable<Boolean>> restarted = new ArrayList<>();
      for (int c = 0; c < CONVERSATIONS; c += 4) {
        int conversation = c;
        restarted.add(() -> {
          assertEquals(home.get(conversation), turn(late, conversation, 6), "conversation " + conversation
              + " on a frontend started after its first turns");
          return true;
        });
      }
      all(pool, restarted);
    } finally {
      pool.shutdownNow();
      for (int i = open.size() - 1; i >= 0; i--) {
        open.get(i).close();
      }
      etcd.close(); // last: the workers deregister from it
    }
  }
}
