package io.orbite.qualification.qualify;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A qualification profile: the hosts and the cases {@code ./orbite qualify} runs, read strictly
 * from JSON (docs/qualification.md, "Profiles", lists every key). The reference's case fields map
 * to ours: source and requester (a host and a memory kind each), transport and provider, operation,
 * parents (tasks per round), payload (bytes per task) and block ({@code slicing.baseBlockBytes}),
 * lanes and rail mask, mode, fault role, generations and rounds.
 *
 * @param name the profile's name
 * @param launcher the launcher it runs with unless the command line names another: local (the
 *     default), netns or ssh
 * @param hosts the hosts by alias; for the ssh launcher each names its address and identity
 * @param cases the cases, run in order
 */
public record Profile(String name, String launcher, Map<String, Host> hosts, List<Case> cases) {
  /** Modes that run. The reference's others are named, and refused as not built. */
  static final List<String> MODES =
      List.of(
          "healthy",
          "restart",
          "interruption",
          "link-down",
          "lost-completion",
          "cleanup-failure",
          "inflight-err");

  /** The modes whose fault kills (and replaces) the fault role's process. */
  static final List<String> REPLACING =
      List.of("restart", "interruption", "lost-completion", "cleanup-failure");

  /** The modes that run through the software RDMA provider's fault table. */
  static final List<String> PROVIDER_FAULTS =
      List.of("interruption", "lost-completion", "cleanup-failure", "inflight-err");

  /** Copies the collections. */
  public Profile {
    hosts = Map.copyOf(hosts);
    cases = List.copyOf(cases);
  }

  /**
   * A host of the profile.
   *
   * @param alias the name cases use for it
   * @param ssh how the ssh launcher reaches it and the identity it must prove; null when the
   *     profile gives none (the local and netns launchers need none)
   */
  public record Host(String alias, Ssh ssh) {}

  /**
   * How to reach a host over ssh, and who it must be.
   *
   * @param address its address or name for ssh
   * @param port sshd's port
   * @param user the login
   * @param identityFile the private key to log in with
   * @param knownHosts the known-hosts file holding the host's key (strict checking: a host whose
   *     key is not there is refused)
   * @param hostname the hostname the host must report ({@code /proc/sys/kernel/hostname})
   * @param bootId the boot id it must report ({@code /proc/sys/kernel/random/boot_id})
   * @param remoteJava the java to run there
   * @param remoteClassPath the class path there (the same build, installed at that path)
   */
  public record Ssh(
      String address,
      int port,
      String user,
      String identityFile,
      String knownHosts,
      String hostname,
      String bootId,
      String remoteJava,
      String remoteClassPath) {}

  /**
   * One side of a case.
   *
   * @param host the host alias it runs on
   * @param memory {@code allocated} (engine.allocate, SHM-exportable) or {@code external}
   *     (caller-owned memory registered with engine.register)
   */
  public record Side(String host, String memory) {}

  /**
   * One case: a pair of engines, a workload and a mode.
   *
   * @param name the case's name (its output directory)
   * @param source the side that owns the remote region
   * @param requester the side that submits
   * @param transport TCP, SHM or RDMA
   * @param provider for RDMA: software or native
   * @param operation READ or WRITE
   * @param parents tasks per round
   * @param payload bytes per task
   * @param block {@code slicing.baseBlockBytes}
   * @param lanes lanes per peer of the transport
   * @param railMask for RDMA, the rails allowed, bit i for device i
   * @param mode healthy, restart or link-down
   * @param faultRole the role the fault hits (restart, link-down), else null
   * @param generations for restart, how many generations the fault role runs
   * @param rounds rounds per generation
   */
  public record Case(
      String name,
      Side source,
      Side requester,
      String transport,
      String provider,
      String operation,
      int parents,
      long payload,
      long block,
      int lanes,
      int railMask,
      String mode,
      String faultRole,
      int generations,
      int rounds) {
    /** Bytes one round moves. */
    public long roundBytes() {
      return parents * payload;
    }

    /** The software provider's device names the rail mask allows (RDMA only). */
    public List<String> rails() {
      List<String> rails = new java.util.ArrayList<>();
      for (int i = 0; i < 2; i++) {
        if ((railMask & (1 << i)) != 0) {
          rails.add("soft" + i);
        }
      }
      return rails;
    }
  }

