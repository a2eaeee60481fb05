package io.orbite.config;

import java.util.List;

/**
 * Which rails the RDMA transport may choose for a slice: hard limits the bandwidth-aware selection
 * can only narrow within, never widen (spec 002, "Device, port, GID and memory topology
 * discovery"). JSON section {@code rdma.selection}. See docs/configuration.md and
 * docs/transports/rdma.md.
 *
 * @param deviceMask the devices (rails, by name) allowed to carry slices; empty allows every device
 *     the transport opened. A name that is not among the opened devices fails the transport's start
 *     naming it. Default empty; at most {@value #MAX_DEVICE_MASK} names, each non-blank and none
 *     repeated.
 * @param preferredNumaNode the CPU NUMA node the requester's memory is taken to live on, which
 *     ranks the rails by locality (same node first); {@code -1} means unknown, every rail in the
 *     first tier. Default {@value #DEFAULT_PREFERRED_NUMA_NODE}; range {@value
 *     #MIN_PREFERRED_NUMA_NODE}..{@value #MAX_PREFERRED_NUMA_NODE}.
 * @param strictLocalNuma whether a rail known to sit on another NUMA node than {@link
 *     #preferredNumaNode()} is refused outright (a rail of unknown locality stays eligible, and so
 *     does every rail while the node is unknown). Default {@value #DEFAULT_STRICT_LOCAL_NUMA}.
 * @param customJsonPath a topology file read once when the transport starts (a priority matrix in
 *     the classic or the native form, see {@link RdmaPriorityMatrix#readFile}); empty means none.
 *     Not read when {@link #priorityMatrix()} is given. Default empty; at most {@value
 *     #MAX_PATH_LENGTH} characters.
 * @param priorityMatrix an inline priority matrix in the classic form; it wins over {@link
 *     #customJsonPath()}. Its shape is checked when the configuration is read, its names when the
 *     transport starts. Default {@link RdmaPriorityMatrix#NONE} (JSON {@code {}}): none.
 */
