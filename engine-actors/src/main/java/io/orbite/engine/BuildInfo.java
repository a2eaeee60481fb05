package io.orbite.engine;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

/**
 * What this engine was built from and runs on: the identity {@code ./orbite version}, the dashboard
 * and the {@code orbite_build_info} metric report. The build writes it (Maven resource filtering
 * and the git-commit-id plugin); a value the build could not learn (a build from a source archive
 * without {@code .git}) is {@code "unknown"}.
 *
 * @param version the engine's Maven version, for example {@code 0.1.0-SNAPSHOT}
 * @param commit the git commit the build was made from (40 hex digits), or {@code "unknown"}
 * @param dirty whether the working tree had uncommitted changes at build time
 * @param commitTime when that commit was made (ISO-8601, UTC), or {@code "unknown"}
 * @param buildTime when the build ran (ISO-8601, UTC), or {@code "unknown"}
 * @param buildJdk the JDK that compiled it (version and vendor)
 * @param runtimeJdk the JDK running it now (version and vendor)
 */
public record BuildInfo(
    String version,
    String commit,
    boolean dirty,
    String commitTime,
    String buildTime,
    String buildJdk,
    String runtimeJdk) {

  private static final String RESOURCE = "build.properties";
  private static final BuildInfo CURRENT = load();

  /**
   * This engine's identity.
   *
   * @return what the build recorded, with the JDK running it now
   */
  public static BuildInfo current() {
    return CURRENT;
  }

  /**
   * The commit's first 12 hex digits, with {@code -dirty} when the tree had changes.
   *
   * @return a short form for logs and labels, or {@code "unknown"}
   */
  public String shortCommit() {
    if (commit.equals("unknown")) {
      return commit;
    }
    return commit.substring(0, Math.min(12, commit.length())) + (dirty ? "-dirty" : "");
  }

  /**
   * The identity as ordered name-value pairs, as {@code ./orbite version --json} prints them.
   *
   * @return version, commit, dirty, commit_time, build_time, build_jdk, runtime_jdk
   */
  public Map<String, Object> asMap() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("version", version);
    m.put("commit", commit);
    m.put("dirty", dirty);
    m.put("commit_time", commitTime);
    m.put("build_time", buildTime);
    m.put("build_jdk", buildJdk);
    m.put("runtime_jdk", runtimeJdk);
    return m;
  }

  private static BuildInfo load() {
    Properties p = new Properties();
    try (InputStream in = BuildInfo.class.getResourceAsStream(RESOURCE)) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot read " + RESOURCE + " beside " + BuildInfo.class.getName(), e);
    }
    String runtime =
        Runtime.version() + " (" + System.getProperty("java.vendor", "unknown vendor") + ")";
    return new BuildInfo(
        value(p, "version"),
        value(p, "commit"),
        Boolean.parseBoolean(value(p, "dirty")),
        value(p, "commitTime"),
        value(p, "buildTime"),
        value(p, "buildJdk"),
        runtime);
  }

  /** A recorded value, or "unknown" when missing or left unfiltered ({@code ${...}}). */
  private static String value(Properties p, String key) {
    String v = p.getProperty(key);
    return v == null || v.isBlank() || v.contains("${") ? "unknown" : v.trim();
  }
}