  /** Reads and checks the profile in {@code file}. */
  public static Profile read(Path file) throws IOException {
    ObjectMapper json =
        new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
    JsonNode root;
    try {
      root = json.readTree(Files.readString(file));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new ProfileException(
          file + ": not valid JSON: " + e.getOriginalMessage() + " at " + e.getLocation());
    }
    return parse(root);
  }

  /** Checks a parsed profile document. */
  static Profile parse(JsonNode root) {
    JsonFields top = JsonFields.of(root, "");
    String name = top.string("profile", true);
    top.string("description", false);
    String launcher = top.choice("launcher", "local", "local", "netns", "ssh");
    Map<String, Host> hosts = new LinkedHashMap<>();
    JsonFields hostsNode = top.object("hosts", false);
    if (hostsNode != null) {
      for (String alias : hostsNode.keys()) {
        JsonFields h = hostsNode.object(alias, true);
        JsonFields s = h.object("ssh", false);
        Ssh ssh = null;
        if (s != null) {
          ssh =
              new Ssh(
                  s.string("address", true),
                  (int) s.number("port", 22L, 1, 65535),
                  s.string("user", true),
                  s.string("identityFile", true),
                  s.string("knownHosts", true),
                  s.string("hostname", true),
                  s.string("bootId", true),
                  s.string("remoteJava", true),
                  s.string("remoteClassPath", true));
          s.noOthers();
        }
        h.noOthers();
        hosts.put(alias, new Host(alias, ssh));
      }
      hostsNode.noOthers();
    }
    List<JsonNode> caseNodes = top.array("cases");
    top.noOthers();
    List<Case> cases = new java.util.ArrayList<>();
    Set<String> names = new HashSet<>();
    for (int i = 0; i < caseNodes.size(); i++) {
      Case c = parseCase(JsonFields.of(caseNodes.get(i), "cases[" + i + "]"), hosts);
      if (!names.add(c.name())) {
        throw new ProfileException("cases[" + i + "].name: '" + c.name() + "' names two cases");
      }
      cases.add(c);
    }
    return new Profile(name, launcher, hosts, cases);
  }

