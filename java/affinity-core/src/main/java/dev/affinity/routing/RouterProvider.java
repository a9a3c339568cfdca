package dev.affinity.routing;

/**
 * Plug-in point for routing policies: implementations are found with {@link java.util.ServiceLoader}
 * (list the class in {@code META-INF/services/dev.affinity.routing.RouterProvider}) and selected by
 * {@code router.type} in the YAML, with flat arguments like the built-in ones.
 */
public interface RouterProvider {
  /** The {@code router.type} this provider builds (lower case). */
  String type();

  /**
   * Builds a router. Read arguments through {@code args} and call {@link RouterArgs#done} so that
   * bad or unknown arguments are reported with their YAML location.
   */
  Router create(RouterContext context, RouterArgs args);
}