public record RdmaSelectionConfig(
    List<String> deviceMask,
    int preferredNumaNode,
    boolean strictLocalNuma,
    String customJsonPath,
    RdmaPriorityMatrix priorityMatrix) {
  /** JSON key of this section inside {@code rdma}. */
  static final String KEY = "selection";

  /** The path prefix of this section's messages. */
  static final String SECTION = RdmaConfig.SECTION + "." + KEY;

  /** Default {@link #deviceMask()}: empty, every opened device. */
  public static final List<String> DEFAULT_DEVICE_MASK = List.of();

  /** Most names {@link #deviceMask()} may hold (the reference's 64 stable NIC identities). */
  public static final int MAX_DEVICE_MASK = 64;

  /** Default {@link #preferredNumaNode()}: unknown. */
  public static final int DEFAULT_PREFERRED_NUMA_NODE = -1;

  /** Smallest accepted {@link #preferredNumaNode()}: unknown. */
  public static final int MIN_PREFERRED_NUMA_NODE = -1;

  /** Largest accepted {@link #preferredNumaNode()}. */
  public static final int MAX_PREFERRED_NUMA_NODE = 1023;

  /** Default {@link #strictLocalNuma()}: off, as in the reference. */
  public static final boolean DEFAULT_STRICT_LOCAL_NUMA = false;

  /** Default {@link #customJsonPath()}: none. */
  public static final String DEFAULT_CUSTOM_JSON_PATH = "";

  /** Longest accepted {@link #customJsonPath()}. */
  public static final int MAX_PATH_LENGTH = 4096;

  /** Default {@link #priorityMatrix()}: none. */
  public static final RdmaPriorityMatrix DEFAULT_PRIORITY_MATRIX = RdmaPriorityMatrix.NONE;

  /**
   * Validates every component: {@link #deviceMask()} at most {@value #MAX_DEVICE_MASK} distinct
   * non-blank names, {@link #preferredNumaNode()} in its range, {@link #customJsonPath()} non-null
   * and at most {@value #MAX_PATH_LENGTH} characters, {@link #priorityMatrix()} non-null; the list
   * is copied.
   *
   * @throws ConfigException naming {@code rdma.selection.<key>} (or {@code
   *     rdma.selection.deviceMask[<i>]} for one name) for the first invalid component
   */
  public RdmaSelectionConfig {
    deviceMask = Checks.requireNames(SECTION + ".deviceMask", deviceMask, MAX_DEVICE_MASK);
    Checks.requireRange(
        SECTION + ".preferredNumaNode",
        preferredNumaNode,
        MIN_PREFERRED_NUMA_NODE,
        MAX_PREFERRED_NUMA_NODE);
    Checks.requireNonNull(SECTION + ".customJsonPath", customJsonPath);
    if (customJsonPath.length() > MAX_PATH_LENGTH) {
      throw new ConfigException(
          SECTION + ".customJsonPath",
          "must be at most " + MAX_PATH_LENGTH + " characters, got " + customJsonPath.length());
    }
    Checks.requireNonNull(RdmaPriorityMatrix.INLINE_PATH, priorityMatrix);
  }

  /**
   * A policy without an inline priority matrix.
   *
   * @param deviceMask the devices allowed to carry slices; empty for every opened device
   * @param preferredNumaNode the requester memory's NUMA node, {@code -1} for unknown
   * @param strictLocalNuma whether rails known to sit on another node are refused
   * @param customJsonPath the topology file, empty for none
   * @throws ConfigException as the canonical constructor
   */
  public RdmaSelectionConfig(
      List<String> deviceMask,
      int preferredNumaNode,
      boolean strictLocalNuma,
      String customJsonPath) {
    this(deviceMask, preferredNumaNode, strictLocalNuma, customJsonPath, DEFAULT_PRIORITY_MATRIX);
  }

  /**
   * All components at their defaults.
   *
   * @return every opened device eligible, locality unknown, no topology file
   */
  public static RdmaSelectionConfig defaults() {
    return new RdmaSelectionConfig(
        DEFAULT_DEVICE_MASK,
        DEFAULT_PREFERRED_NUMA_NODE,
        DEFAULT_STRICT_LOCAL_NUMA,
        DEFAULT_CUSTOM_JSON_PATH,
        DEFAULT_PRIORITY_MATRIX);
  }

  /**
   * A copy with {@link #deviceMask()} replaced; checked as by the constructor and copied.
   *
   * @param deviceMask the devices allowed to carry slices; empty for every opened device
   * @return a new {@code RdmaSelectionConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.selection.deviceMask} or one of its entries
   */
  public RdmaSelectionConfig withDeviceMask(List<String> deviceMask) {
    return new RdmaSelectionConfig(
        deviceMask, preferredNumaNode, strictLocalNuma, customJsonPath, priorityMatrix);
  }

  /**
   * A copy with the NUMA policy replaced; checked as by the constructor.
   *
   * @param preferredNumaNode the requester memory's NUMA node, {@code -1} for unknown
   * @param strictLocalNuma whether rails known to sit on another node are refused
   * @return a new {@code RdmaSelectionConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.selection.preferredNumaNode} if it is out of range
   */
  public RdmaSelectionConfig withNuma(int preferredNumaNode, boolean strictLocalNuma) {
    return new RdmaSelectionConfig(
        deviceMask, preferredNumaNode, strictLocalNuma, customJsonPath, priorityMatrix);
  }

  /**
   * A copy with {@link #customJsonPath()} replaced; checked as by the constructor.
   *
   * @param customJsonPath the topology file, empty for none
   * @return a new {@code RdmaSelectionConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.selection.customJsonPath} if it is null or too long
   */
  public RdmaSelectionConfig withCustomJsonPath(String customJsonPath) {
    return new RdmaSelectionConfig(
        deviceMask, preferredNumaNode, strictLocalNuma, customJsonPath, priorityMatrix);
  }

  /**
   * A copy with {@link #priorityMatrix()} replaced; checked as by the constructor.
   *
   * @param priorityMatrix the inline matrix, {@link RdmaPriorityMatrix#NONE} for none
   * @return a new {@code RdmaSelectionConfig}; this one is unchanged
   * @throws ConfigException naming {@code rdma.selection.priorityMatrix} if it is null
   */
  public RdmaSelectionConfig withPriorityMatrix(RdmaPriorityMatrix priorityMatrix) {
    return new RdmaSelectionConfig(
        deviceMask, preferredNumaNode, strictLocalNuma, customJsonPath, priorityMatrix);
  }

  static RdmaSelectionConfig read(ConfigReader r) {
    return new RdmaSelectionConfig(
        r.stringListValue("deviceMask", DEFAULT_DEVICE_MASK),
        r.intValue(
            "preferredNumaNode",
            DEFAULT_PREFERRED_NUMA_NODE,
            MIN_PREFERRED_NUMA_NODE,
            MAX_PREFERRED_NUMA_NODE),
        r.booleanValue("strictLocalNuma", DEFAULT_STRICT_LOCAL_NUMA),
        r.stringValue("customJsonPath", DEFAULT_CUSTOM_JSON_PATH),
        r.priorityMatrixValue("priorityMatrix"));
  }
}
