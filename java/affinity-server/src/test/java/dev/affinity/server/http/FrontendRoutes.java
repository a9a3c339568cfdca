package dev.affinity.server.http;

import java.util.Optional;

/**
 * The frontend's route table ({@link Endpoint}, package-private) for tests in other packages: what a path is
 * served as, by the frontend and by worker mode, which runs the same HTTP server.
 */
public final class FrontendRoutes {
  /** A route: the one method it accepts, and whether the API keys guard it. */
  public record Route(String path, String method, boolean authenticated) {}

  private FrontendRoutes() {}

  /** The route at {@code path} (exact match), or empty. */
  public static Optional<Route> of(String path) {
    return Optional.ofNullable(Endpoint.of(path)).map(FrontendRoutes::route);
  }

  /** {@code /health}: 200 once the cluster can take requests, 503 before. */
  public static Route health() {
    return route(Endpoint.HEALTH);
  }

  private static Route route(Endpoint e) {
    return new Route(e.path, e.method.name(), e.authenticated);
  }
}
