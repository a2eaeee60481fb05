package io.orbite.config;

import java.util.List;

/**
 * The RDMA transport (reliable-connected queue pairs over a verbs provider). JSON section {@code
 * rdma}. The transport is being built; see docs/configuration.md.
 *
 * @param enabled whether the engine runs the RDMA transport: requesters open RDMA endpoints to
 *     peers that publish rails, and the source side serves RDMA connections. Default {@value
 *     #DEFAULT_ENABLED}: off, no provider is opened.
 * @param provider which verbs provider the transport uses: {@code "software"} (the in-process
 *     software RDMA provider, SoftVerbs, over TCP; runs everywhere) or {@code "native"} (libibverbs
 *     through FFM; needs an RDMA NIC and rdma-core). Default {@value #DEFAULT_PROVIDER}.
 * @param devices the provider's devices the transport uses as rails, by name; empty means every
 *     device the provider lists. Default empty; at most {@value #MAX_DEVICES} names, each non-blank
 *     and none repeated.
 * @param lanes queue pairs per rail in each endpoint. Default {@value #DEFAULT_LANES}; range
 *     {@value #MIN_LANES}..{@value #MAX_LANES}.
 * @param softwareAddress the IPv4 address the software provider's devices listen on, as a dotted
 *     literal ({@code a.b.c.d}, each part 0..255 without leading zeros). Default {@value
 *     #DEFAULT_SOFTWARE_ADDRESS}; not used by the native provider.
 * @param softwareDevices how many devices (rails) the software provider makes. Default {@value
 *     #DEFAULT_SOFTWARE_DEVICES}; range {@value #MIN_SOFTWARE_DEVICES}..{@value
 *     #MAX_SOFTWARE_DEVICES}; not used by the native provider.
 * @param maxEndpoints most RDMA endpoints held open at once, in endpoints. Default {@value
 *     #DEFAULT_MAX_ENDPOINTS}; range {@value #MIN_MAX_ENDPOINTS}..{@value #MAX_MAX_ENDPOINTS}.
 * @param maxGrants most memory-window grants a source holds at once, in grants. Default {@value
 *     #DEFAULT_MAX_GRANTS}; range {@value #MIN_MAX_GRANTS}..{@value #MAX_MAX_GRANTS}.
 * @param maxSendWr most send work requests outstanding on one queue pair, in work requests. Default
 *     {@value #DEFAULT_MAX_SEND_WR}; range {@value #MIN_MAX_SEND_WR}..{@value #MAX_MAX_SEND_WR}.
 * @param maxCqes entries of each completion queue, in completion queue entries. Default {@value
 *     #DEFAULT_MAX_CQES}; range {@value #MIN_MAX_CQES}..{@value #MAX_MAX_CQES}.
 */
