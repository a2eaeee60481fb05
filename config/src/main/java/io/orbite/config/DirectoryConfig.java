package io.orbite.config;

import java.util.List;
import java.util.regex.Pattern;

/**
 * The peer directory (module {@code orbite-cluster}, {@code PeerDirectory.join}): what this engine
 * publishes under its {@link EngineConfig#name() name} in the cluster's replicated map, and how
 * firmly it writes and reads it. Used only when the engine joins a directory; the cluster itself
 * (seed nodes, bootstrap, failure detector) is configured in Pekko's HOCON. JSON section {@code
 * directory}.
 *
 * @param publish which named regions this engine publishes: region names, or the one element
 *     {@value #ALL} for every named region (unnamed regions are never published). Default <code>
 *     ["*"]</code>; empty publishes the engine without regions; at most {@value #MAX_PUBLISH}
 *     distinct names, each 1..{@value #MAX_REGION_NAME_LENGTH} characters of {@code
 *     [A-Za-z0-9._:/-]}; {@value #ALL} only alone.
 * @param readConsistency from how many replicas the directory reads the map again when an open by
 *     name met another incarnation than the one listed ({@code EPOCH_MISMATCH}): {@code "local"},
 *     {@code "majority"} or {@code "all"}. Lookups ({@code members}, {@code region}, {@code open})
 *     read this node's replica. Default {@value #DEFAULT_READ_CONSISTENCY}: with a majority write,
 *     the read meets every publish that completed.
 * @param writeConsistency to how many replicas the directory writes this engine's entry (and its
 *     removal) before it counts as done: {@code "local"}, {@code "majority"} or {@code "all"}.
 *     Default {@value #DEFAULT_WRITE_CONSISTENCY}: a publish survives the loss of a minority, and a
 *     majority read sees it.
 * @param consistencyTimeoutMillis how long a majority or all read or write waits for the other
 *     replicas, in milliseconds; past it a write stays local and spreads by gossip, and a read
 *     fails. Default {@value #DEFAULT_CONSISTENCY_TIMEOUT_MILLIS} (5 s); range {@value
 *     #MIN_CONSISTENCY_TIMEOUT_MILLIS}..{@value #MAX_CONSISTENCY_TIMEOUT_MILLIS} (1 min).
 * @param refreshMillis how often the directory compares what the engine has (readiness, named
 *     regions, open or closed) with what it published, and publishes again or withdraws, in
 *     milliseconds. Default {@value #DEFAULT_REFRESH_MILLIS} (1 s); range {@value
 *     #MIN_REFRESH_MILLIS}..{@value #MAX_REFRESH_MILLIS} (1 min).
 */