  private static Case parseCase(JsonFields c, Map<String, Host> hosts) {
    String name = c.string("name", true);
    if (!name.matches("[a-z0-9][a-z0-9.-]{0,63}")) {
      throw new ProfileException(
          c.pathOf("name") + ": '" + name + "' must be 1..64 of a-z 0-9 . - (a directory's name)");
    }
    Side source = side(c.object("source", false), c.pathOf("source"), "b", hosts);
    Side requester = side(c.object("requester", false), c.pathOf("requester"), "a", hosts);
    String transport = c.choice("transport", null, "tcp", "shm", "rdma").toUpperCase();
    String provider = c.choice("provider", "software", "software", "native");
    if (!transport.equals("RDMA") && c.has("provider")) {
      throw new ProfileException(c.pathOf("provider") + ": only an rdma case names a provider");
    }
    String operation = c.choice("operation", null, "read", "write").toUpperCase();
    int parents = (int) c.number("parents", null, 1, 256);
    long payload = c.number("payload", null, 1, 256L << 20);
    long block = c.number("block", 65536L, 4096, 64L << 20);
    if (Long.bitCount(block) != 1) {
      throw new ProfileException(c.pathOf("block") + ": " + block + " is not a power of two");
    }
    int lanes = (int) c.number("lanes", 2L, 1, 16);
    int railMask = (int) c.number("railMask", 3L, 1, 3);
    if (!transport.equals("RDMA") && c.has("railMask")) {
      throw new ProfileException(c.pathOf("railMask") + ": only an rdma case has rails");
    }
    String mode = c.string("mode", true);
    if (!MODES.contains(mode)) {
      throw new ProfileException(
          c.pathOf("mode") + ": '" + mode + "' is not one of " + String.join(", ", MODES));
    }
    String faultRole =
        c.has("faultRole") ? c.choice("faultRole", null, "source", "requester") : null;
    boolean faulted = !mode.equals("healthy");
    if (faulted && faultRole == null) {
      throw new ProfileException(c.pathOf("faultRole") + ": mode " + mode + " needs a fault role");
    }
    if (!faulted && faultRole != null) {
      throw new ProfileException(c.pathOf("faultRole") + ": a healthy case has no fault role");
    }
    boolean replaces = REPLACING.contains(mode);
    int generations =
        (int) c.number("generations", mode.equals("restart") ? null : replaces ? 2L : 1L, 1, 3);
    if (mode.equals("restart") && generations < 2) {
      throw new ProfileException(
          c.pathOf("generations") + ": a restart runs 2 or 3 generations, not " + generations);
    }
    if (replaces && !mode.equals("restart") && generations != 2) {
      throw new ProfileException(
          c.pathOf("generations")
              + ": a "
              + mode
              + " case runs 2 generations of its fault role (the fault ends the first), not "
              + generations);
    }
    if (!replaces && generations != 1) {
      throw new ProfileException(
          c.pathOf("generations") + ": a " + mode + " case has one generation, not " + generations);
    }
    int rounds =
        (int)
            c.number(
                "rounds",
                3L,
                mode.equals("link-down") || mode.equals("inflight-err")
                    ? 3
                    : replaces && !mode.equals("restart") ? 2 : 1,
                100);
    c.noOthers();
    if (transport.equals("SHM")
        && (source.memory().equals("external") || requester.memory().equals("external"))) {
      throw new ProfileException(
          c.pathOf("transport")
              + ": SHM maps engine-allocated memory only; an external region is never exported"
              + " through SHM");
    }
    if (mode.equals("link-down") && !(transport.equals("TCP") && operation.equals("READ"))) {
      throw new ProfileException(
          c.pathOf("mode")
              + ": link-down runs TCP READs (a READ cut by the link fails with no remote effect"
              + " and its range is checked byte by byte; a WRITE cut mid-flight ends with an"
              + " unknown remote effect, which this mode does not qualify)");
    }
    boolean softRdma = transport.equals("RDMA") && provider.equals("software");
    if (PROVIDER_FAULTS.contains(mode) && !softRdma) {
      throw new ProfileException(
          c.pathOf("mode")
              + ": "
              + mode
              + " runs through the software RDMA provider's fault table: transport rdma,"
              + " provider software");
    }
    if ((mode.equals("lost-completion") || mode.equals("interruption"))
        && !"source".equals(faultRole)) {
      throw new ProfileException(c.pathOf("faultRole") + ": a " + mode + " case kills the source");
    }
    if (mode.equals("interruption") && (lanes != 1 || railMask == 3)) {
      throw new ProfileException(
          c.pathOf("mode")
              + ": interruption holds the one QP's first post: lanes 1, railMask 1 or 2");
    }
    if (mode.equals("cleanup-failure")) {
      if (!"requester".equals(faultRole)) {
        throw new ProfileException(
            c.pathOf("faultRole") + ": a cleanup-failure case faults the requester's QP");
      }
      if (!operation.equals("READ") || parents != 1 || lanes != 1 || railMask != 1) {
        throw new ProfileException(
            c.pathOf("mode")
                + ": cleanup-failure runs one READ on the one QP of one device, so that the QP"
                + " destroy that fails is that READ's: operation read, parents 1, lanes 1,"
                + " railMask 1");
      }
    }
    if (mode.equals("inflight-err")) {
      if (!"requester".equals(faultRole)) {
        throw new ProfileException(
            c.pathOf("faultRole") + ": an inflight-err case faults the requester's QP");
      }
      if (!operation.equals("WRITE")
          || parents != 1
          || lanes != 1
          || railMask == 3
          || payload > block) {
        throw new ProfileException(
            c.pathOf("mode")
                + ": inflight-err runs one WRITE of one work request: operation write, parents"
                + " 1, lanes 1, railMask 1 or 2, payload at most block");
      }
    }
    if (mode.equals("link-down") && source.host().equals(requester.host())) {
      throw new ProfileException(
          c.pathOf("requester.host") + ": a link-down case needs two hosts, one link between");
    }
    return new Case(
        name,
        source,
        requester,
        transport,
        provider,
        operation,
        parents,
        payload,
        block,
        lanes,
        railMask,
        mode,
        faultRole,
        generations,
        rounds);
  }

  private static Side side(JsonFields s, String path, String host, Map<String, Host> hosts) {
    if (s == null) {
      return new Side(host, "allocated");
    }
    String alias = s.string("host", false);
    if (alias == null) {
      alias = host;
    } else if (!hosts.isEmpty() && !hosts.containsKey(alias)) {
      throw new ProfileException(
          path + ".host: '" + alias + "' is not one of the profile's hosts " + hosts.keySet());
    }
    String memory = s.choice("memory", "allocated", "allocated", "external");
    s.noOthers();
    return new Side(alias, memory);
  }
}