public record RdmaConfig(
    boolean enabled,
    String provider,
    List<String> devices,
    int lanes,
    String softwareAddress,
    int softwareDevices,
    int maxEndpoints,
    int maxGrants,
    int maxSendWr,
    int maxCqes) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "rdma";

  /** Default {@link #enabled()}. */
  public static final boolean DEFAULT_ENABLED = false;

  /** The accepted values of {@link #provider()}. */
  public static final List<String> PROVIDERS = List.of("software", "native");

  /** Default {@link #provider()}: the software provider, which runs everywhere. */
  public static final String DEFAULT_PROVIDER = "software";

  /** Default {@link #devices()}: empty, every device the provider lists. */
  public static final List<String> DEFAULT_DEVICES = List.of();

  /** Most names {@link #devices()} may hold. */
  public static final int MAX_DEVICES = 16;

  /** Default {@link #lanes()}. */
  public static final int DEFAULT_LANES = 2;

  /** Smallest accepted {@link #lanes()}. */
  public static final int MIN_LANES = 1;

  /** Largest accepted {@link #lanes()}. */
  public static final int MAX_LANES = 16;

  /** Default {@link #softwareAddress()}: loopback only. */
  public static final String DEFAULT_SOFTWARE_ADDRESS = "127.0.0.1";

  /** Default {@link #softwareDevices()}. */
  public static final int DEFAULT_SOFTWARE_DEVICES = 2;

  /** Smallest accepted {@link #softwareDevices()}. */
  public static final int MIN_SOFTWARE_DEVICES = 1;

  /** Largest accepted {@link #softwareDevices()}. */
  public static final int MAX_SOFTWARE_DEVICES = 8;

  /** Default {@link #maxEndpoints()}. */
  public static final int DEFAULT_MAX_ENDPOINTS = 64;

  /** Smallest accepted {@link #maxEndpoints()}. */
  public static final int MIN_MAX_ENDPOINTS = 1;

  /** Largest accepted {@link #maxEndpoints()}. */
  public static final int MAX_MAX_ENDPOINTS = 4096;

  /** Default {@link #maxGrants()}. */
  public static final int DEFAULT_MAX_GRANTS = 64;

  /** Smallest accepted {@link #maxGrants()}. */
  public static final int MIN_MAX_GRANTS = 1;

  /** Largest accepted {@link #maxGrants()}. */
  public static final int MAX_MAX_GRANTS = 65536;

  /** Default {@link #maxSendWr()}. */
  public static final int DEFAULT_MAX_SEND_WR = 16;

  /** Smallest accepted {@link #maxSendWr()}. */
  public static final int MIN_MAX_SEND_WR = 1;

  /** Largest accepted {@link #maxSendWr()}. */
  public static final int MAX_MAX_SEND_WR = 4096;

  /** Default {@link #maxCqes()}. */
  public static final int DEFAULT_MAX_CQES = 1024;

  /** Smallest accepted {@link #maxCqes()}. */
  public static final int MIN_MAX_CQES = 16;

  /** Largest accepted {@link #maxCqes()}. */
  public static final int MAX_MAX_CQES = 65536;

  /**
   * Validates every component: {@link #provider()} must be one of {@link #PROVIDERS}, {@link
   * #devices()} at most {@value #MAX_DEVICES} distinct non-blank names, {@link #softwareAddress()}
   * a dotted IPv4 literal, each number in its {@code MIN_*}..{@code MAX_*} range; any {@link
   * #enabled()} is accepted. The device list is copied, so the record stays immutable.
   *
   * @throws ConfigException naming {@code rdma.<key>} (or {@code rdma.devices[<i>]} for one device
   *     name) for the first invalid component
   */
  public RdmaConfig {
    Checks.requireNonNull(SECTION + ".provider", provider);
    if (!PROVIDERS.contains(provider)) {
      throw new ConfigException(
          SECTION + ".provider",
          "must be one of \"software\", \"native\", got " + Checks.quote(provider));
    }
    devices = requireDevices(SECTION + ".devices", devices);
    Checks.requireRange(SECTION + ".lanes", lanes, MIN_LANES, MAX_LANES);
    Checks.requireIpv4(SECTION + ".softwareAddress", softwareAddress);
    Checks.requireRange(
        SECTION + ".softwareDevices", softwareDevices, MIN_SOFTWARE_DEVICES, MAX_SOFTWARE_DEVICES);
    Checks.requireRange(
        SECTION + ".maxEndpoints", maxEndpoints, MIN_MAX_ENDPOINTS, MAX_MAX_ENDPOINTS);
    Checks.requireRange(SECTION + ".maxGrants", maxGrants, MIN_MAX_GRANTS, MAX_MAX_GRANTS);
    Checks.requireRange(SECTION + ".maxSendWr", maxSendWr, MIN_MAX_SEND_WR, MAX_MAX_SEND_WR);
    Checks.requireRange(SECTION + ".maxCqes", maxCqes, MIN_MAX_CQES, MAX_MAX_CQES);
  }

  /**
   * All components at their defaults.
   *
   * @return the settings an absent or empty {@code rdma} section reads as: the transport off; when
   *     enabled, the {@value #DEFAULT_PROVIDER} provider with every device it lists ({@value
   *     #DEFAULT_SOFTWARE_DEVICES} software devices on {@value #DEFAULT_SOFTWARE_ADDRESS}), {@value
   *     #DEFAULT_LANES} queue pairs per rail, {@value #DEFAULT_MAX_ENDPOINTS} endpoints, {@value
   *     #DEFAULT_MAX_GRANTS} grants, {@value #DEFAULT_MAX_SEND_WR} send work requests per queue
   *     pair and completion queues of {@value #DEFAULT_MAX_CQES} entries
   */
  public static RdmaConfig defaults() {
    return new RdmaConfig(
        DEFAULT_ENABLED,
        DEFAULT_PROVIDER,
        DEFAULT_DEVICES,
        DEFAULT_LANES,
        DEFAULT_SOFTWARE_ADDRESS,
        DEFAULT_SOFTWARE_DEVICES,
        DEFAULT_MAX_ENDPOINTS,
        DEFAULT_MAX_GRANTS,
        DEFAULT_MAX_SEND_WR,
        DEFAULT_MAX_CQES);
  }

  /**
   * A copy with {@link #enabled()} replaced and every other component kept; any value is accepted.
   *
   * @param enabled whether the engine runs the RDMA transport: opens RDMA endpoints to peers that
   *     publish rails and serves RDMA connections as a source
   * @return a new {@code RdmaConfig}; this one is unchanged
   */
  public RdmaConfig withEnabled(boolean enabled) {
    return new RdmaConfig(
        enabled,
        provider,
        devices,
        lanes,
        softwareAddress,
        softwareDevices,
        maxEndpoints,
        maxGrants,
        maxSendWr,
        maxCqes);
  }

  /**
   * A copy with {@link #provider()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param provider the verbs provider: {@code "software"} (SoftVerbs over TCP) or {@code "native"}
   *     (libibverbs through FFM)
   * @return a new {@code RdmaConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.provider} if it is {@code null} or not one of {@link
   *     #PROVIDERS}
   */
  public RdmaConfig withProvider(String provider) {
    return new RdmaConfig(
        enabled,
        provider,
        devices,
        lanes,
        softwareAddress,
        softwareDevices,
        maxEndpoints,
        maxGrants,
        maxSendWr,
        maxCqes);
  }

  /**
   * A copy with {@link #devices()} replaced and every other component kept; the new value is
   * checked as by the constructor and copied.
   *
   * @param devices names of the provider's devices to use as rails; empty for every device the
   *     provider lists
   * @return a new {@code RdmaConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.devices} if the list is {@code null} or holds more
   *     than {@value #MAX_DEVICES} names, or {@code rdma.devices[<i>]} if a name is {@code null},
   *     blank or repeats an earlier one
   */
  public RdmaConfig withDevices(List<String> devices) {
    return new RdmaConfig(
        enabled,
        provider,
        devices,
        lanes,
        softwareAddress,
        softwareDevices,
        maxEndpoints,
        maxGrants,
        maxSendWr,
        maxCqes);
  }

  /**
   * A copy with {@link #lanes()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param lanes queue pairs per rail in each endpoint
   * @return a new {@code RdmaConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.lanes} if it is outside {@value #MIN_LANES}..{@value
   *     #MAX_LANES}
   */
  public RdmaConfig withLanes(int lanes) {
    return new RdmaConfig(
        enabled,
        provider,
        devices,
        lanes,
        softwareAddress,
        softwareDevices,
        maxEndpoints,
        maxGrants,
        maxSendWr,
        maxCqes);
  }

  /**
   * A copy with {@link #softwareDevices()} replaced and every other component kept; the new value
   * is checked as by the constructor.
   *
   * @param softwareDevices how many devices (rails) the software provider makes
   * @return a new {@code RdmaConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.softwareDevices} if it is outside {@value
   *     #MIN_SOFTWARE_DEVICES}..{@value #MAX_SOFTWARE_DEVICES}
   */
  public RdmaConfig withSoftwareDevices(int softwareDevices) {
    return new RdmaConfig(
        enabled,
        provider,
        devices,
        lanes,
        softwareAddress,
        softwareDevices,
        maxEndpoints,
        maxGrants,
        maxSendWr,
        maxCqes);
  }

  /**
   * The device names, checked and copied: at most {@value #MAX_DEVICES}, none {@code null}, blank
   * or repeated.
   */
  private static List<String> requireDevices(String path, List<String> devices) {
    Checks.requireNonNull(path, devices);
    if (devices.size() > MAX_DEVICES) {
      throw new ConfigException(
          path, "must hold at most " + MAX_DEVICES + " device names, got " + devices.size());
    }
    // Checked one by one (List.copyOf would throw a bare NullPointerException on a null name).
    for (int i = 0; i < devices.size(); i++) {
      String device = devices.get(i);
      String devicePath = path + "[" + i + "]";
      Checks.requireNonNull(devicePath, device);
      if (device.isBlank()) {
        throw new ConfigException(devicePath, "must not be blank, got " + Checks.quote(device));
      }
      int first = devices.indexOf(device);
      if (first < i) {
        throw new ConfigException(
            devicePath,
            "must differ from every other device, got "
                + Checks.quote(device)
                + " again (first at "
                + path
                + "["
                + first
                + "])");
      }
    }
    return List.copyOf(devices);
  }

  static RdmaConfig read(ConfigReader r) {
    return new RdmaConfig(
        r.booleanValue("enabled", DEFAULT_ENABLED),
        r.stringValue("provider", DEFAULT_PROVIDER),
        r.stringListValue("devices", DEFAULT_DEVICES),
        r.intValue("lanes", DEFAULT_LANES, MIN_LANES, MAX_LANES),
        r.stringValue("softwareAddress", DEFAULT_SOFTWARE_ADDRESS),
        r.intValue(
            "softwareDevices",
            DEFAULT_SOFTWARE_DEVICES,
            MIN_SOFTWARE_DEVICES,
            MAX_SOFTWARE_DEVICES),
        r.intValue("maxEndpoints", DEFAULT_MAX_ENDPOINTS, MIN_MAX_ENDPOINTS, MAX_MAX_ENDPOINTS),
        r.intValue("maxGrants", DEFAULT_MAX_GRANTS, MIN_MAX_GRANTS, MAX_MAX_GRANTS),
        r.intValue("maxSendWr", DEFAULT_MAX_SEND_WR, MIN_MAX_SEND_WR, MAX_MAX_SEND_WR),
        r.intValue("maxCqes", DEFAULT_MAX_CQES, MIN_MAX_CQES, MAX_MAX_CQES));
  }
}
