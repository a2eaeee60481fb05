package io.orbite.config;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Complete configuration of one OrbiTE engine: an immutable tree of validated records.
 *
 * <p>Build it with {@link #defaults()} and the {@code withXxx} copy methods, or load it from JSON
 * with {@link #fromJson(String)}, {@link #fromFile(Path)} or {@link #fromEnv()}. JSON keys are
 * exactly the record component names. Loading is strict: unknown keys, duplicate keys, wrong types,
 * out-of-range values, malformed or oversized documents are all rejected with a {@link
 * ConfigException} whose message starts with the path of the problem. Missing keys take their
 * defaults. Pekko's own settings (dispatchers and so on) are not part of this; they live in {@code
 * application.conf}.
 *
 * <p>Why this file is over 500 lines: a record has no copy syntax, so each section's {@code
 * withXxx} method names every component, one a line, and each is documented.
 *
 * @param name engine name shown in logs and metrics. Default {@value #DEFAULT_NAME}; 1..{@value
 *     #MAX_NAME_LENGTH} characters, each one of {@code A-Z a-z 0-9 . _ -}.
 * @param listen where the engine accepts peer connections. Default {@link ListenConfig#defaults()}.
 * @param tcp TCP transport settings. Default {@link TcpConfig#defaults()}.
 * @param budgets resource budgets. Default {@link BudgetConfig#defaults()}.
 * @param slicing how tasks are cut into slices. Default {@link SlicingConfig#defaults()}.
 * @param timeouts engine-wide time limits. Default {@link TimeoutConfig#defaults()}.
 * @param retry what the engine runs again on its own across transports (failover from SHM or RDMA
 *     to TCP). Default {@link RetryConfig#defaults()}.
 * @param merge request merging: adjacent tasks of one submission carried as one physical transfer.
 *     Default {@link MergeConfig#defaults()}.
 * @param shm same-host shared-memory transport settings. Default {@link ShmConfig#defaults()}.
 * @param file the file transport (file segments, io_uring lanes). Default {@link
 *     FileConfig#defaults()}.
 * @param rdma the RDMA transport (provider, rails, queue pairs), off by default and being built.
 *     Default {@link RdmaConfig#defaults()}.
 * @param notifications notifications between engines: the receiver's inbox, the bounds of tags and
 *     payloads, how long a sender waits for an answer. Default {@link
 *     NotificationConfig#defaults()}.
 * @param observability metrics (Prometheus) and the dashboard, both off by default. Default {@link
 *     ObservabilityConfig#defaults()}.
 * @param directory what this engine publishes in the peer directory of module {@code
 *     orbite-cluster} (under {@link #name()}) and how firmly; unused unless the engine joins one.
 *     Default {@link DirectoryConfig#defaults()}.
 * @param policies first-match transport policies for requests that let the engine choose their
 *     transport ({@code UNSPEC}); a JSON array of rules. Default {@link TransportPolicies#NONE}:
 *     the engine's own choice for every request.
 * @param security who may talk to this engine and how peers prove it. Default {@link
 *     SecurityConfig#defaults()}: authenticated when credentials are configured, and a listener
 *     that is not loopback-only refused without them.
 */
public record EngineConfig(
    String name,
    ListenConfig listen,
    TcpConfig tcp,
    BudgetConfig budgets,
    SlicingConfig slicing,
    TimeoutConfig timeouts,
    RetryConfig retry,
    MergeConfig merge,
    ShmConfig shm,
    FileConfig file,
    RdmaConfig rdma,
    NotificationConfig notifications,
    ObservabilityConfig observability,
    DirectoryConfig directory,
    TransportPolicies policies,
    SecurityConfig security) {

  /** Default {@link #name()}. */
  public static final String DEFAULT_NAME = "orbite";

  /** Shortest accepted {@link #name()}, in characters. */
  public static final int MIN_NAME_LENGTH = 1;

  /** Longest accepted {@link #name()}, in characters. */
  public static final int MAX_NAME_LENGTH = 64;

  /** What an accepted {@link #name()} looks like, as a regular expression. */
  public static final String NAME_REGEX =
      "[A-Za-z0-9._-]{" + MIN_NAME_LENGTH + "," + MAX_NAME_LENGTH + "}";

  /**
   * Environment variable read by {@link #fromEnv()}: inline JSON (starting with <code>{</code>) or
   * a file path.
   */
  public static final String ENV_VAR = "ORBITE_CONF";

  /** Largest accepted JSON document, in bytes of UTF-8: 1 MiB. */
  public static final int MAX_DOCUMENT_BYTES = 1024 * 1024;

  private static final Pattern NAME_PATTERN = Pattern.compile(NAME_REGEX);
  private static final byte[] UTF8_BOM = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};

  /**
   * Validates every component: {@link #name()} must match {@link #NAME_REGEX} and no section may be
   * {@code null} (each section validated its own keys when it was built); a policy's {@code
   * choose.laneMask} may only name lanes below {@code tcp.lanes}.
   *
   * @throws ConfigException naming {@code name}, the {@code null} section, or {@code
   *     policies[i].choose.laneMask} for a lane mask naming a lane at or above {@code tcp.lanes}
   */
  public EngineConfig {
    Checks.requireNonNull("name", name);
    if (!NAME_PATTERN.matcher(name).matches()) {
      throw new ConfigException(
          "name",
          "must be "
              + MIN_NAME_LENGTH
              + ".."
              + MAX_NAME_LENGTH
              + " characters of [A-Za-z0-9._-], got "
              + Checks.quote(name));
    }
    Checks.requireNonNull(ListenConfig.SECTION, listen);
    Checks.requireNonNull(TcpConfig.SECTION, tcp);
    Checks.requireNonNull(BudgetConfig.SECTION, budgets);
    Checks.requireNonNull(SlicingConfig.SECTION, slicing);
    Checks.requireNonNull(TimeoutConfig.SECTION, timeouts);
    Checks.requireNonNull(RetryConfig.SECTION, retry);
    Checks.requireNonNull(MergeConfig.SECTION, merge);
    Checks.requireNonNull(ShmConfig.SECTION, shm);
    Checks.requireNonNull(FileConfig.SECTION, file);
    Checks.requireNonNull(RdmaConfig.SECTION, rdma);
    Checks.requireNonNull(NotificationConfig.SECTION, notifications);
    Checks.requireNonNull(ObservabilityConfig.SECTION, observability);
    Checks.requireNonNull(DirectoryConfig.SECTION, directory);
    Checks.requireNonNull(TransportPolicies.SECTION, policies);
    Checks.requireNonNull(SecurityConfig.SECTION, security);
    // The one check across sections: a lane mask may only name lanes each peer gets.
    policies.checkLanes(tcp.lanes());
  }

  /**
   * Every setting at its default.
   *
   * @return the configuration the empty document <code>{}</code> reads as: name {@value
   *     #DEFAULT_NAME} and every section's {@code defaults()}
   */
  public static EngineConfig defaults() {
    return new EngineConfig(
        DEFAULT_NAME,
        ListenConfig.defaults(),
        TcpConfig.defaults(),
        BudgetConfig.defaults(),
        SlicingConfig.defaults(),
        TimeoutConfig.defaults(),
        RetryConfig.defaults(),
        MergeConfig.defaults(),
        ShmConfig.defaults(),
        FileConfig.defaults(),
        RdmaConfig.defaults(),
        NotificationConfig.defaults(),
        ObservabilityConfig.defaults(),
        DirectoryConfig.defaults(),
        TransportPolicies.NONE,
        SecurityConfig.defaults());
  }

  /**
   * A copy with {@link #name()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param name engine name shown in logs and metrics: {@value #MIN_NAME_LENGTH}..{@value
   *     #MAX_NAME_LENGTH} characters, each one of {@code A-Z a-z 0-9 . _ -}
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code name} if it is {@code null} or does not match {@link
   *     #NAME_REGEX}
   */
  public EngineConfig withName(String name) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #listen()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param listen where the engine accepts peer connections, already validated by {@link
   *     ListenConfig}'s constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code listen} if {@code listen} is {@code null}
   */
  public EngineConfig withListen(ListenConfig listen) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #tcp()} replaced and every other component kept; the new value is checked as
   * by the constructor.
   *
   * @param tcp TCP transport settings, already validated by {@link TcpConfig}'s constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code tcp} if {@code tcp} is {@code null}
   */
  public EngineConfig withTcp(TcpConfig tcp) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #budgets()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param budgets resource budgets, already validated by {@link BudgetConfig}'s constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code budgets} if {@code budgets} is {@code null}
   */
  public EngineConfig withBudgets(BudgetConfig budgets) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #slicing()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param slicing how tasks are cut into slices, already validated by {@link SlicingConfig}'s
   *     constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code slicing} if {@code slicing} is {@code null}
   */
  public EngineConfig withSlicing(SlicingConfig slicing) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #file()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param file file transport settings, already validated by {@link FileConfig}'s constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code file} if {@code file} is {@code null}
   */
  public EngineConfig withFile(FileConfig file) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #timeouts()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param timeouts engine-wide time limits, already validated by {@link TimeoutConfig}'s
   *     constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code timeouts} if {@code timeouts} is {@code null}
   */
  public EngineConfig withTimeouts(TimeoutConfig timeouts) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #retry()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param retry failover settings, already validated by {@link RetryConfig}'s constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code retry} if {@code retry} is {@code null}
   */
  public EngineConfig withRetry(RetryConfig retry) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #merge()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param merge request merging settings, already validated by {@link MergeConfig}'s constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code merge} if {@code merge} is {@code null}
   */
  public EngineConfig withMerge(MergeConfig merge) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #shm()} replaced and every other component kept; the new value is checked as
   * by the constructor.
   *
   * @param shm same-host shared-memory transport settings, already validated by {@link ShmConfig}'s
   *     constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code shm} if {@code shm} is {@code null}
   */
  public EngineConfig withShm(ShmConfig shm) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #rdma()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param rdma RDMA transport settings, already validated by {@link RdmaConfig}'s constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma} if {@code rdma} is {@code null}
   */
  public EngineConfig withRdma(RdmaConfig rdma) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #notifications()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param notifications notification settings, already validated by {@link NotificationConfig}'s
   *     constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code notifications} if {@code notifications} is {@code null}
   */
  public EngineConfig withNotifications(NotificationConfig notifications) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #observability()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param observability metrics and dashboard settings, already validated by {@link
   *     ObservabilityConfig}'s constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code observability} if {@code observability} is {@code null}
   */
  public EngineConfig withObservability(ObservabilityConfig observability) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #directory()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param directory peer directory settings, already validated by {@link DirectoryConfig}'s
   *     constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code directory} if {@code directory} is {@code null}
   */
  public EngineConfig withDirectory(DirectoryConfig directory) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #policies()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param policies transport policies, already checked by {@link TransportPolicies#of}
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code policies} if {@code policies} is {@code null}
   */
  public EngineConfig withPolicies(TransportPolicies policies) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * A copy with {@link #security()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param security security settings, already validated by {@link SecurityConfig}'s constructor
   * @return a new {@code EngineConfig}; this one is unchanged
   * @throws ConfigException naming {@code security} if {@code security} is {@code null}
   */
  public EngineConfig withSecurity(SecurityConfig security) {
    return new EngineConfig(
        name,
        listen,
        tcp,
        budgets,
        slicing,
        timeouts,
        retry,
        merge,
        shm,
        file,
        rdma,
        notifications,
        observability,
        directory,
        policies,
        security);
  }

  /**
   * Parses a JSON document. Missing keys take their defaults; everything else is checked strictly.
   *
   * @param json the whole document, at most {@value #MAX_DOCUMENT_BYTES} bytes when encoded as
   *     UTF-8
   * @return the configuration the document describes, with defaults for the keys it leaves out
   * @throws ConfigException if the document is rejected; its {@link ConfigException#path() path}
   *     names where
   */
  public static EngineConfig fromJson(String json) {
    Objects.requireNonNull(json, "json");
    ObjectNode document = ConfigJson.parseDocument(json);
    return read(ConfigReader.root(document, EngineConfig.class));
  }

  /**
   * Reads and parses a JSON file (UTF-8, an optional byte order mark is skipped). The size limit is
   * checked before the content is read. Messages about the content end with {@code (in <file>)}.
   *
   * @param file path of the JSON file, at most {@value #MAX_DOCUMENT_BYTES} bytes
   * @return the configuration the file describes, with defaults for the keys it leaves out
   * @throws ConfigException with path {@code $} naming the file if it is missing, a directory,
   *     unreadable, too large or not UTF-8; otherwise as {@link #fromJson(String)}
   */
  public static EngineConfig fromFile(Path file) {
    Objects.requireNonNull(file, "file");
    String json = readFile(file);
    try {
      return fromJson(json);
    } catch (ConfigException e) {
      throw new ConfigException(e.path(), e.detail() + " (in " + file + ")", e);
    }
  }

  /**
   * {@link #fromEnv(Map)} over {@link System#getenv()}.
   *
   * @return the configuration named by {@value #ENV_VAR} in the process environment, or {@link
   *     #defaults()} if it is unset or blank
   * @throws ConfigException as {@link #fromEnv(Map)}
   */
  public static EngineConfig fromEnv() {
    return fromEnv(System.getenv());
  }

  /**
   * Loads the configuration named by {@value #ENV_VAR} in {@code env}: unset or blank gives {@link
   * #defaults()}; a value whose trimmed form starts with <code>{</code> is an inline JSON document;
   * anything else is the path of a JSON file (surrounding whitespace is ignored). No other variable
   * is read.
   *
   * @param env environment variables, normally {@link System#getenv()}
   * @return {@link #defaults()}, or the configuration of the inline document or file the variable
   *     names
   * @throws ConfigException as {@link #fromJson(String)} or {@link #fromFile(Path)}; messages about
   *     an inline document end with {@code (in $ORBITE_CONF)}
   */
  public static EngineConfig fromEnv(Map<String, String> env) {
    Objects.requireNonNull(env, "env");
    String value = env.get(ENV_VAR);
    if (value == null || value.isBlank()) {
      return defaults();
    }
    String trimmed = value.strip();
    if (trimmed.startsWith("{")) {
      try {
        return fromJson(value);
      } catch (ConfigException e) {
        throw new ConfigException(e.path(), e.detail() + " (in $" + ENV_VAR + ")", e);
      }
    }
    Path file;
    try {
      file = Path.of(trimmed);
    } catch (InvalidPathException e) {
      throw new ConfigException(
          ConfigException.ROOT_PATH,
          ENV_VAR + " is neither inline JSON nor a valid file path: " + e.getMessage(),
          e);
    }
    return fromFile(file);
  }

  /**
   * This configuration as a pretty-printed JSON document that {@link #fromJson(String)} reads back
   * as equal.
   *
   * @return a JSON object with every key present, in record component order, nested sections as
   *     nested objects, indented by two spaces with {@code \n} line ends
   */
  public String toJson() {
    return ConfigJson.write(this);
  }

  static EngineConfig read(ConfigReader r) {
    return new EngineConfig(
        r.stringValue("name", DEFAULT_NAME),
        r.section(ListenConfig.SECTION, ListenConfig.class, ListenConfig::read),
        r.section(TcpConfig.SECTION, TcpConfig.class, TcpConfig::read),
        r.section(BudgetConfig.SECTION, BudgetConfig.class, BudgetConfig::read),
        r.section(SlicingConfig.SECTION, SlicingConfig.class, SlicingConfig::read),
        r.section(TimeoutConfig.SECTION, TimeoutConfig.class, TimeoutConfig::read),
        r.section(RetryConfig.SECTION, RetryConfig.class, RetryConfig::read),
        r.section(MergeConfig.SECTION, MergeConfig.class, MergeConfig::read),
        r.section(ShmConfig.SECTION, ShmConfig.class, ShmConfig::read),
        r.section(FileConfig.SECTION, FileConfig.class, FileConfig::read),
        r.section(RdmaConfig.SECTION, RdmaConfig.class, RdmaConfig::read),
        r.section(NotificationConfig.SECTION, NotificationConfig.class, NotificationConfig::read),
        r.section(
            ObservabilityConfig.SECTION, ObservabilityConfig.class, ObservabilityConfig::read),
        r.section(DirectoryConfig.SECTION, DirectoryConfig.class, DirectoryConfig::read),
        r.policiesValue(TransportPolicies.SECTION),
        r.section(SecurityConfig.SECTION, SecurityConfig.class, SecurityConfig::read));
  }

  private static String readFile(Path file) {
    if (Files.isDirectory(file)) {
      throw new ConfigException(
          ConfigException.ROOT_PATH, "config file " + file + " is a directory");
    }
    try {
      if (Files.isRegularFile(file)) {
        long size = Files.size(file);
        if (size > MAX_DOCUMENT_BYTES) {
          throw new ConfigException(
              ConfigException.ROOT_PATH, ConfigJson.tooLarge(size).detail() + " (in " + file + ")");
        }
      }
      byte[] bytes;
      try (InputStream in = Files.newInputStream(file)) {
        // Bounded even if the file grew after the size check, or is not a regular file (a pipe).
        bytes = in.readNBytes(MAX_DOCUMENT_BYTES + 1);
      }
      if (bytes.length > MAX_DOCUMENT_BYTES) {
        throw new ConfigException(
            ConfigException.ROOT_PATH, "document is over the 1 MiB limit (in " + file + ")");
      }
      return decodeUtf8(file, bytes);
    } catch (NoSuchFileException e) {
      throw new ConfigException(
          ConfigException.ROOT_PATH, "config file " + file + " does not exist", e);
    } catch (AccessDeniedException e) {
      throw new ConfigException(
          ConfigException.ROOT_PATH,
          "config file " + file + " cannot be read: permission denied",
          e);
    } catch (FileSystemException e) {
      String reason = e.getReason() != null ? e.getReason() : e.toString();
      throw new ConfigException(
          ConfigException.ROOT_PATH, "config file " + file + " cannot be read: " + reason, e);
    } catch (IOException e) {
      throw new ConfigException(
          ConfigException.ROOT_PATH, "config file " + file + " cannot be read: " + e, e);
    }
  }

  private static String decodeUtf8(Path file, byte[] bytes) {
    int start =
        bytes.length >= 3
                && bytes[0] == UTF8_BOM[0]
                && bytes[1] == UTF8_BOM[1]
                && bytes[2] == UTF8_BOM[2]
            ? 3
            : 0;
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .decode(ByteBuffer.wrap(bytes, start, bytes.length - start))
          .toString();
    } catch (CharacterCodingException e) {
      throw new ConfigException(
          ConfigException.ROOT_PATH, "config file " + file + " is not valid UTF-8", e);
    }
  }
}