public record DirectoryConfig(
    List<String> publish,
    String readConsistency,
    String writeConsistency,
    int consistencyTimeoutMillis,
    int refreshMillis) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "directory";

  /** The {@link #publish()} element that stands for every named region. */
  public static final String ALL = "*";

  /** Default {@link #publish()}: every named region. */
  public static final List<String> DEFAULT_PUBLISH = List.of(ALL);

  /** Most names {@link #publish()} may hold. */
  public static final int MAX_PUBLISH = 256;

  /** Longest region name {@link #publish()} may hold, in characters (as the engine's names). */
  public static final int MAX_REGION_NAME_LENGTH = 128;

  /** What a region name in {@link #publish()} looks like, as a regular expression. */
  public static final String REGION_NAME_REGEX =
      "[A-Za-z0-9._:/-]{1," + MAX_REGION_NAME_LENGTH + "}";

  /**
   * The accepted consistency levels, for {@link #readConsistency()} and {@link
   * #writeConsistency()}.
   */
  public static final List<String> CONSISTENCIES = List.of("local", "majority", "all");

  /** Default {@link #readConsistency()}. */
  public static final String DEFAULT_READ_CONSISTENCY = "majority";

  /** Default {@link #writeConsistency()}. */
  public static final String DEFAULT_WRITE_CONSISTENCY = "majority";

  /** Default {@link #consistencyTimeoutMillis()}: 5 s. */
  public static final int DEFAULT_CONSISTENCY_TIMEOUT_MILLIS = 5_000;

  /** Smallest accepted {@link #consistencyTimeoutMillis()}. */
  public static final int MIN_CONSISTENCY_TIMEOUT_MILLIS = 100;

  /** Largest accepted {@link #consistencyTimeoutMillis()}: 1 min. */
  public static final int MAX_CONSISTENCY_TIMEOUT_MILLIS = 60_000;

  /** Default {@link #refreshMillis()}: 1 s. */
  public static final int DEFAULT_REFRESH_MILLIS = 1_000;

  /** Smallest accepted {@link #refreshMillis()}. */
  public static final int MIN_REFRESH_MILLIS = 50;

  /** Largest accepted {@link #refreshMillis()}: 1 min. */
  public static final int MAX_REFRESH_MILLIS = 60_000;

  private static final Pattern REGION_NAME = Pattern.compile(REGION_NAME_REGEX);

  /**
   * Validates every component and copies {@link #publish()}.
   *
   * @throws ConfigException naming {@code directory.publish} (a null or too long list, or {@value
   *     #ALL} beside names), {@code directory.publish[<i>]} for the first bad or repeated name, or
   *     {@code directory.<key>} for the first other invalid component
   */
  public DirectoryConfig {
    String path = SECTION + ".publish";
    Checks.requireNonNull(path, publish);
    if (publish.size() > MAX_PUBLISH) {
      throw new ConfigException(
          path, "must hold at most " + MAX_PUBLISH + " region names, got " + publish.size());
    }
    for (int i = 0; i < publish.size(); i++) {
      String name = publish.get(i);
      String namePath = path + "[" + i + "]";
      Checks.requireNonNull(namePath, name);
      if (ALL.equals(name)) {
        if (publish.size() > 1) {
          throw new ConfigException(
              namePath,
              "\"*\" (every named region) must be the only element, got it beside "
                  + (publish.size() - 1)
                  + " other(s)");
        }
      } else if (!REGION_NAME.matcher(name).matches()) {
        throw new ConfigException(
            namePath,
            "must be \"*\" or a region name of 1.."
                + MAX_REGION_NAME_LENGTH
                + " characters of [A-Za-z0-9._:/-], got "
                + Checks.quote(name));
      }
      int first = publish.indexOf(name);
      if (first < i) {
        throw new ConfigException(
            namePath,
            "must differ from every other region name, got "
                + Checks.quote(name)
                + " again (first at "
                + path
                + "["
                + first
                + "])");
      }
    }
    publish = List.copyOf(publish);
    requireConsistency(SECTION + ".readConsistency", readConsistency);
    requireConsistency(SECTION + ".writeConsistency", writeConsistency);
    Checks.requireRange(
        SECTION + ".consistencyTimeoutMillis",
        consistencyTimeoutMillis,
        MIN_CONSISTENCY_TIMEOUT_MILLIS,
        MAX_CONSISTENCY_TIMEOUT_MILLIS);
    Checks.requireRange(
        SECTION + ".refreshMillis", refreshMillis, MIN_REFRESH_MILLIS, MAX_REFRESH_MILLIS);
  }

  private static void requireConsistency(String path, String value) {
    Checks.requireNonNull(path, value);
    if (!CONSISTENCIES.contains(value)) {
      throw new ConfigException(
          path, "must be one of \"local\", \"majority\", \"all\", got " + Checks.quote(value));
    }
  }

  /**
   * All components at their defaults.
   *
   * @return the settings an absent or empty {@code directory} section reads as: every named region
   *     published, majority reads and writes with a 5 s timeout, refreshed every second
   */
  public static DirectoryConfig defaults() {
    return new DirectoryConfig(
        DEFAULT_PUBLISH,
        DEFAULT_READ_CONSISTENCY,
        DEFAULT_WRITE_CONSISTENCY,
        DEFAULT_CONSISTENCY_TIMEOUT_MILLIS,
        DEFAULT_REFRESH_MILLIS);
  }

  /**
   * Whether {@link #publish()} lets a region of this name be published.
   *
   * @param regionName a named region's name
   * @return true when {@link #publish()} is <code>["*"]</code> or lists the name
   */
  public boolean publishes(String regionName) {
    return publish.equals(DEFAULT_PUBLISH) || publish.contains(regionName);
  }

  /**
   * A copy with {@link #publish()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param publish region names, or <code>["*"]</code> for every named region
   * @return a new {@code DirectoryConfig}; this one is unchanged
   * @throws ConfigException naming {@code directory.publish} or {@code directory.publish[<i>]} as
   *     the constructor does
   */
  public DirectoryConfig withPublish(List<String> publish) {
    return new DirectoryConfig(
        publish, readConsistency, writeConsistency, consistencyTimeoutMillis, refreshMillis);
  }

  /**
   * A copy with {@link #readConsistency()} replaced and every other component kept; the new value
   * is checked as by the constructor.
   *
   * @param readConsistency {@code "local"}, {@code "majority"} or {@code "all"}
   * @return a new {@code DirectoryConfig}; this one is unchanged
   * @throws ConfigException naming {@code directory.readConsistency} for any other value
   */
  public DirectoryConfig withReadConsistency(String readConsistency) {
    return new DirectoryConfig(
        publish, readConsistency, writeConsistency, consistencyTimeoutMillis, refreshMillis);
  }

  /**
   * A copy with {@link #writeConsistency()} replaced and every other component kept; the new value
   * is checked as by the constructor.
   *
   * @param writeConsistency {@code "local"}, {@code "majority"} or {@code "all"}
   * @return a new {@code DirectoryConfig}; this one is unchanged
   * @throws ConfigException naming {@code directory.writeConsistency} for any other value
   */
  public DirectoryConfig withWriteConsistency(String writeConsistency) {
    return new DirectoryConfig(
        publish, readConsistency, writeConsistency, consistencyTimeoutMillis, refreshMillis);
  }

  /**
   * A copy with {@link #consistencyTimeoutMillis()} replaced and every other component kept; the
   * new value is checked as by the constructor.
   *
   * @param consistencyTimeoutMillis how long a majority or all read or write waits, in milliseconds
   * @return a new {@code DirectoryConfig}; this one is unchanged
   * @throws ConfigException naming {@code directory.consistencyTimeoutMillis} if it is outside
   *     {@value #MIN_CONSISTENCY_TIMEOUT_MILLIS}..{@value #MAX_CONSISTENCY_TIMEOUT_MILLIS}
   */
  public DirectoryConfig withConsistencyTimeoutMillis(int consistencyTimeoutMillis) {
    return new DirectoryConfig(
        publish, readConsistency, writeConsistency, consistencyTimeoutMillis, refreshMillis);
  }

  /**
   * A copy with {@link #refreshMillis()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param refreshMillis how often the directory compares the engine with what it published, in
   *     milliseconds
   * @return a new {@code DirectoryConfig}; this one is unchanged
   * @throws ConfigException naming {@code directory.refreshMillis} if it is outside {@value
   *     #MIN_REFRESH_MILLIS}..{@value #MAX_REFRESH_MILLIS}
   */
  public DirectoryConfig withRefreshMillis(int refreshMillis) {
    return new DirectoryConfig(
        publish, readConsistency, writeConsistency, consistencyTimeoutMillis, refreshMillis);
  }

  static DirectoryConfig read(ConfigReader r) {
    return new DirectoryConfig(
        r.stringListValue("publish", DEFAULT_PUBLISH),
        r.stringValue("readConsistency", DEFAULT_READ_CONSISTENCY),
        r.stringValue("writeConsistency", DEFAULT_WRITE_CONSISTENCY),
        r.intValue(
            "consistencyTimeoutMillis",
            DEFAULT_CONSISTENCY_TIMEOUT_MILLIS,
            MIN_CONSISTENCY_TIMEOUT_MILLIS,
            MAX_CONSISTENCY_TIMEOUT_MILLIS),
        r.intValue(
            "refreshMillis", DEFAULT_REFRESH_MILLIS, MIN_REFRESH_MILLIS, MAX_REFRESH_MILLIS));
  }
}
