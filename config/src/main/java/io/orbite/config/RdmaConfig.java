package io.orbite.config;

import java.util.List;
import java.util.function.Consumer;

/**
 * The RDMA transport (reliable-connected queue pairs over a verbs provider). JSON section {@code
 * rdma}. See docs/configuration.md and docs/transports/rdma.md.
 *
 * <p>One record for the whole section, as for every other section: its 22 components are the
 * section's JSON keys, documented here with their {@code DEFAULT_}, {@code MIN_} and {@code MAX_}
 * constants, which callers and docs/configuration.md cite. Splitting it would change its keys or
 * its API; that is why this file is over 500 lines.
 *
 * @param enabled whether the engine runs the RDMA transport: every peer segment it opens also opens
 *     an RDMA endpoint to the peer (whose engine must run RDMA too; the rails are exchanged on that
 *     endpoint's control connection), and the source side serves RDMA connections. Default {@value
 *     #DEFAULT_ENABLED}: off, no provider is opened.
 * @param provider which verbs provider the transport uses: {@code "software"} (the in-process
 *     software RDMA provider, SoftVerbs, over TCP; runs everywhere) or {@code "native"} (libibverbs
 *     through FFM; needs an RDMA NIC and rdma-core). Default {@value #DEFAULT_PROVIDER}.
 * @param devices the provider's devices the transport uses as rails, by name; empty means every
 *     device the provider lists. Default empty; at most {@value #MAX_DEVICES} names, each non-blank
 *     and none repeated.
 * @param lanes queue pairs per rail in each endpoint. Default {@value #DEFAULT_LANES}; range
 *     {@value #MIN_LANES}..{@value #MAX_LANES}.
 * @param softwareAddress the IPv4 address the software provider's devices listen on when {@link
 *     #softwareAddresses()} is empty, as a dotted literal ({@code a.b.c.d}, each part 0..255
 *     without leading zeros). Default {@value #DEFAULT_SOFTWARE_ADDRESS}; not used by the native
 *     provider.
 * @param softwareDevices how many devices (rails) the software provider makes. Default {@value
 *     #DEFAULT_SOFTWARE_DEVICES}; range {@value #MIN_SOFTWARE_DEVICES}..{@value
 *     #MAX_SOFTWARE_DEVICES}; not used by the native provider.
 * @param maxEndpoints most RDMA endpoints held open at once, in endpoints. Default {@value
 *     #DEFAULT_MAX_ENDPOINTS}; range {@value #MIN_MAX_ENDPOINTS}..{@value #MAX_MAX_ENDPOINTS}.
 * @param maxGrants most whole-parent grant reservations held at once, in grants: as a source (one
 *     per task served, for all its slices' windows) and, counted separately, as a requester (the
 *     tasks it holds reserved at sources). Default {@value #DEFAULT_MAX_GRANTS}; range {@value
 *     #MIN_MAX_GRANTS}..{@value #MAX_MAX_GRANTS}.
 * @param maxSendWr most send work requests outstanding on one queue pair, in work requests. Default
 *     {@value #DEFAULT_MAX_SEND_WR}; range {@value #MIN_MAX_SEND_WR}..{@value #MAX_MAX_SEND_WR}.
 * @param maxCqes entries of each completion queue, in completion queue entries. Default {@value
 *     #DEFAULT_MAX_CQES}; range {@value #MIN_MAX_CQES}..{@value #MAX_MAX_CQES}.
 * @param railErrors the rail circuit's threshold (C13): failures within {@link
 *     #railErrorWindowMillis()} that open a (peer epoch, local rail, remote rail) pair, in
 *     failures. Default {@value #DEFAULT_RAIL_ERRORS} (the reference's); range {@value
 *     #MIN_RAIL_ERRORS}..{@value #MAX_RAIL_ERRORS}.
 * @param railErrorWindowMillis the window the rail circuit counts a pair's failures in, in
 *     milliseconds. Default {@value #DEFAULT_RAIL_ERROR_WINDOW_MILLIS} (the reference's); range
 *     {@value #MIN_RAIL_ERROR_WINDOW_MILLIS}..{@value #MAX_RAIL_ERROR_WINDOW_MILLIS}.
 * @param railCooldownMillis how long an opened pair is refused before one half-open trial, in
 *     milliseconds. Default {@value #DEFAULT_RAIL_COOLDOWN_MILLIS} (the reference's); range {@value
 *     #MIN_RAIL_COOLDOWN_MILLIS}..{@value #MAX_RAIL_COOLDOWN_MILLIS}.
 * @param railMaxCooldownMillis the longest cooldown: a failed trial doubles the cooldown up to
 *     this, in milliseconds. Default {@value #DEFAULT_RAIL_MAX_COOLDOWN_MILLIS} (the reference's);
 *     range {@value #MIN_RAIL_MAX_COOLDOWN_MILLIS}..{@value #MAX_RAIL_MAX_COOLDOWN_MILLIS}, and at
 *     least {@link #railCooldownMillis()}.
 * @param railProbeIntervalMillis the least time between two half-open trials of a pair, in
 *     milliseconds; {@code 0} allows an immediate trial once the cooldown has passed. Default
 *     {@value #DEFAULT_RAIL_PROBE_INTERVAL_MILLIS} (the reference's); range {@value
 *     #MIN_RAIL_PROBE_INTERVAL_MILLIS}..{@value #MAX_RAIL_PROBE_INTERVAL_MILLIS}.
 * @param priorityAgingMillis the post queue's aging (C14): queued work of a lower tier that waited
 *     this long is promoted one tier (MEDIUM to HIGH, LOW to MEDIUM), keeping its enqueue time, in
 *     milliseconds; the reference's promotion timeout. Default {@value
 *     #DEFAULT_PRIORITY_AGING_MILLIS} (the reference's); range {@value
 *     #MIN_PRIORITY_AGING_MILLIS}..{@value #MAX_PRIORITY_AGING_MILLIS}.
 * @param priorityAgingPerEntry how the post queue ages (C14): {@code false} promotes a tier's whole
 *     queue once its oldest entry aged out, {@code true} only the entries that aged out. Default
 *     {@value #DEFAULT_PRIORITY_AGING_PER_ENTRY} (the reference's).
 * @param softwareAddresses the IPv4 addresses the software provider's devices listen on, one per
 *     device: device {@code i} listens on entry {@code i} modulo the list's length (so rails can
 *     run over different links, for example two veth pairs); empty means every device listens on
 *     {@link #softwareAddress()}. Each entry a dotted literal as for {@code softwareAddress}.
 *     Default empty; at most {@value #MAX_SOFTWARE_ADDRESSES} addresses, none repeated; not used by
 *     the native provider. See {@link #softwareAddressOf(int)}.
 * @param gidIndex the GID table index each rail's port uses: {@code -1} chooses automatically (the
 *     best valid GID, chosen again when a paused port recovers), {@code 0} or more pins that index
 *     strictly (never another). Default {@value #DEFAULT_GID_INDEX}; range {@value
 *     #MIN_GID_INDEX}..{@value #MAX_GID_INDEX}.
 * @param maxDirectBytes most bytes of registered memory on loan to the RDMA devices at once, in
 *     bytes: a requester's slices in flight and a source's bound windows each charge their length
 *     until their drain (the reference's {@code max_direct_bytes}); a task that does not fit waits
 *     for room, and one larger than the whole budget is refused. Default {@value
 *     #DEFAULT_MAX_DIRECT_BYTES} (64 MiB, the reference's); range {@value
 *     #MIN_MAX_DIRECT_BYTES}..{@value #MAX_MAX_DIRECT_BYTES}.
 * @param selection which rails may carry a slice: a device mask and NUMA policy, hard limits that
 *     the bandwidth-aware selection only narrows within. Default {@link
 *     RdmaSelectionConfig#defaults()}.
 * @param completionEvents whether each CQ lane makes a completion channel and its CQ on it, arms
 *     the CQ and takes and acknowledges its completion events (the reference's {@code
 *     rdma_events}); {@code false} (the default) makes CQs without a channel, polled only. The lane
 *     polls its CQ in both modes.
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
    int maxCqes,
    int railErrors,
    int railErrorWindowMillis,
    int railCooldownMillis,
    int railMaxCooldownMillis,
    int railProbeIntervalMillis,
    int priorityAgingMillis,
    boolean priorityAgingPerEntry,
    List<String> softwareAddresses,
    int gidIndex,
    long maxDirectBytes,
    RdmaSelectionConfig selection,
    boolean completionEvents) {
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
  public static final int DEFAULT_MAX_GRANTS = 1024;

  /** Smallest accepted {@link #maxGrants()}. */
  public static final int MIN_MAX_GRANTS = 1;

  /** Largest accepted {@link #maxGrants()}. */
  public static final int MAX_MAX_GRANTS = 65536;

  /** Default {@link #maxSendWr()}. */
  public static final int DEFAULT_MAX_SEND_WR = 1024;

  /** Smallest accepted {@link #maxSendWr()}. */
  public static final int MIN_MAX_SEND_WR = 1;

  /** Largest accepted {@link #maxSendWr()}. */
  public static final int MAX_MAX_SEND_WR = 4096;

  /** Default {@link #maxCqes()}. */
  public static final int DEFAULT_MAX_CQES = 32768;

  /** Smallest accepted {@link #maxCqes()}. */
  public static final int MIN_MAX_CQES = 16;

  /** Largest accepted {@link #maxCqes()}. */
  public static final int MAX_MAX_CQES = 65536;

  /** Default {@link #railErrors()}: three failures, as in the reference. */
  public static final int DEFAULT_RAIL_ERRORS = 3;

  /** Smallest accepted {@link #railErrors()}. */
  public static final int MIN_RAIL_ERRORS = 1;

  /** Largest accepted {@link #railErrors()}. */
  public static final int MAX_RAIL_ERRORS = 1000;

  /** Default {@link #railErrorWindowMillis()}: 10 s, as in the reference. */
  public static final int DEFAULT_RAIL_ERROR_WINDOW_MILLIS = 10000;

  /** Smallest accepted {@link #railErrorWindowMillis()}. */
  public static final int MIN_RAIL_ERROR_WINDOW_MILLIS = 1;

  /** Largest accepted {@link #railErrorWindowMillis()}. */
  public static final int MAX_RAIL_ERROR_WINDOW_MILLIS = 3600000;

  /** Default {@link #railCooldownMillis()}: 30 s, as in the reference. */
  public static final int DEFAULT_RAIL_COOLDOWN_MILLIS = 30000;

  /** Smallest accepted {@link #railCooldownMillis()}. */
  public static final int MIN_RAIL_COOLDOWN_MILLIS = 1;

  /** Largest accepted {@link #railCooldownMillis()}. */
  public static final int MAX_RAIL_COOLDOWN_MILLIS = 3600000;

  /** Default {@link #railMaxCooldownMillis()}: 5 min, as in the reference. */
  public static final int DEFAULT_RAIL_MAX_COOLDOWN_MILLIS = 300000;

  /** Smallest accepted {@link #railMaxCooldownMillis()}. */
  public static final int MIN_RAIL_MAX_COOLDOWN_MILLIS = 1;

  /** Largest accepted {@link #railMaxCooldownMillis()}. */
  public static final int MAX_RAIL_MAX_COOLDOWN_MILLIS = 86400000;

  /** Default {@link #railProbeIntervalMillis()}: 1 s, as in the reference. */
  public static final int DEFAULT_RAIL_PROBE_INTERVAL_MILLIS = 1000;

  /** Smallest accepted {@link #railProbeIntervalMillis()}. */
  public static final int MIN_RAIL_PROBE_INTERVAL_MILLIS = 0;

  /** Largest accepted {@link #railProbeIntervalMillis()}. */
  public static final int MAX_RAIL_PROBE_INTERVAL_MILLIS = 3600000;

  /** Default {@link #priorityAgingMillis()}: 10 ms, the reference's promotion timeout. */
  public static final int DEFAULT_PRIORITY_AGING_MILLIS = 10;

  /** Smallest accepted {@link #priorityAgingMillis()}. */
  public static final int MIN_PRIORITY_AGING_MILLIS = 1;

  /** Largest accepted {@link #priorityAgingMillis()}. */
  public static final int MAX_PRIORITY_AGING_MILLIS = 60000;

  /** Default {@link #priorityAgingPerEntry()}: whole tiers, as in the reference. */
  public static final boolean DEFAULT_PRIORITY_AGING_PER_ENTRY = false;

  /**
   * Default {@link #softwareAddresses()}: empty, every software device on {@link
   * #softwareAddress()}.
   */
  public static final List<String> DEFAULT_SOFTWARE_ADDRESSES = List.of();

  /** Most addresses {@link #softwareAddresses()} may hold. */
  public static final int MAX_SOFTWARE_ADDRESSES = 8;

  /** Default {@link #gidIndex()}: automatic. */
  public static final int DEFAULT_GID_INDEX = -1;

  /** Smallest accepted {@link #gidIndex()}: automatic. */
  public static final int MIN_GID_INDEX = -1;

  /** Largest accepted {@link #gidIndex()}. */
  public static final int MAX_GID_INDEX = 255;

  /** Default {@link #maxDirectBytes()}: 64 MiB, as in the reference. */
  public static final long DEFAULT_MAX_DIRECT_BYTES = 64L << 20;

  /** Smallest accepted {@link #maxDirectBytes()}: 64 KiB, one base slice. */
  public static final long MIN_MAX_DIRECT_BYTES = 64L << 10;

  /** Largest accepted {@link #maxDirectBytes()}: 1 TiB. */
  public static final long MAX_MAX_DIRECT_BYTES = 1L << 40;

  /**
   * Validates every component: {@link #provider()} must be one of {@link #PROVIDERS}, {@link
   * #devices()} at most {@value #MAX_DEVICES} distinct non-blank names, {@link #softwareAddress()}
   * a dotted IPv4 literal, each number in its {@code MIN_*}..{@code MAX_*} range, {@link
   * #softwareAddresses()} at most {@value #MAX_SOFTWARE_ADDRESSES} distinct dotted IPv4 literals,
   * and {@link #railMaxCooldownMillis()} at least {@link #railCooldownMillis()}; any {@link
   * #enabled()}, {@link #priorityAgingPerEntry()} and {@link #completionEvents()} are accepted. The
   * two lists are copied, so the record stays immutable.
   *
   * @throws ConfigException naming {@code rdma.<key>} (or {@code rdma.devices[<i>]} for one device
   *     name, {@code rdma.softwareAddresses[<i>]} for one address) for the first invalid component,
   *     or {@code rdma.railMaxCooldownMillis} if it is below {@code rdma.railCooldownMillis}
   */
  public RdmaConfig {
    Checks.requireNonNull(SECTION + ".provider", provider);
    if (!PROVIDERS.contains(provider)) {
      throw new ConfigException(
          SECTION + ".provider",
          "must be one of \"software\", \"native\", got " + Checks.quote(provider));
    }
    devices = Checks.requireNames(SECTION + ".devices", devices, MAX_DEVICES);
    Checks.requireRange(SECTION + ".lanes", lanes, MIN_LANES, MAX_LANES);
    Checks.requireIpv4(SECTION + ".softwareAddress", softwareAddress);
    Checks.requireRange(
        SECTION + ".softwareDevices", softwareDevices, MIN_SOFTWARE_DEVICES, MAX_SOFTWARE_DEVICES);
    Checks.requireRange(
        SECTION + ".maxEndpoints", maxEndpoints, MIN_MAX_ENDPOINTS, MAX_MAX_ENDPOINTS);
    Checks.requireRange(SECTION + ".maxGrants", maxGrants, MIN_MAX_GRANTS, MAX_MAX_GRANTS);
    Checks.requireRange(SECTION + ".maxSendWr", maxSendWr, MIN_MAX_SEND_WR, MAX_MAX_SEND_WR);
    Checks.requireRange(SECTION + ".maxCqes", maxCqes, MIN_MAX_CQES, MAX_MAX_CQES);
    Checks.requireRange(SECTION + ".railErrors", railErrors, MIN_RAIL_ERRORS, MAX_RAIL_ERRORS);
    Checks.requireRange(
        SECTION + ".railErrorWindowMillis",
        railErrorWindowMillis,
        MIN_RAIL_ERROR_WINDOW_MILLIS,
        MAX_RAIL_ERROR_WINDOW_MILLIS);
    Checks.requireRange(
        SECTION + ".railCooldownMillis",
        railCooldownMillis,
        MIN_RAIL_COOLDOWN_MILLIS,
        MAX_RAIL_COOLDOWN_MILLIS);
    Checks.requireRange(
        SECTION + ".railMaxCooldownMillis",
        railMaxCooldownMillis,
        MIN_RAIL_MAX_COOLDOWN_MILLIS,
        MAX_RAIL_MAX_COOLDOWN_MILLIS);
    Checks.requireRange(
        SECTION + ".railProbeIntervalMillis",
        railProbeIntervalMillis,
        MIN_RAIL_PROBE_INTERVAL_MILLIS,
        MAX_RAIL_PROBE_INTERVAL_MILLIS);
    Checks.requireRange(
        SECTION + ".priorityAgingMillis",
        priorityAgingMillis,
        MIN_PRIORITY_AGING_MILLIS,
        MAX_PRIORITY_AGING_MILLIS);
    softwareAddresses =
        Checks.requireIpv4s(
            SECTION + ".softwareAddresses", softwareAddresses, MAX_SOFTWARE_ADDRESSES);
    Checks.requireRange(SECTION + ".gidIndex", gidIndex, MIN_GID_INDEX, MAX_GID_INDEX);
    Checks.requireRange(
        SECTION + ".maxDirectBytes", maxDirectBytes, MIN_MAX_DIRECT_BYTES, MAX_MAX_DIRECT_BYTES);
    Checks.requireNonNull(RdmaSelectionConfig.SECTION, selection);
    // Checked after every range, so that a value out of its own range is reported as such.
    if (railMaxCooldownMillis < railCooldownMillis) {
      throw new ConfigException(
          SECTION + ".railMaxCooldownMillis",
          "must be at least "
              + SECTION
              + ".railCooldownMillis ("
              + railCooldownMillis
              + "), got "
              + railMaxCooldownMillis);
    }
  }

  /**
   * All components at their defaults.
   *
   * @return the settings an absent or empty {@code rdma} section reads as: the transport off; when
   *     enabled, the {@value #DEFAULT_PROVIDER} provider with every device it lists ({@value
   *     #DEFAULT_SOFTWARE_DEVICES} software devices on {@value #DEFAULT_SOFTWARE_ADDRESS}), {@value
   *     #DEFAULT_LANES} queue pairs per rail, {@value #DEFAULT_MAX_ENDPOINTS} endpoints, {@value
   *     #DEFAULT_MAX_GRANTS} grants, {@value #DEFAULT_MAX_SEND_WR} send work requests per queue
   *     pair and completion queues of {@value #DEFAULT_MAX_CQES} entries; a rail pair opens after
   *     {@value #DEFAULT_RAIL_ERRORS} failures in {@value #DEFAULT_RAIL_ERROR_WINDOW_MILLIS} ms,
   *     for {@value #DEFAULT_RAIL_COOLDOWN_MILLIS} ms doubling up to {@value
   *     #DEFAULT_RAIL_MAX_COOLDOWN_MILLIS} ms, with at most one trial per {@value
   *     #DEFAULT_RAIL_PROBE_INTERVAL_MILLIS} ms (the reference's rail circuit); queued work that
   *     waited {@value #DEFAULT_PRIORITY_AGING_MILLIS} ms promotes its whole tier (the reference's
   *     aging); every software device listens on {@value #DEFAULT_SOFTWARE_ADDRESS}
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
        DEFAULT_MAX_CQES,
        DEFAULT_RAIL_ERRORS,
        DEFAULT_RAIL_ERROR_WINDOW_MILLIS,
        DEFAULT_RAIL_COOLDOWN_MILLIS,
        DEFAULT_RAIL_MAX_COOLDOWN_MILLIS,
        DEFAULT_RAIL_PROBE_INTERVAL_MILLIS,
        DEFAULT_PRIORITY_AGING_MILLIS,
        DEFAULT_PRIORITY_AGING_PER_ENTRY,
        DEFAULT_SOFTWARE_ADDRESSES,
        DEFAULT_GID_INDEX,
        DEFAULT_MAX_DIRECT_BYTES,
        RdmaSelectionConfig.defaults(),
        DEFAULT_COMPLETION_EVENTS);
  }

  /** Default {@link #completionEvents()}: CQs without a completion channel, polled. */
  public static final boolean DEFAULT_COMPLETION_EVENTS = false;

  /**
   * Every component but {@link #completionEvents()}, which is {@value #DEFAULT_COMPLETION_EVENTS};
   * checked as by the canonical constructor.
   *
   * @param enabled as {@link #enabled()}
   * @param provider as {@link #provider()}
   * @param devices as {@link #devices()}
   * @param lanes as {@link #lanes()}
   * @param softwareAddress as {@link #softwareAddress()}
   * @param softwareDevices as {@link #softwareDevices()}
   * @param maxEndpoints as {@link #maxEndpoints()}
   * @param maxGrants as {@link #maxGrants()}
   * @param maxSendWr as {@link #maxSendWr()}
   * @param maxCqes as {@link #maxCqes()}
   * @param railErrors as {@link #railErrors()}
   * @param railErrorWindowMillis as {@link #railErrorWindowMillis()}
   * @param railCooldownMillis as {@link #railCooldownMillis()}
   * @param railMaxCooldownMillis as {@link #railMaxCooldownMillis()}
   * @param railProbeIntervalMillis as {@link #railProbeIntervalMillis()}
   * @param priorityAgingMillis as {@link #priorityAgingMillis()}
   * @param priorityAgingPerEntry as {@link #priorityAgingPerEntry()}
   * @param softwareAddresses as {@link #softwareAddresses()}
   * @param gidIndex as {@link #gidIndex()}
   * @param maxDirectBytes as {@link #maxDirectBytes()}
   * @param selection as {@link #selection()}
   * @throws ConfigException as the canonical constructor throws it
   */
  public RdmaConfig(
      boolean enabled,
      String provider,
      List<String> devices,
      int lanes,
      String softwareAddress,
      int softwareDevices,
      int maxEndpoints,
      int maxGrants,
      int maxSendWr,
      int maxCqes,
      int railErrors,
      int railErrorWindowMillis,
      int railCooldownMillis,
      int railMaxCooldownMillis,
      int railProbeIntervalMillis,
      int priorityAgingMillis,
      boolean priorityAgingPerEntry,
      List<String> softwareAddresses,
      int gidIndex,
      long maxDirectBytes,
      RdmaSelectionConfig selection) {
    this(
        enabled,
        provider,
        devices,
        lanes,
        softwareAddress,
        softwareDevices,
        maxEndpoints,
        maxGrants,
        maxSendWr,
        maxCqes,
        railErrors,
        railErrorWindowMillis,
        railCooldownMillis,
        railMaxCooldownMillis,
        railProbeIntervalMillis,
        priorityAgingMillis,
        priorityAgingPerEntry,
        softwareAddresses,
        gidIndex,
        maxDirectBytes,
        selection,
        DEFAULT_COMPLETION_EVENTS);
  }

  /**
   * A copy with {@link #completionEvents()} replaced and every other component kept; any value is
   * accepted.
   *
   * @param completionEvents whether each CQ lane makes a completion channel for its CQ and takes
   *     its events
   * @return a new {@code RdmaConfig}; this one is unchanged
   */
  public RdmaConfig withCompletionEvents(boolean completionEvents) {
    return copy(c -> c.completionEvents = completionEvents);
  }

  /**
   * A copy with {@link #enabled()} replaced and every other component kept; any value is accepted.
   *
   * @param enabled whether the engine runs the RDMA transport: opens an RDMA endpoint beside each
   *     peer segment's TCP one and serves RDMA connections as a source
   * @return a new {@code RdmaConfig}; this one is unchanged
   */
  public RdmaConfig withEnabled(boolean enabled) {
    return copy(c -> c.enabled = enabled);
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
    return copy(c -> c.provider = provider);
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
    return copy(c -> c.devices = devices);
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
    return copy(c -> c.lanes = lanes);
  }

  /**
   * A copy with {@link #maxSendWr()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param maxSendWr most send work requests outstanding on one queue pair
   * @return a new {@code RdmaConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.maxSendWr} if it is outside {@value
   *     #MIN_MAX_SEND_WR}..{@value #MAX_MAX_SEND_WR}
   */
  public RdmaConfig withMaxSendWr(int maxSendWr) {
    return copy(c -> c.maxSendWr = maxSendWr);
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
    return copy(c -> c.softwareDevices = softwareDevices);
  }

  /**
   * A copy with the rail circuit's thresholds (C13) replaced and every other component kept; the
   * new values are checked as by the constructor.
   *
   * @param railErrors failures within {@code railErrorWindowMillis} that open a (peer epoch, local
   *     rail, remote rail) pair
   * @param railErrorWindowMillis the window failures are counted in, in milliseconds
   * @param railCooldownMillis how long an opened pair is refused before one half-open trial, in
   *     milliseconds
   * @param railMaxCooldownMillis the longest cooldown a failed trial doubles it to, in
   *     milliseconds; at least {@code railCooldownMillis}
   * @param railProbeIntervalMillis the least time between two trials of a pair, in milliseconds;
   *     {@code 0} allows an immediate trial
   * @return a new {@code RdmaConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.<key>} for the first value outside its {@code
   *     MIN_*}..{@code MAX_*} range, or {@code rdma.railMaxCooldownMillis} if it is below {@code
   *     railCooldownMillis}
   */
  public RdmaConfig withRailPolicy(
      int railErrors,
      int railErrorWindowMillis,
      int railCooldownMillis,
      int railMaxCooldownMillis,
      int railProbeIntervalMillis) {
    return copy(
        c -> {
          c.railErrors = railErrors;
          c.railErrorWindowMillis = railErrorWindowMillis;
          c.railCooldownMillis = railCooldownMillis;
          c.railMaxCooldownMillis = railMaxCooldownMillis;
          c.railProbeIntervalMillis = railProbeIntervalMillis;
        });
  }

  /**
   * A copy with the post queue's aging (C14) replaced and every other component kept; the new
   * timeout is checked as by the constructor, any {@code perEntry} is accepted.
   *
   * @param priorityAgingMillis how long queued work of a lower tier waits before it is promoted one
   *     tier, in milliseconds
   * @param perEntry {@code true} to promote only the entries that aged out, {@code false} to
   *     promote a tier's whole queue once its oldest entry aged out
   * @return a new {@code RdmaConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.priorityAgingMillis} if it is outside {@value
   *     #MIN_PRIORITY_AGING_MILLIS}..{@value #MAX_PRIORITY_AGING_MILLIS}
   */
  public RdmaConfig withPriorityAging(int priorityAgingMillis, boolean perEntry) {
    return copy(
        c -> {
          c.priorityAgingMillis = priorityAgingMillis;
          c.priorityAgingPerEntry = perEntry;
        });
  }

  /**
   * A copy with {@link #softwareAddresses()} replaced and every other component kept; the new value
   * is checked as by the constructor and copied.
   *
   * @param softwareAddresses the IPv4 addresses the software provider's devices listen on, device
   *     {@code i} on entry {@code i} modulo the list's length; empty for every device on {@link
   *     #softwareAddress()}
   * @return a new {@code RdmaConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.softwareAddresses} if the list is {@code null} or
   *     holds more than {@value #MAX_SOFTWARE_ADDRESSES} addresses, or {@code
   *     rdma.softwareAddresses[<i>]} if an address is {@code null}, not a dotted IPv4 literal or
   *     repeats an earlier one
   */
  public RdmaConfig withSoftwareAddresses(List<String> softwareAddresses) {
    return copy(c -> c.softwareAddresses = softwareAddresses);
  }

  /**
   * A copy with {@link #gidIndex()} replaced and every other component kept; checked as by the
   * constructor.
   *
   * @param gidIndex {@code -1} to choose the GID automatically, or the index to pin strictly
   * @return a new {@code RdmaConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.gidIndex} if it is outside {@value
   *     #MIN_GID_INDEX}..{@value #MAX_GID_INDEX}
   */
  public RdmaConfig withGidIndex(int gidIndex) {
    return copy(c -> c.gidIndex = gidIndex);
  }

  /**
   * A copy with {@link #maxDirectBytes()} replaced and every other component kept; checked as by
   * the constructor.
   *
   * @param maxDirectBytes most bytes on loan to the RDMA devices at once
   * @return a new {@code RdmaConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.maxDirectBytes} if it is outside {@value
   *     #MIN_MAX_DIRECT_BYTES}..{@value #MAX_MAX_DIRECT_BYTES}
   */
  public RdmaConfig withMaxDirectBytes(long maxDirectBytes) {
    return copy(c -> c.maxDirectBytes = maxDirectBytes);
  }

  /**
   * A copy with {@link #selection()} replaced and every other component kept.
   *
   * @param selection the rail eligibility policy, already validated by its constructor
   * @return a new {@code RdmaConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.selection} if it is {@code null}
   */
  public RdmaConfig withSelection(RdmaSelectionConfig selection) {
    return copy(c -> c.selection = selection);
  }

  /**
   * The IPv4 address software device {@code device} listens on: entry {@code device} modulo the
   * length of {@link #softwareAddresses()}, or {@link #softwareAddress()} when that list is empty.
   * Any non-negative index is answered, also one at or past {@link #softwareDevices()}.
   *
   * @param device the software device's index, from {@code 0}
   * @return a dotted IPv4 literal
   * @throws IllegalArgumentException if {@code device} is negative
   */
  public String softwareAddressOf(int device) {
    if (device < 0) {
      throw new IllegalArgumentException("device must be non-negative, got " + device);
    }
    return softwareAddresses.isEmpty()
        ? softwareAddress
        : softwareAddresses.get(device % softwareAddresses.size());
  }

  /**
   * This record with the components {@code change} sets replaced, checked as by the constructor.
   */
  private RdmaConfig copy(Consumer<RdmaConfigCopy> change) {
    RdmaConfigCopy copy = new RdmaConfigCopy(this);
    change.accept(copy);
    return copy.build();
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
        r.intValue("maxCqes", DEFAULT_MAX_CQES, MIN_MAX_CQES, MAX_MAX_CQES),
        r.intValue("railErrors", DEFAULT_RAIL_ERRORS, MIN_RAIL_ERRORS, MAX_RAIL_ERRORS),
        r.intValue(
            "railErrorWindowMillis",
            DEFAULT_RAIL_ERROR_WINDOW_MILLIS,
            MIN_RAIL_ERROR_WINDOW_MILLIS,
            MAX_RAIL_ERROR_WINDOW_MILLIS),
        r.intValue(
            "railCooldownMillis",
            DEFAULT_RAIL_COOLDOWN_MILLIS,
            MIN_RAIL_COOLDOWN_MILLIS,
            MAX_RAIL_COOLDOWN_MILLIS),
        r.intValue(
            "railMaxCooldownMillis",
            DEFAULT_RAIL_MAX_COOLDOWN_MILLIS,
            MIN_RAIL_MAX_COOLDOWN_MILLIS,
            MAX_RAIL_MAX_COOLDOWN_MILLIS),
        r.intValue(
            "railProbeIntervalMillis",
            DEFAULT_RAIL_PROBE_INTERVAL_MILLIS,
            MIN_RAIL_PROBE_INTERVAL_MILLIS,
            MAX_RAIL_PROBE_INTERVAL_MILLIS),
        r.intValue(
            "priorityAgingMillis",
            DEFAULT_PRIORITY_AGING_MILLIS,
            MIN_PRIORITY_AGING_MILLIS,
            MAX_PRIORITY_AGING_MILLIS),
        r.booleanValue("priorityAgingPerEntry", DEFAULT_PRIORITY_AGING_PER_ENTRY),
        r.stringListValue("softwareAddresses", DEFAULT_SOFTWARE_ADDRESSES),
        r.intValue("gidIndex", DEFAULT_GID_INDEX, MIN_GID_INDEX, MAX_GID_INDEX),
        r.longValue(
            "maxDirectBytes", DEFAULT_MAX_DIRECT_BYTES, MIN_MAX_DIRECT_BYTES, MAX_MAX_DIRECT_BYTES),
        r.section(RdmaSelectionConfig.KEY, RdmaSelectionConfig.class, RdmaSelectionConfig::read),
        r.booleanValue("completionEvents", DEFAULT_COMPLETION_EVENTS));
  }
}
