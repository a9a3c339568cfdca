import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * Writes the release tarball's NOTICE (scripts/package): every third-party jar of lib/ with its Maven coordinates,
 * name, home page and licence(s), read from the Maven metadata in the local repository the build resolved from.
 * A lib/ jar is matched to the repository's file of the same name and the same bytes; its licences are those of its
 * pom or, when the pom has none, of the nearest parent pom that has some (Maven's inheritance). A jar with no licence
 * anywhere fails the run, unless the checked OVERRIDES file (tab-separated {@code group:artifact}, licence name, URL,
 * where it is stated) names it: the tarball is not built with a NOTICE that leaves one out.
 *
 * <p>Usage: {@code java scripts/lib/Notice.java LIB_DIR LOCAL_REPO VERSION RUNTIME_DESCRIPTION OVERRIDES OUT_FILE}
 */
public final class Notice {
  private record Coordinates(String group, String artifact, String version) {
    String path() {
      return group.replace('.', '/') + "/" + artifact + "/" + version + "/" + artifact + "-" + version + ".pom";
    }

    @Override
    public String toString() {
      return group + ":" + artifact + ":" + version;
    }
  }

  private record License(String name, String url, String note) {
    License(String name, String url) {
      this(name, url, "");
    }
  }

  private record Entry(String jar, Coordinates coordinates, String name, String url, List<License> licenses) {}

  private Notice() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 6) {
      System.err.println("usage: java Notice.java LIB_DIR LOCAL_REPO VERSION RUNTIME_DESCRIPTION OVERRIDES OUT_FILE");
      System.exit(2);
    }
    Map<String, License> overrides = overrides(Path.of(args[4]));
    Path lib = Path.of(args[0]);
    Path repo = Path.of(args[1]);
    Map<String, List<Path>> repoJars = indexJars(repo);
    List<Entry> entries = new ArrayList<>();
    List<String> problems = new ArrayList<>();
    List<Path> jars;
    try (Stream<Path> s = Files.list(lib)) {
      jars = s.filter(p -> p.toString().endsWith(".jar")).sorted().toList();
    }
    for (Path jar : jars) {
      String file = jar.getFileName().toString();
      if (file.startsWith("affinity-")) {
        continue;  // the project's own, under LICENSE
      }
      Optional<Path> inRepo = sameBytes(jar, repoJars.getOrDefault(file, List.of()));
      if (inRepo.isEmpty()) {
        problems.add(file + ": no file with these bytes in " + repo);
        continue;
      }
      Coordinates c = coordinatesOf(repo, inRepo.get());
      Path pom = repo.resolve(c.path());
      if (!Files.isRegularFile(pom)) {
        problems.add(file + ": no pom " + pom);
        continue;
      }
      Element project = parse(pom);
      List<License> licenses = licensesOf(repo, project, new ArrayList<>());
      if (licenses.isEmpty()) {
        licenses = manifestLicense(jar);
      }
      if (licenses.isEmpty() && overrides.containsKey(c.group() + ":" + c.artifact())) {
        licenses = List.of(overrides.get(c.group() + ":" + c.artifact()));
      }
      if (licenses.isEmpty()) {
        problems.add(file + " (" + c + "): no licence in its pom, its parents or its manifest");
        continue;
      }
      entries.add(new Entry(file, c, text(project, "name"), text(project, "url"), licenses));
    }
    if (!problems.isEmpty()) {
      problems.forEach(p -> System.err.println("notice: " + p));
      System.exit(1);
    }
    StringBuilder out = new StringBuilder();
    out.append("Affinity ").append(args[2]).append('\n')
        .append("Licensed under the Apache License, Version 2.0 (LICENSE).\n\n")
        .append("This distribution bundles the following third-party software, each under its own licence.\n\n")
        .append("runtime/: ").append(args[3])
        .append(", GNU General Public License, version 2, with the Classpath Exception (runtime/legal/)\n\n")
        .append("lib/ (").append(entries.size()).append(" jars):\n\n");
    for (Entry e : entries) {
      out.append(e.coordinates()).append(" (lib/").append(e.jar()).append(")\n");
      if (!e.name().isEmpty() || !e.url().isEmpty()) {
        out.append("  ").append(e.name().isEmpty() ? e.coordinates().artifact() : e.name());
        if (!e.url().isEmpty()) {
          out.append(" <").append(e.url()).append('>');
        }
        out.append('\n');
      }
      for (License l : e.licenses()) {
        out.append("  License: ").append(l.name().isEmpty() ? l.url() : l.name());
        if (!l.url().isEmpty() && !l.name().isEmpty()) {
          out.append(" <").append(l.url()).append('>');
        }
        if (!l.note().isEmpty()) {
          out.append(" (").append(l.note()).append(')');
        }
        out.append('\n');
      }
      out.append('\n');
    }
    Files.writeString(Path.of(args[5]), out.toString(), StandardCharsets.UTF_8);
  }

  private static Map<String, License> overrides(Path file) throws IOException {
    Map<String, License> out = new HashMap<>();
    for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      String[] f = line.split("\t");
      if (f.length != 4) {
        throw new IllegalArgumentException(file + ": want 4 tab-separated fields: " + line);
      }
      out.put(f[0], new License(f[1], f[2], f[3]));
    }
    return out;
  }

  private static Map<String, List<Path>> indexJars(Path repo) throws IOException {
    Map<String, List<Path>> byName = new HashMap<>();
    try (Stream<Path> s = Files.walk(repo)) {
      s.filter(p -> p.toString().endsWith(".jar") && Files.isRegularFile(p))
          .forEach(p -> byName.computeIfAbsent(p.getFileName().toString(), k -> new ArrayList<>()).add(p));
    }
    return byName;
  }

  private static Optional<Path> sameBytes(Path jar, List<Path> candidates) throws IOException {
    String digest = sha256(jar);
    for (Path c : candidates) {
      if (Files.size(c) == Files.size(jar) && sha256(c).equals(digest)) {
        return Optional.of(c);
      }
    }
    return Optional.empty();
  }

  private static String sha256(Path p) throws IOException {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** repo/g/r/o/u/p/artifact/version/file.jar: the coordinates from the layout. */
  private static Coordinates coordinatesOf(Path repo, Path jar) {
    Path rel = repo.relativize(jar);
    int n = rel.getNameCount();
    String version = rel.getName(n - 2).toString();
    String artifact = rel.getName(n - 3).toString();
    String group = rel.subpath(0, n - 3).toString().replace('/', '.');
    return new Coordinates(group, artifact, version);
  }

  private static List<License> licensesOf(Path repo, Element project, List<String> seen) throws Exception {
    List<License> out = new ArrayList<>();
    Element licenses = child(project, "licenses");
    if (licenses != null) {
      for (Node n = licenses.getFirstChild(); n != null; n = n.getNextSibling()) {
        if (n instanceof Element l && "license".equals(l.getTagName())) {
          out.add(new License(text(l, "name"), text(l, "url")));
        }
      }
    }
    if (!out.isEmpty()) {
      return out;
    }
    Element parent = child(project, "parent");
    if (parent == null) {
      return out;
    }
    Coordinates p = new Coordinates(text(parent, "groupId"), text(parent, "artifactId"), text(parent, "version"));
    Path pom = repo.resolve(p.path());
    if (seen.contains(p.toString()) || !Files.isRegularFile(pom)) {
      return out;
    }
    seen.add(p.toString());
    return licensesOf(repo, parse(pom), seen);
  }

  private static List<License> manifestLicense(Path jar) throws IOException {
    try (JarFile j = new JarFile(jar.toFile())) {
      String value = j.getManifest() == null ? null : j.getManifest().getMainAttributes().getValue("Bundle-License");
      return value == null || value.isBlank() ? List.of() : List.of(new License(value.trim(), ""));
    }
  }

  private static Element parse(Path pom) throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setNamespaceAware(false);
    f.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
    try (InputStream in = Files.newInputStream(pom)) {
      Document d = f.newDocumentBuilder().parse(in);
      return d.getDocumentElement();
    }
  }

  private static Element child(Element e, String tag) {
    for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element c && tag.equals(c.getTagName())) {
        return c;
      }
    }
    return null;
  }

  private static String text(Element e, String tag) {
    Element c = child(e, tag);
    String value = c == null ? "" : c.getTextContent().trim().replaceAll("\\s+", " ");
    return value.contains("${") ? "" : value;  // an unresolved property says nothing
  }
}
