package dev.affinity.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.affinity.config.ConfigSecrets;
import dev.affinity.config.DisaggConfig;
import dev.affinity.config.LoadedConfig;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.SharedStateSettings;
import dev.affinity.routing.RouterFactory;
import dev.affinity.server.http.FrontendRoutes;
import dev.affinity.server.shared.SharedKvEvents;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
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
 * image is the overlay's, started through the Dockerfile's entrypoint. NATS ({@code affinity.shared_state}): the
 * config's servers are the client Service of a StatefulSet with JetStream's store on a claim, probed on the
 * monitoring port's {@code /healthz}; the frontends authenticate with a token file from the Secret, the server takes
 * the same Secret key from its environment, and a real nats-server running the rendered configuration accepts the
 * frontends' shared state (and refuses a client without the token).
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
    LoadedConfig loaded = ConfigLoader.parse(withMountedFiles(fe, config.content()), config.describe(), secrets);
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

    // affinity.shared_state: NATS, authenticated by a token file from the Secret, no token or password inline
    SharedStateSettings shared = loaded.config().affinity().sharedState()
        .orElseThrow(() -> new AssertionError("the recipe's frontends (two replicas) should share state through NATS"));
    Map<String, Object> block = map(at(yaml, "affinity", "shared_state"), "affinity.shared_state");
    for (String inline : List.of("token", "user", "password")) {
      assertFalse(block.containsKey(inline), "affinity.shared_state." + inline + " would put a NATS secret in the ConfigMap");
    }
    assertTrue(shared.tokenFile().isPresent(), "the frontends authenticate to NATS with token_file");
    Mounted token = fe.file(tokenFilePath(fe));
    assertEquals("Secret", token.kind(), "affinity.shared_state.token_file must come from a Secret");
    // read as the loader reads it: the file's text, surrounding whitespace stripped
    assertEquals(token.content().strip(), shared.token().orElseThrow());
    assertFalse(shared.toString().contains(shared.token().get()), "the settings' toString shows the NATS token");
    for (Map<String, Object> cm : objects.stream().filter(o -> "ConfigMap".equals(o.get("kind"))).toList()) {
      for (String value : data("ConfigMap", name(cm), "the test").values()) {
        assertFalse(value.contains(shared.token().get()), "ConfigMap " + name(cm) + " holds the NATS token");
      }
    }
  }

  // --- NATS -------------------------------------------------------------------------------------------------------

  @Test
  void theSharedStateServersAreTheNatsServiceOfAStatefulSetWithJetStreamOnAVolume() {
    Workload fe = frontend();
    SharedStateSettings shared = frontendConfig(fe).affinity().sharedState().orElseThrow();
    Workload nats = nats();
    assertEquals("StatefulSet", nats.object().get("kind"), "NATS keeps JetStream's store: a StatefulSet");
    assertTrue(String.valueOf(nats.container().get("image")).matches("nats:\\d+\\.\\d+\\.\\d+(-[a-z0-9]+)?"),
        "the official nats image with a pinned version: " + nats.container().get("image"));
    for (String server : shared.servers()) {
      URI uri = URI.create(server);
      assertEquals("nats", uri.getScheme(), server);
      Map<String, Object> service = one("Service", o -> name(o).equals(uri.getHost()));
      assertTrue(nats.selectedBy(map(at(service, "spec", "selector"), "selector")), "Service " + uri.getHost()
          + " must select the NATS pods");
      assertNotEquals("None", at(service, "spec", "clusterIP"), "the clients' Service is not the headless one");
      assertEquals(natsPort(nats, "port", 4222), servicePort(nats, service, uri.getPort()),
          "Service " + uri.getHost() + " port " + uri.getPort() + " must reach the server's client port");
    }
    // the StatefulSet's headless Service: the client and monitoring ports
    Map<String, Object> headless = one("Service", o -> name(o).equals(at(nats.object(), "spec", "serviceName")));
    assertEquals("None", at(headless, "spec", "clusterIP"), "the StatefulSet's serviceName must be a headless Service");
    assertTrue(nats.selectedBy(map(at(headless, "spec", "selector"), "selector")));
    assertEquals(natsPort(nats, "port", 4222), servicePort(nats, headless, 4222));
    assertEquals(natsPort(nats, "http_port", 8222), servicePort(nats, headless, 8222));

    // JetStream on, its store on the StatefulSet's claim
    String conf = natsConfig(nats).content();
    Matcher store = Pattern.compile("(?s)jetstream\\s*\\{[^}]*store_dir:\\s*(\\S+)").matcher(conf);
    assertTrue(store.find(), "nats.conf must enable JetStream with a store_dir: " + conf);
    String dir = store.group(1).replaceAll("^[\"']|[\"']$", "");
    String volume = list(nats.container().get("volumeMounts"), "volumeMounts").stream().map(m -> map(m, "volumeMount"))
        .filter(m -> (dir + "/").startsWith(String.valueOf(m.get("mountPath")).replaceAll("/+$", "") + "/"))
        .map(m -> String.valueOf(m.get("name"))).findFirst()
        .orElseThrow(() -> new AssertionError("JetStream's store_dir " + dir + " is under no volume mount"));
    Map<String, Object> claim = list(at(nats.object(), "spec", "volumeClaimTemplates"), "volumeClaimTemplates").stream()
        .map(c -> map(c, "volumeClaimTemplate")).filter(c -> volume.equals(name(c))).findFirst()
        .orElseThrow(() -> new AssertionError("JetStream's store " + dir + " is not on a PersistentVolumeClaim"));
    assertNotNull(at(claim, "spec", "resources", "requests", "storage"), "the claim requests no storage");
  }

  @Test
  void natsProbesAskTheMonitoringPortsHealthzWithJetStream() {
    Workload nats = nats();
    int monitor = natsPort(nats, "http_port", 8222);
    for (String which : List.of("readinessProbe", "livenessProbe", "startupProbe")) {
      Map<String, Object> get = map(nats.probe(which).get("httpGet"), which + " httpGet");
      assertEquals(monitor, nats.portNumber(get.get("port")), which + " must ask the monitoring port");
      assertTrue(String.valueOf(get.get("path")).startsWith("/healthz"), which + ": " + get.get("path"));
    }
    assertEquals("/healthz?js-enabled-only=true", map(nats.probe("readinessProbe").get("httpGet"), "httpGet").get("path"),
        "ready once JetStream is enabled");
  }

  /**
   * The NATS server takes its token from the container's environment ({@code authorization { token: $VAR }}, which
   * nats-server resolves from the environment when the file does not define it), filled from the Secret key that
   * the frontends mount as their {@code token_file}: one key, so the two cannot drift apart, and no token in a
   * ConfigMap.
   */
  @Test
  void theNatsServersTokenIsTheSecretKeyTheFrontendsTokenFileMounts() {
    Workload fe = frontend();
    Mounted token = fe.file(tokenFilePath(fe));
    Workload nats = nats();
    String conf = natsConfig(nats).content();
    Matcher auth = Pattern.compile("(?s)authorization\\s*[:=]?\\s*\\{[^}]*?\\btoken\\s*[:=]\\s*\\$(\\w+)").matcher(conf);
    assertTrue(auth.find(), "nats.conf should authenticate clients with authorization { token: $VAR }: " + conf);
    String var = auth.group(1);
    assertFalse(Pattern.compile("(?m)^\\s*" + var + "\\s*[:=]").matcher(conf).find(),
        "nats.conf defines " + var + " itself, so the server would not take it from the environment");
    Map<String, Object> env = list(nats.container().getOrDefault("env", List.of()), "env").stream().map(e -> map(e, "env"))
        .filter(e -> var.equals(e.get("name"))).findFirst()
        .orElseThrow(() -> new AssertionError(nats.describe() + ": nats.conf's $" + var + " is not in the container's env"));
    Object ref = at(env, "valueFrom", "secretKeyRef");
    assertNotNull(ref, nats.describe() + ": env " + var + " must come from a secretKeyRef, not a value in the manifest");
    assertEquals(token.object(), map(ref, "secretKeyRef").get("name"), nats.describe() + ": env " + var
        + " must come from the Secret the frontends' token_file is mounted from");
    assertEquals(token.key(), map(ref, "secretKeyRef").get("key"), nats.describe() + ": env " + var
        + " must be the Secret key the frontends' token_file is");
    assertFalse(conf.contains(token.content().strip()), "nats.conf holds the NATS token");
  }

  /**
   * The rendered NATS configuration, run by a real nats-server (the recipe's files at the recipe's relative places,
   * its env as the kubelet fills it, Secret keys included; ports and store moved to this machine), accepts the
   * frontends' token file from the Secret: the shared state starts on it as {@code serve} starts it (its stream and
   * drain bucket created), and a client without the token, or with another, is refused.
   */
  @Test
  void theFrontendsTokenFileOpensTheSharedStateOnTheRecipesNatsServer() throws Exception {
    Workload fe = frontend();
    DisaggConfig config = frontendConfig(fe);
    SharedStateSettings shared = config.affinity().sharedState().orElseThrow();
    assertTrue(shared.tokenFile().isPresent(), "the frontends authenticate to NATS with token_file");
    Workload nats = nats();
    Mounted conf = natsConfig(nats);
    String confPath = natsConfigPath(nats);
    // every file the server's configuration includes, at its path in the container, mapped under tmp
    Path root = tmp.resolve("nats-root");
    // JetStream's store moved here (nats-server refuses -sd beside a store_dir)
    write(root, confPath, conf.content().replaceFirst("(store_dir:\\s*)\\S+", "$1\"" + tmp.resolve("store") + "\""));
    Matcher include = Pattern.compile("(?m)^\\s*include\\s+[\"']?([^\"'\\s]+)").matcher(conf.content());
    while (include.find()) {
      String path = Path.of(confPath).getParent().resolve(include.group(1)).normalize().toString();
      write(root, path, nats.file(path).content());
    }
    int port = freePort();
    int monitor = freePort();
    ProcessBuilder pb = new ProcessBuilder(natsServer(), "--config", root.resolve(confPath.substring(1)).toString(),
        "-a", "127.0.0.1", "-p", String.valueOf(port), "-m", String.valueOf(monitor))
        .redirectErrorStream(true).redirectOutput(tmp.resolve("nats.log").toFile());
    // the container's env (nats.conf refers to it: server_name: $POD_NAME, token: $NATS_TOKEN) as the kubelet fills
    // it: fieldRefs with samples, secretKeyRefs with the Secret's bytes as they are (a trailing newline included)
    pb.environment().keySet().removeIf(k -> k.startsWith("NATS_") || k.equals("POD_NAME"));
    for (Object e : list(nats.container().getOrDefault("env", List.of()), "env")) {
      Map<String, Object> var = map(e, "env");
      Object secret = at(var, "valueFrom", "secretKeyRef");
      Object value = var.get("value") != null ? var.get("value")
          : at(var, "valueFrom", "fieldRef", "fieldPath") != null
              ? FIELD_SAMPLES.get(String.valueOf(at(var, "valueFrom", "fieldRef", "fieldPath")))
          : secret != null ? data("Secret", (String) map(secret, "secretKeyRef").get("name"), nats.describe())
              .get((String) map(secret, "secretKeyRef").get("key")) : null;
      assertNotNull(value, nats.describe() + ": env " + var.get("name")
          + " is neither a value, nor a known fieldRef, nor a key of a rendered Secret");
      pb.environment().put((String) var.get("name"), String.valueOf(value));
    }
    Process server = pb.start();
    try {
      awaitHealthz(server, monitor);
      // the frontend's settings as loaded (the token read from its token_file), the server moved to this machine
      SharedStateSettings local = new SharedStateSettings(List.of("nats://127.0.0.1:" + port), shared.token(),
          shared.tokenFile(), shared.user(), shared.password(), shared.passwordFile(), shared.credsFile(),
          shared.tlsCaFile(), shared.eventRetentionSeconds(), shared.drainLeaseSeconds());
      try (SharedKvEvents events = SharedKvEvents.start(local,
          config.disaggCluster().map(DisaggConfig.DisaggClusterConfig::clusterName).orElse(""),
          config.internalRequestAuthKey())) {
        assertNotNull(events);
      }
      SharedStateSettings anonymous = SharedStateSettings.of("nats://127.0.0.1:" + port);
      assertThrows(IOException.class, () -> SharedKvEvents.start(anonymous, "affinity", Optional.empty()).close(),
          "the recipe's NATS server must refuse a client without the token");
      SharedStateSettings wrong = new SharedStateSettings(List.of("nats://127.0.0.1:" + port),
          Optional.of(shared.token().orElseThrow() + "-not"), Optional.empty(), Optional.empty(), Optional.empty(),
          Optional.empty(), Optional.empty(), Optional.empty(), shared.eventRetentionSeconds(), shared.drainLeaseSeconds());
      assertThrows(IOException.class, () -> SharedKvEvents.start(wrong, "affinity", Optional.empty()).close(),
          "the recipe's NATS server must refuse a client with another token");
    } finally {
      server.destroy();
      if (!server.waitFor(10, TimeUnit.SECONDS)) {
        server.destroyForcibly();
      }
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
      // a worker that publishes its own KV events does so to the frontends' NATS, with their token
      if (cmd.nats != null) {
        SharedStateSettings shared = config.affinity().sharedState().orElseThrow(
            () -> new AssertionError(where + ": --nats without affinity.shared_state in the frontends' config"));
        assertEquals(shared.servers(), cmd.nats, where + ": --nats");
        assertEquals(cluster.clusterName(), cmd.clusterName, where + ": the stream is the cluster's");
        if (cmd.natsTokenFile != null) {
          cmd.natsTokenFile = copy(w.file(cmd.natsTokenFile.toString()));
        }
        assertEquals(shared.token(), cmd.natsSettings().token(), where + ": the worker's NATS token is not the frontends'");
      }
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
    return ConfigLoader.parse(withMountedFiles(fe, config.content()), config.describe(), secretsOf(fe)).config();
  }

  /**
   * The config's YAML with the files {@code affinity.shared_state} names (token_file, password_file, creds_file,
   * tls_ca_file: paths in the container, which the loader checks exist and reads) replaced by copies of what the
   * container mounts there.
   */
  private static String withMountedFiles(Workload fe, String yaml) {
    Map<String, Object> doc = map(new Yaml(new SafeConstructor(new LoaderOptions())).load(yaml), "config");
    if (!(at(doc, "affinity", "shared_state") instanceof Map<?, ?> shared)) {
      return yaml;
    }
    String out = yaml;
    for (String key : List.of("token_file", "password_file", "creds_file", "tls_ca_file")) {
      if (shared.get(key) instanceof String path) {
        assertTrue(path.startsWith("/"), "affinity.shared_state." + key + " should be the absolute path of a mounted file: "
            + path);
        try {
          Path copy = Files.createTempFile("k8s-" + key, "");
          copy.toFile().deleteOnExit();
          Files.writeString(copy, fe.file(path).content());
          out = out.replace(path, copy.toString());
        } catch (IOException e) {
          throw new AssertionError(e);
        }
      }
    }
    return out;
  }

  /** The path {@code affinity.shared_state.token_file} names in the frontend's config (a file in the container). */
  private static String tokenFilePath(Workload fe) {
    Mounted config = fe.file(parse(ServeCommand.class, fe.args()).config.toString());
    Map<String, Object> doc = map(new Yaml(new SafeConstructor(new LoaderOptions())).load(config.content()), "config");
    Object path = map(at(doc, "affinity", "shared_state"), "affinity.shared_state").get("token_file");
    assertTrue(path instanceof String, "the frontends should authenticate to NATS with affinity.shared_state.token_file");
    return (String) path;
  }

  /** The workload that runs the NATS server (the official image). */
  private static Workload nats() {
    List<Workload> n = workloads().stream().filter(w -> String.valueOf(w.container().get("image")).startsWith("nats:")).toList();
    assertEquals(1, n.size(), "one workload should run nats: " + n.stream().map(Workload::describe).toList());
    return n.get(0);
  }

  private static String natsConfigPath(Workload nats) {
    List<String> args = nats.args();
    int i = args.indexOf("--config");
    assertTrue(i >= 0 && i + 1 < args.size(), nats.describe() + ": nats-server must run with --config FILE: " + args);
    return args.get(i + 1);
  }

  private static Mounted natsConfig(Workload nats) {
    Mounted conf = nats.file(natsConfigPath(nats));
    assertEquals("ConfigMap", conf.kind(), "nats.conf should come from a ConfigMap");
    return conf;
  }

  /** A top-level port setting of nats.conf ({@code port}, {@code http_port}), which must be a container port. */
  private static int natsPort(Workload nats, String key, int fallback) {
    Matcher m = Pattern.compile("(?m)^\\s*" + key + "\\s*[:=]\\s*(\\d+)").matcher(natsConfig(nats).content());
    int port = m.find() ? Integer.parseInt(m.group(1)) : fallback;
    assertTrue(nats.containerPorts().containsValue(port), nats.describe() + ": nats.conf's " + key + " " + port
        + " is no container port of " + nats.containerPorts());
    return port;
  }

  /** The container port that a Service's {@code port} reaches. */
  private static int servicePort(Workload w, Map<String, Object> service, int port) {
    Object target = list(at(service, "spec", "ports"), "ports").stream().map(p -> map(p, "port"))
        .filter(p -> Objects.equals(p.get("port"), port)).findFirst()
        .orElseThrow(() -> new AssertionError("Service " + name(service) + " has no port " + port))
        .getOrDefault("targetPort", port);
    return w.portNumber(target);
  }

  private static void write(Path root, String absolute, String content) throws IOException {
    Path p = root.resolve(absolute.substring(1));
    Files.createDirectories(p.getParent());
    Files.writeString(p, content);
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** $NATS_BIN, else nats-server on the PATH or in /usr/sbin: the test needs it and fails without it. */
  private static String natsServer() {
    String env = System.getenv("NATS_BIN");
    if (env != null && !env.isBlank()) {
      return env;
    }
    List<String> dirs = new ArrayList<>(List.of(System.getenv().getOrDefault("PATH", "/usr/bin").split(File.pathSeparator)));
    dirs.add("/usr/sbin");
    for (String dir : dirs) {
      if (Files.isExecutable(Path.of(dir, "nats-server"))) {
        return Path.of(dir, "nats-server").toString();
      }
    }
    return fail("nats-server is not installed: KubernetesManifestTest runs the recipe's NATS configuration. Install "
        + "Debian's nats-server (scripts/test does), or point NATS_BIN at the binary");
  }

  private void awaitHealthz(Process server, int monitor) throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      assertTrue(server.isAlive(), "nats-server refused the recipe's configuration:\n" + Files.readString(tmp.resolve("nats.log")));
      try {
        if (http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + monitor + "/healthz?js-enabled-only=true"))
            .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
          return;
        }
      } catch (IOException e) {
        // not yet
      }
      Thread.sleep(50);
    }
    fail("nats-server did not become healthy:\n" + Files.readString(tmp.resolve("nats.log")));
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
