package dev.affinity.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.affinity.config.ConfigSecrets;
import dev.affinity.config.DisaggConfig;
import dev.affinity.config.LoadedConfig;
import dev.affinity.config.ConfigLoader;
import dev.affinity.routing.RouterFactory;
import dev.affinity.server.http.FrontendRoutes;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import picocli.CommandLine;

/**
 * The Kubernetes recipe (deploy/kubernetes) against the code: renders the example overlay with
 * {@code kubectl kustomize} (offline) and checks every reference the manifests make to Affinity. The ConfigMap's
 * YAML loads through {@link ConfigLoader} with the keys of the mounted Secret read as {@code serve} reads them;
 * the frontend's and workers' args parse with the real picocli commands; probe paths are routes of the
 * frontend's table, unauthenticated GETs; ports agree between the config, the containers and the Services; every
 * Secret and ConfigMap key a volume or env names exists; the grace periods exceed the drain times in code; the
 * workers join the config's {@code disagg_cluster} with enough replicas for its {@code minimal_instances}; the
 * image is the overlay's, started through the Dockerfile's entrypoint.
 */
class KubernetesManifestTest {
  private static final Path ROOT = Path.of(System.getProperty("affinity.root", "../..")).toAbsolutePath().normalize();
  private static final Path OVERLAY = ROOT.resolve("deploy/kubernetes/overlays/example");
  private static final Path DOCKERFILE = ROOT.resolve("deploy/container/Dockerfile");
  /** What the downward API fills in for the fieldRefs workers use ({@code $(POD_IP)}, {@code $(POD_NAME)}). */
  private static final Map<String, String> FIELD_SAMPLES = Map.of("status.podIP", "10.1.2.3",
      "metadata.name", "pod-0", "metadata.namespace", "affinity");

  private static List<Map<String, Object>> objects;

  @TempDir
  Path tmp;

  @BeforeAll
  static void render() throws Exception {
    String kubectl = kubectl();
    Process p = new ProcessBuilder(kubectl, "kustomize", OVERLAY.toString()).redirectErrorStream(false).start();
    byte[] out = p.getInputStream().readAllBytes();
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "kubectl kustomize did not finish");
    assertEquals(0, p.exitValue(), "kubectl kustomize " + OVERLAY + " failed: " + err);
    objects = new ArrayList<>();
    for (Object doc : new Yaml(new SafeConstructor(new LoaderOptions())).loadAll(new String(out, StandardCharsets.UTF_8))) {
      if (doc != null) {
        objects.add(map(doc, "a rendered object"));
      }
    }
    assertFalse(objects.isEmpty(), "kubectl kustomize rendered nothing");
  }

  /** $KUBECTL, else kubectl on the PATH: the test needs it and fails without it (never skips). */
  private static String kubectl() {
    String env = System.getenv("KUBECTL");
    if (env != null && !env.isBlank()) {
      return env;
    }
    for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(File.pathSeparator)) {
      if (Files.isExecutable(Path.of(dir, "kubectl"))) {
        return Path.of(dir, "kubectl").toString();
      }
    }
    return fail("kubectl is not installed: KubernetesManifestTest renders deploy/kubernetes/overlays/example with "
        + "`kubectl kustomize` (offline). Install Debian's kubernetes-client (scripts/test does, through "
        + "affinity_ensure_tools in scripts/lib/setup.sh), or point KUBECTL at the binary");
  }

  // --- the frontend ---------------------------------------------------------------------------------------------

  @Test
  void theConfigMapsYamlLoadsThroughTheRealLoaderWithTheMountedSecretsAndHoldsNoKey() throws Exception {
    Workload fe = frontend();
    ServeCommand serve = parse(ServeCommand.class, fe.args());
    assertNotNull(serve.config, "the frontend must run serve --config FILE (the ConfigMap's YAML)");
    assertNotNull(serve.secrets.authKeyFile, "the frontend must take internal_request_auth_key from a file");
    assertNotNull(serve.secrets.apiKeysFile, "the frontend must take affinity.api_keys from a file");
    Mounted config = fe.file(serve.config.toString());
    assertEquals("ConfigMap", config.kind(), serve.config + " must come from a ConfigMap");
    Mounted authKey = fe.file(serve.secrets.authKeyFile.toString());
    Mounted apiKeys = fe.file(serve.secrets.apiKeysFile.toString());
    assertEquals("Secret", authKey.kind(), serve.secrets.authKeyFile + " must come from a Secret");
    assertEquals("Secret", apiKeys.kind(), serve.secrets.apiKeysFile + " must come from a Secret");

    // read as serve reads them: the same option class, over copies of the mounted files
    SecretFileOptions files = new SecretFileOptions();
    files.authKeyFile = copy(authKey);
    files.apiKeysFile = copy(apiKeys);
    ConfigSecrets secrets = files.read();
    LoadedConfig loaded = ConfigLoader.parse(config.content(), config.describe(), secrets);
    assertEquals(List.of(), loaded.warnings(), "the recipe's config should start without warnings");
    assertEquals(List.of(), new RouterFactory().check(loaded.config()), "serve would refuse the routers");
    assertEquals(secrets.internalRequestAuthKey().orElseThrow().value(),
        loaded.config().internalRequestAuthKey().orElseThrow());
    assertEquals(secrets.apiKeys().orElseThrow().value(), loaded.config().affinity().apiKeys());

    Map<String, Object> yaml = map(new Yaml(new SafeConstructor(new LoaderOptions())).load(config.content()), "config");
    assertFalse(yaml.containsKey("internal_request_auth_key"), "the ConfigMap must not hold the key in clear");
    assertFalse(yaml.get("affinity") instanceof Map<?, ?> a && a.containsKey("api_keys"),
        "the ConfigMap must not hold the API keys in clear");
    List<String> keys = new ArrayList<>(secrets.apiKeys().orElseThrow().value());
    keys.add(secrets.internalRequestAuthKey().orElseThrow().value());
    for (String key : keys) {
      assertFalse(config.content().contains(key), "the ConfigMap's YAML contains a key of the Secret");
    }
  }

  @Test
  void theFrontendsProbesAreUnauthenticatedGetRoutesAndReadinessIsHealth() {
    Workload fe = frontend();
    FrontendRoutes.Route ready = fe.probeRoute("readinessProbe");
    assertEquals(FrontendRoutes.health(), ready,
        "readiness must be /health: the route that answers 503 until minimal_instances workers are routed to");
    FrontendRoutes.Route live = fe.probeRoute("livenessProbe");
    assertNotEquals(FrontendRoutes.health().path(), live.path(),
        "liveness must not be /health: a frontend waiting for workers (503) would be restarted");
    FrontendRoutes.Route startup = fe.probeRoute("startupProbe");
    assertNotEquals(FrontendRoutes.health().path(), startup.path(), "the startup probe waits for the port, not workers");
    Map<String, Object> probe = fe.probe("startupProbe");
    int allowed = ((Number) probe.get("periodSeconds")).intValue() * ((Number) probe.get("failureThreshold")).intValue();
    assertTrue(allowed >= 60, "the frontend listens only after its warm-up (affinity.warm_up_requests): the startup"
        + " probe must allow at least a minute, allows " + allowed + " s");
  }

  @Test
  void theConfigsPortIsTheContainerPortAndTheServicesTargetPort() throws Exception {
    Workload fe = frontend();
    DisaggConfig config = frontendConfig(fe);
    ServeCommand serve = parse(ServeCommand.class, fe.args());
    int port = serve.port != null ? serve.port : config.port();
    assertEquals("0.0.0.0", serve.host != null ? serve.host : config.hostname(),
        "the frontend must listen on every address of its pod");
    assertTrue(fe.containerPorts().containsValue(port),
        "the frontend listens on " + port + " but declares ports " + fe.containerPorts());
    assertEquals(port, fe.portNumber(map(fe.probe("readinessProbe").get("httpGet"), "httpGet").get("port")));

    Map<String, Object> service = serviceSelecting(fe);
    List<Object> ports = list(at(service, "spec", "ports"), "ports");
    assertFalse(ports.isEmpty(), "the Service has no port");
    for (Object p : ports) {
      Object target = map(p, "port").getOrDefault("targetPort", map(p, "port").get("port"));
      assertEquals(port, fe.portNumber(target), "Service " + name(service) + " targets " + target);
    }
  }

  @Test
  void theGracePeriodExceedsPreStopAndTheFrontendsDrain() {
    Workload fe = frontend();
    long grace = fe.gracePeriodSeconds();
    long preStop = fe.preStopSleepSeconds();
    long drain = ServeCommand.DRAIN_TIMEOUT.toSeconds();
    assertTrue(grace > preStop + drain, "terminationGracePeriodSeconds " + grace + " must exceed the preStop sleep ("
        + preStop + " s) plus the frontend's drain (ServeCommand.DRAIN_TIMEOUT, " + drain + " s)");
  }

  @Test
  void theDisruptionBudgetKeepsAFrontendAndSelectsThem() {
    Workload fe = frontend();
    Map<String, Object> pdb = one("PodDisruptionBudget", o -> fe.selectedBy(map(at(o, "spec", "selector", "matchLabels"),
        "matchLabels")));
    Object min = at(pdb, "spec", "minAvailable");
    assertTrue(min instanceof Integer m && m >= 1 && m < fe.replicas(),
        "PodDisruptionBudget " + name(pdb) + ": minAvailable " + min + " must keep a frontend and allow an eviction of "
            + fe.replicas());
  }

  // --- etcd and the workers -------------------------------------------------------------------------------------

  @Test
  void theClusterUriNamesTheEtcdServiceAndItsPort() throws Exception {
    DisaggConfig.DisaggClusterConfig cluster = frontendConfig(frontend()).disaggCluster()
        .orElseThrow(() -> new AssertionError("the recipe's config needs a disagg_cluster"));
    assertFalse(cluster.isHttp(), "several frontends and workers in other pods need etcd, not the HTTP storage");
    for (String endpoint : cluster.etcdEndpoints()) {
      String host = endpoint.substring(0, endpoint.lastIndexOf(':'));
      int port = Integer.parseInt(endpoint.substring(endpoint.lastIndexOf(':') + 1));
      Map<String, Object> service = one("Service", o -> name(o).equals(host));
      Map<String, Object> selector = map(at(service, "spec", "selector"), "selector");
      Workload etcd = workloads().stream().filter(w -> w.selectedBy(selector)).findFirst()
          .orElseThrow(() -> new AssertionError("Service " + host + " selects no pod"));
      Object target = list(at(service, "spec", "ports"), "ports").stream().map(p -> map(p, "port"))
          .filter(p -> Objects.equals(p.get("port"), port)).findFirst()
          .orElseThrow(() -> new AssertionError("Service " + host + " has no port " + port))
          .getOrDefault("targetPort", port);
      int containerPort = etcd.portNumber(target);
      List<String> argv = new ArrayList<>(list(etcd.container().getOrDefault("command", List.of()), "command").stream()
          .map(String::valueOf).toList());
      argv.addAll(etcd.args());
      assertTrue(argv.stream().anyMatch(a -> a.startsWith("--listen-client-urls=") && a.endsWith(":" + containerPort)),
          "etcd must listen for clients on " + containerPort + ": " + argv);
    }
  }

  @Test
  void theWorkersArgsParseAndJoinTheConfigsCluster() throws Exception {
    Workload fe = frontend();
    DisaggConfig config = frontendConfig(fe);
    DisaggConfig.DisaggClusterConfig cluster = config.disaggCluster().orElseThrow();
    String frontendKey = SecretFileOptions.authKey(copy(fe.file(parse(ServeCommand.class, fe.args()).secrets.authKeyFile.toString())));
    Map<String, Integer> replicasByRole = new HashMap<>();
    List<Workload> workers = workloads().stream().filter(w -> !w.args().isEmpty() && w.args().get(0).equals("worker")).toList();
    assertFalse(workers.isEmpty(), "the recipe runs no worker");
    for (Workload w : workers) {
      List<String> args = w.expandedArgs();
      WorkerCommand cmd = parse(WorkerCommand.class, args);
      String where = w.describe() + " " + args;
      assertEquals(cluster.clusterUri(), cmd.clusterUri, where + ": --disagg-cluster-uri");
      assertEquals(cluster.clusterName(), cmd.clusterName, where + ": --disagg-cluster-name");
      assertEquals(cluster.heartbeatIntervalSec(), cmd.heartbeatSec, where + ": --heartbeat-interval-sec");
      assertEquals(cluster.inactiveTimeoutSec(), cmd.inactiveSec, where + ": --inactive-timeout-sec");
      assertNotNull(cmd.serverRole, where + ": --server-role");
      String role = dev.affinity.server.cluster.ServerRole.parse(cmd.serverRole).name();
      replicasByRole.merge(role, w.replicas(), Integer::sum);
      assertEquals(FIELD_SAMPLES.get("status.podIP"), cmd.host,
          where + ": --host must be the pod's IP (status.podIP): it is the address the worker registers");
      assertTrue(w.containerPorts().containsValue(cmd.port), where + ": listens on " + cmd.port + ", declares "
          + w.containerPorts());
      assertEquals(cmd.port, w.portNumber(map(w.probe("readinessProbe").get("httpGet"), "httpGet").get("port")));
      assertEquals(FrontendRoutes.health(), w.probeRoute("readinessProbe"),
          where + ": readiness is /health (503 while the worker drains)");
      w.probeRoute("livenessProbe");
      assertTrue(w.gracePeriodSeconds() > cmd.drainSec + w.preStopSleepSecondsOrZero(), where
          + ": terminationGracePeriodSeconds " + w.gracePeriodSeconds() + " must exceed --drain-timeout-sec " + cmd.drainSec);
      // the key, read as the worker reads it, is the frontend's
      if (cmd.authKeyFile != null) {
        cmd.authKeyFile = copy(w.file(cmd.authKeyFile.toString()));
      }
      assertEquals(frontendKey, cmd.authKey(), where + ": the worker's internal_request_auth_key differs from the frontend's");
    }
    assertTrue(replicasByRole.getOrDefault("CONTEXT", 0) >= cluster.minimalContextInstances(),
        "fewer context workers " + replicasByRole + " than minimal_instances.context_servers: the frontends never get ready");
    assertTrue(replicasByRole.getOrDefault("GENERATION", 0) >= cluster.minimalGenerationInstances(),
        "fewer generation workers " + replicasByRole + " than minimal_instances.generation_servers");
  }

  // --- references, image ----------------------------------------------------------------------------------------

  @Test
  void everySecretAndConfigMapKeyAVolumeOrEnvNamesExists() {
    int checked = 0;
    for (Workload w : workloads()) {
      for (Object v : list(w.podSpec().getOrDefault("volumes", List.of()), "volumes")) {
        Map<String, Object> vol = map(v, "volume");
        for (String kind : List.of("configMap", "secret")) {
          if (vol.get(kind) instanceof Map<?, ?> src) {
            Map<String, Object> s = map(src, kind);
            String ref = (String) s.get(kind.equals("secret") ? "secretName" : "name");
            Map<String, String> data = data(kind.equals("secret") ? "Secret" : "ConfigMap", ref, w.describe());
            for (Object item : list(s.getOrDefault("items", List.of()), "items")) {
              String key = (String) map(item, "item").get("key");
              assertTrue(data.containsKey(key), w.describe() + " volume " + vol.get("name") + ": " + ref + " has no key " + key);
              checked++;
            }
          }
        }
      }
      for (Map<String, Object> c : w.containers()) {
        for (Object e : list(c.getOrDefault("env", List.of()), "env")) {
          Object from = map(e, "env").get("valueFrom");
          if (from instanceof Map<?, ?> f) {
            for (String kind : List.of("secretKeyRef", "configMapKeyRef")) {
              if (f.get(kind) instanceof Map<?, ?> ref) {
                String key = (String) ref.get("key");
                assertTrue(data(kind.startsWith("secret") ? "Secret" : "ConfigMap", (String) ref.get("name"), w.describe())
                    .containsKey(key), w.describe() + " env " + map(e, "env").get("name") + ": no key " + key);
                checked++;
              }
            }
          }
        }
      }
    }
    assertTrue(checked >= 3, "the recipe should reference its config and both secret keys");
  }

  @Test
  void affinityContainersRunTheOverlaysImageThroughTheDockerfilesEntrypoint() throws Exception {
    Map<String, Object> kustomization = map(new Yaml(new SafeConstructor(new LoaderOptions()))
        .load(Files.readString(OVERLAY.resolve("kustomization.yaml"))), "kustomization");
    Map<String, Object> image = map(list(kustomization.get("images"), "images").get(0), "image");
    String expected = image.get("newName") + ":" + image.get("newTag");
    String dockerfile = Files.readString(DOCKERFILE);
    Matcher entry = Pattern.compile("(?m)^ENTRYPOINT \\[\"([^\"]+)\"\\]").matcher(dockerfile);
    assertTrue(entry.find(), "the Dockerfile has no exec-form ENTRYPOINT");
    assertTrue(entry.group(1).endsWith("/bin/affinity"), "the entrypoint must be the tarball's bin/affinity: " + entry.group(1));
    assertTrue(dockerfile.contains("dist/affinity-${VERSION}-linux-x86_64.tar.gz"),
        "the Dockerfile must build from scripts/package's tarball");
    Matcher user = Pattern.compile("(?m)^USER (\\d+)").matcher(dockerfile);
    assertTrue(user.find(), "the Dockerfile must set a numeric USER (runAsNonRoot checks it)");
    CommandLine cli = AffinityCli.commandLine();
    int affinityWorkloads = 0;
    for (Workload w : workloads()) {
      for (Map<String, Object> c : w.containers()) {
        if (!expected.equals(c.get("image"))) {
          assertFalse(String.valueOf(c.get("image")).startsWith("affinity"),
              w.describe() + ": image " + c.get("image") + " is the base's placeholder, not the overlay's " + expected);
          continue;
        }
        affinityWorkloads++;
        assertFalse(c.containsKey("command"), w.describe() + ": command would replace the image's entrypoint");
        List<String> args = w.args();
        assertFalse(args.isEmpty(), w.describe() + ": no subcommand");
        assertTrue(cli.getSubcommands().containsKey(args.get(0)), w.describe() + ": " + args.get(0) + " is not a subcommand");
        assertEquals(Integer.parseInt(user.group(1)), at(w.podSpec(), "securityContext", "runAsUser"),
            w.describe() + ": runAsUser differs from the image's USER");
      }
    }
    assertTrue(affinityWorkloads >= 3, "the frontend and both worker roles run the overlay's image " + expected);
  }

  // --- helpers --------------------------------------------------------------------------------------------------

  /** A file a container sees: its content, and the ConfigMap or Secret key it comes from. */
  private record Mounted(String kind, String object, String key, String content) {
    String describe() {
      return kind + " " + object + " key " + key;
    }
  }

  /** A Deployment or StatefulSet and its first container. */
  private record Workload(Map<String, Object> object) {
    String describe() {
      return object.get("kind") + " " + name(object);
    }

    Map<String, Object> podSpec() {
      return map(at(object, "spec", "template", "spec"), "pod spec");
    }

    Map<String, Object> labels() {
      return map(at(object, "spec", "template", "metadata", "labels"), "labels");
    }

    int replicas() {
      return (Integer) map(object.get("spec"), "spec").getOrDefault("replicas", 1);
    }

    List<Map<String, Object>> containers() {
      return list(podSpec().get("containers"), "containers").stream().map(c -> map(c, "container")).toList();
    }

    Map<String, Object> container() {
      return containers().get(0);
    }

    List<String> args() {
      return list(container().getOrDefault("args", List.of()), "args").stream().map(String::valueOf).toList();
    }

    /** The args with {@code $(VAR)} expanded as the kubelet does, from the env's fieldRefs and values. */
    List<String> expandedArgs() {
      Map<String, String> env = new HashMap<>();
      for (Object e : list(container().getOrDefault("env", List.of()), "env")) {
        Map<String, Object> var = map(e, "env");
        if (var.get("value") != null) {
          env.put((String) var.get("name"), String.valueOf(var.get("value")));
        } else if (at(var, "valueFrom") instanceof Map<?, ?> from && from.get("fieldRef") instanceof Map<?, ?> ref) {
          env.put((String) var.get("name"), FIELD_SAMPLES.get(String.valueOf(ref.get("fieldPath"))));
        }
      }
      Pattern var = Pattern.compile("\\$\\(([A-Za-z_][A-Za-z0-9_]*)\\)");
      return args().stream().map(a -> var.matcher(a).replaceAll(m -> {
        String v = env.get(m.group(1));
        assertNotNull(v, describe() + ": $(" + m.group(1) + ") is not in the container's env");
        return Matcher.quoteReplacement(v);
      })).toList();
    }

    Map<String, Integer> containerPorts() {
      Map<String, Integer> out = new LinkedHashMap<>();
      for (Object p : list(container().getOrDefault("ports", List.of()), "ports")) {
        Map<String, Object> port = map(p, "port");
        out.put(String.valueOf(port.getOrDefault("name", port.get("containerPort"))), (Integer) port.get("containerPort"));
      }
      return out;
    }

    /** A port as a Service or probe names it (a number, or a container port's name). */
    int portNumber(Object port) {
      if (port instanceof Integer n) {
        return n;
      }
      Integer n = containerPorts().get(String.valueOf(port));
      assertNotNull(n, describe() + ": no container port named " + port);
      return n;
    }

    Map<String, Object> probe(String which) {
      Object probe = container().get(which);
      assertNotNull(probe, describe() + " has no " + which);
      return map(probe, which);
    }

    /** The frontend route an httpGet probe asks for; it must be an unauthenticated GET (a probe sends no key). */
    FrontendRoutes.Route probeRoute(String which) {
      Object get = probe(which).get("httpGet");
      assertNotNull(get, describe() + ": " + which + " must be an httpGet probe");
      String path = (String) map(get, "httpGet").get("path");
      FrontendRoutes.Route route = FrontendRoutes.of(path)
          .orElseThrow(() -> new AssertionError(describe() + ": " + which + " path " + path + " is no route of the frontend"));
      assertEquals("GET", route.method(), describe() + ": " + path + " does not answer GET");
      assertFalse(route.authenticated(), describe() + ": " + path + " needs an API key, which a probe does not send");
      return route;
    }

    long gracePeriodSeconds() {
      Object g = podSpec().get("terminationGracePeriodSeconds");
      assertNotNull(g, describe() + ": terminationGracePeriodSeconds is not set (Kubernetes' default is 30 s)");
      return ((Number) g).longValue();
    }

    long preStopSleepSeconds() {
      Object cmd = at(container(), "lifecycle", "preStop", "exec", "command");
      assertNotNull(cmd, describe() + ": no preStop exec hook (the pod would drain while still in the endpoints)");
      List<Object> c = list(cmd, "preStop command");
      assertEquals(2, c.size(), describe() + ": preStop should be [sleep, SECONDS]: " + c);
      assertEquals("sleep", c.get(0), describe() + ": preStop should be [sleep, SECONDS]: " + c);
      return Long.parseLong(String.valueOf(c.get(1)));
    }

    long preStopSleepSecondsOrZero() {
      return at(container(), "lifecycle", "preStop") == null ? 0 : preStopSleepSeconds();
    }

    boolean selectedBy(Map<String, Object> selector) {
      return selector != null && !selector.isEmpty() && labels().entrySet().containsAll(selector.entrySet());
    }

    /** The file at {@code path} in the container: a key of a ConfigMap or Secret volume mounted above it. */
    Mounted file(String path) {
      for (Object m : list(container().getOrDefault("volumeMounts", List.of()), "volumeMounts")) {
        Map<String, Object> mount = map(m, "volumeMount");
        String dir = ((String) mount.get("mountPath")).replaceAll("/+$", "");
        if (!path.startsWith(dir + "/")) {
          continue;
        }
        String rel = path.substring(dir.length() + 1);
        Map<String, Object> volume = list(podSpec().get("volumes"), "volumes").stream().map(v -> map(v, "volume"))
            .filter(v -> v.get("name").equals(mount.get("name"))).findFirst()
            .orElseThrow(() -> new AssertionError(describe() + ": no volume " + mount.get("name")));
        String kind = volume.containsKey("secret") ? "Secret" : volume.containsKey("configMap") ? "ConfigMap" : null;
        assertNotNull(kind, describe() + ": " + path + " is in volume " + volume.get("name") + ", neither a Secret nor a ConfigMap");
        Map<String, Object> src = map(volume.get(kind.equals("Secret") ? "secret" : "configMap"), "volume source");
        String ref = (String) src.get(kind.equals("Secret") ? "secretName" : "name");
        String key = rel;
        if (src.get("items") != null) {
          key = list(src.get("items"), "items").stream().map(i -> map(i, "item")).filter(i -> rel.equals(i.get("path")))
              .map(i -> (String) i.get("key")).findFirst()
              .orElseThrow(() -> new AssertionError(describe() + ": volume " + volume.get("name") + " maps no key to " + rel));
        }
        String content = data(kind, ref, describe()).get(key);
        assertNotNull(content, describe() + ": " + kind + " " + ref + " has no key " + key + " (mounted as " + path + ")");
        return new Mounted(kind, ref, key, content);
      }
      return fail(describe() + ": " + path + " is under no volume mount of its container");
    }
  }

  private Path copy(Mounted file) throws IOException {
    Path p = Files.createTempFile(tmp, file.key(), "");
    Files.writeString(p, file.content());
    return p;
  }

  private static DisaggConfig frontendConfig(Workload fe) {
    Mounted config = fe.file(parse(ServeCommand.class, fe.args()).config.toString());
    return ConfigLoader.parse(config.content(), config.describe(), secretsOf(fe)).config();
  }

  /** The frontend's secrets as serve reads them (the file semantics are SecretFileOptions'). */
  private static ConfigSecrets secretsOf(Workload fe) {
    ServeCommand serve = parse(ServeCommand.class, fe.args());
    try {
      Path dir = Files.createTempDirectory("k8s-secrets");
      SecretFileOptions files = new SecretFileOptions();
      files.authKeyFile = serve.secrets.authKeyFile == null ? null
          : Files.writeString(dir.resolve("auth"), fe.file(serve.secrets.authKeyFile.toString()).content());
      files.apiKeysFile = serve.secrets.apiKeysFile == null ? null
          : Files.writeString(dir.resolve("keys"), fe.file(serve.secrets.apiKeysFile.toString()).content());
      return files.read();
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  /**
   * The subcommand's options from a container's args ({@code SUBCOMMAND OPTIONS...} after the image's
   * entrypoint), parsed by the real command line ({@link AffinityCli}) without running it.
   */
  private static <T> T parse(Class<T> type, List<String> args) {
    CommandLine.ParseResult result = null;
    try {
      result = AffinityCli.commandLine().parseArgs(args.toArray(String[]::new));
    } catch (CommandLine.ParameterException e) {
      fail("affinity refuses " + args + ": " + e.getMessage());
    }
    assertTrue(result.hasSubcommand(), "no subcommand in " + args);
    Object command = result.subcommand().commandSpec().userObject();
    assertTrue(type.isInstance(command), args + " runs " + command.getClass().getSimpleName() + ", not " + type.getSimpleName());
    return type.cast(command);
  }

  private static List<Workload> workloads() {
    return objects.stream().filter(o -> List.of("Deployment", "StatefulSet").contains(o.get("kind"))).map(Workload::new).toList();
  }

  /** The workload that runs {@code affinity serve}. */
  private static Workload frontend() {
    List<Workload> fe = workloads().stream().filter(w -> !w.args().isEmpty() && w.args().get(0).equals("serve")).toList();
    assertEquals(1, fe.size(), "one workload should run serve: " + fe.stream().map(Workload::describe).toList());
    return fe.get(0);
  }

  private static Map<String, Object> serviceSelecting(Workload w) {
    return one("Service", o -> o.get("spec") instanceof Map<?, ?> s && s.get("selector") instanceof Map<?, ?> sel
        && w.selectedBy(map(sel, "selector")));
  }

  private static Map<String, Object> one(String kind, java.util.function.Predicate<Map<String, Object>> which) {
    List<Map<String, Object>> found = objects.stream().filter(o -> kind.equals(o.get("kind"))).filter(which).toList();
    assertEquals(1, found.size(), "expected one matching " + kind + ", found " + found.stream().map(KubernetesManifestTest::name).toList());
    return found.get(0);
  }

  /** A ConfigMap's or Secret's data, decoded. */
  private static Map<String, String> data(String kind, String name, String referrer) {
    Map<String, Object> o = objects.stream().filter(x -> kind.equals(x.get("kind")) && name.equals(name(x))).findFirst()
        .orElseThrow(() -> new AssertionError(referrer + " references " + kind + " " + name + ", which is not rendered"));
    Map<String, String> out = new LinkedHashMap<>();
    if (o.get("data") != null) {
      map(o.get("data"), "data").forEach((k, v) -> out.put(k, kind.equals("Secret")
          ? new String(Base64.getMimeDecoder().decode(String.valueOf(v)), StandardCharsets.UTF_8) : String.valueOf(v)));
    }
    if (o.get("stringData") != null) {
      map(o.get("stringData"), "stringData").forEach((k, v) -> out.put(k, String.valueOf(v)));
    }
    return out;
  }

  private static String name(Map<String, Object> o) {
    return String.valueOf(at(o, "metadata", "name"));
  }

  private static Object at(Map<String, Object> o, String... path) {
    Object cur = o;
    for (String p : path) {
      if (!(cur instanceof Map<?, ?> m)) {
        return null;
      }
      cur = m.get(p);
    }
    return cur;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> map(Object o, String what) {
    assertTrue(o instanceof Map<?, ?>, what + " should be a mapping: " + o);
    return (Map<String, Object>) o;
  }

  @SuppressWarnings("unchecked")
  private static List<Object> list(Object o, String what) {
    assertTrue(o instanceof List<?>, what + " should be a list: " + o);
    return (List<Object>) o;
  }
}
