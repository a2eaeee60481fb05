package io.orbite.config;

import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * One numeric key of the schema with the default and range the specification gives, written out as
 * literals (not taken from the production constants) so that a drifting constant makes tests fail.
 *
 * <p>{@code companions} are raw JSON members (for example {@code "railMaxCooldownMillis":86400000})
 * set beside the key in every {@link #document} and in {@link #base()}: the other keys a
 * cross-field rule needs so that every value of the key's own range is valid. Empty for most keys.
 *
 * <p>Longer than 500 lines: it is the schema's table of numeric keys, one entry per key of every
 * section, written out as literals on purpose; splitting it by section would only scatter the one
 * list the strictness tests walk.
 */
record NumericKey(
    String path,
    long defaultValue,
    long min,
    long max,
    Function<EngineConfig, Long> get,
    BiFunction<EngineConfig, Long, EngineConfig> with,
    String companions) {

  /** A key that no cross-field rule ties to another: no companions. */
  NumericKey(
      String path,
      long defaultValue,
      long min,
      long max,
      Function<EngineConfig, Long> get,
      BiFunction<EngineConfig, Long, EngineConfig> with) {
    this(path, defaultValue, min, max, get, with, "");
  }

  /** The section key ({@code tcp} for {@code tcp.lanes}). */
  String section() {
    return path.substring(0, path.indexOf('.'));
  }

  /**
   * The key inside its section ({@code lanes} for {@code tcp.lanes}, {@code metrics.port} for
   * {@code observability.metrics.port}).
   */
  String key() {
    return path.substring(path.indexOf('.') + 1);
  }

  /**
   * A minimal document setting this key to {@code rawJsonValue}, for example {"tcp":{"lanes":0}} or
   * {"observability":{"metrics":{"port":0}}}, with the {@link #companions()} beside it.
   */
  String document(String rawJsonValue) {
    String[] parts = path.split("\\.");
    String member = "\"" + parts[parts.length - 1] + "\":" + rawJsonValue;
    return nested(companions.isEmpty() ? member : companions + "," + member);
  }

  /**
   * The configuration the key's copy method is tried on: the defaults with the {@link
   * #companions()} set, so both ends of the key's range are valid there.
   */
  EngineConfig base() {
    return EngineConfig.fromJson(nested(companions));
  }

  /** {@code members} inside the objects of this key's path, for example {"tcp":{members}}. */
  private String nested(String members) {
    String[] parts = path.split("\\.");
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < parts.length - 1; i++) {
      b.append("{\"").append(parts[i]).append("\":");
    }
    b.append('{').append(members).append('}');
    b.append("}".repeat(parts.length - 1));
    return b.toString();
  }

  @Override
  public String toString() {
    return path;
  }

  /**
   * {@code c} with one of the RDMA budgets replaced through the canonical constructor (the four
   * budgets have no copy method of their own).
   */
  private static EngineConfig withRdmaBudget(EngineConfig c, String key, long value) {
    RdmaConfig r = c.rdma();
    int v = Math.toIntExact(value);
    return c.withRdma(
        new RdmaConfig(
            r.enabled(),
            r.provider(),
            r.devices(),
            r.lanes(),
            r.softwareAddress(),
            r.softwareDevices(),
            key.equals("maxEndpoints") ? v : r.maxEndpoints(),
            key.equals("maxGrants") ? v : r.maxGrants(),
            key.equals("maxSendWr") ? v : r.maxSendWr(),
            key.equals("maxCqes") ? v : r.maxCqes(),
            r.railErrors(),
            r.railErrorWindowMillis(),
            r.railCooldownMillis(),
            r.railMaxCooldownMillis(),
            r.railProbeIntervalMillis(),
            r.priorityAgingMillis(),
            r.priorityAgingPerEntry(),
            r.softwareAddresses(),
            r.gidIndex(),
            r.maxDirectBytes(),
            r.selection()));
  }

  /**
   * {@code c} with the post queue's aging timeout replaced through {@code withPriorityAging},
   * keeping its mode.
   */
  private static EngineConfig withAgingMillis(EngineConfig c, long value) {
    RdmaConfig r = c.rdma();
    return c.withRdma(r.withPriorityAging(Math.toIntExact(value), r.priorityAgingPerEntry()));
  }

  /**
   * {@code c} with one of the rail circuit's thresholds replaced through {@code withRailPolicy}.
   */
  private static EngineConfig withRailKey(EngineConfig c, String key, long value) {
    RdmaConfig r = c.rdma();
    int v = Math.toIntExact(value);
    return c.withRdma(
        r.withRailPolicy(
            key.equals("railErrors") ? v : r.railErrors(),
            key.equals("railErrorWindowMillis") ? v : r.railErrorWindowMillis(),
            key.equals("railCooldownMillis") ? v : r.railCooldownMillis(),
            key.equals("railMaxCooldownMillis") ? v : r.railMaxCooldownMillis(),
            key.equals("railProbeIntervalMillis") ? v : r.railProbeIntervalMillis()));
  }

  static final List<NumericKey> ALL =
      List.of(
          new NumericKey(
              "listen.port",
              0,
              0,
              65535,
              c -> (long) c.listen().port(),
              (c, v) -> c.withListen(c.listen().withPort(Math.toIntExact(v)))),
          new NumericKey(
              "tcp.lanes",
              2,
              1,
              64,
              c -> (long) c.tcp().lanes(),
              (c, v) -> c.withTcp(c.tcp().withLanes(Math.toIntExact(v)))),
          new NumericKey(
              "tcp.socketBufferBytes",
              262144,
              65536,
              268435456,
              c -> (long) c.tcp().socketBufferBytes(),
              (c, v) -> c.withTcp(c.tcp().withSocketBufferBytes(Math.toIntExact(v)))),
          new NumericKey(
              "tcp.maxFramePayloadBytes",
              16777216,
              4096,
              1073741824,
              c -> (long) c.tcp().maxFramePayloadBytes(),
              (c, v) -> c.withTcp(c.tcp().withMaxFramePayloadBytes(Math.toIntExact(v)))),
          new NumericKey(
              "tcp.connectTimeoutMillis",
              5000,
              1,
              600000,
              c -> (long) c.tcp().connectTimeoutMillis(),
              (c, v) -> c.withTcp(c.tcp().withConnectTimeoutMillis(Math.toIntExact(v)))),
          new NumericKey(
              "tcp.laneWindowFrames",
              1024,
              1,
              65536,
              c -> (long) c.tcp().laneWindowFrames(),
              (c, v) -> c.withTcp(c.tcp().withLaneWindowFrames(Math.toIntExact(v)))),
          new NumericKey(
              "tcp.laneWindowBytes",
              67108864L,
              1048576L,
              4294967296L,
              c -> c.tcp().laneWindowBytes(),
              (c, v) -> c.withTcp(c.tcp().withLaneWindowBytes(v))),
          new NumericKey(
              "budgets.maxBatches",
              256,
              1,
              1000000,
              c -> (long) c.budgets().maxBatches(),
              (c, v) -> c.withBudgets(c.budgets().withMaxBatches(Math.toIntExact(v)))),
          new NumericKey(
              "budgets.maxBatchCapacity",
              65536,
              1,
              1048576,
              c -> (long) c.budgets().maxBatchCapacity(),
              (c, v) -> c.withBudgets(c.budgets().withMaxBatchCapacity(Math.toIntExact(v)))),
          new NumericKey(
              "budgets.maxTasksInFlight",
              262144,
              1,
              16777216,
              c -> (long) c.budgets().maxTasksInFlight(),
              (c, v) -> c.withBudgets(c.budgets().withMaxTasksInFlight(Math.toIntExact(v)))),
          new NumericKey(
              "budgets.maxInflightBytes",
              8589934592L,
              1048576L,
              1099511627776L,
              c -> c.budgets().maxInflightBytes(),
              (c, v) -> c.withBudgets(c.budgets().withMaxInflightBytes(v))),
          new NumericKey(
              "budgets.maxEndpoints",
              64,
              1,
              4096,
              c -> (long) c.budgets().maxEndpoints(),
              (c, v) -> c.withBudgets(c.budgets().withMaxEndpoints(Math.toIntExact(v)))),
          new NumericKey(
              "budgets.maxRegistrations",
              4096,
              1,
              1000000,
              c -> (long) c.budgets().maxRegistrations(),
              (c, v) -> c.withBudgets(c.budgets().withMaxRegistrations(Math.toIntExact(v)))),
          new NumericKey(
              "budgets.maxPeerSegments",
              256,
              1,
              65536,
              c -> (long) c.budgets().maxPeerSegments(),
              (c, v) -> c.withBudgets(c.budgets().withMaxPeerSegments(Math.toIntExact(v)))),
          new NumericKey(
              "slicing.baseBlockBytes",
              65536,
              4096,
              67108864,
              c -> c.slicing().baseBlockBytes(),
              (c, v) -> c.withSlicing(c.slicing().withBaseBlockBytes(v))),
          new NumericKey(
              "slicing.maxReadSlices",
              64,
              1,
              1024,
              c -> (long) c.slicing().maxReadSlices(),
              (c, v) -> c.withSlicing(c.slicing().withMaxReadSlices(Math.toIntExact(v)))),
          new NumericKey(
              "slicing.maxWriteSlices",
              32,
              1,
              1024,
              c -> (long) c.slicing().maxWriteSlices(),
              (c, v) -> c.withSlicing(c.slicing().withMaxWriteSlices(Math.toIntExact(v)))),
          new NumericKey(
              "timeouts.defaultDeadlineMillis",
              30000,
              1,
              86400000,
              c -> c.timeouts().defaultDeadlineMillis(),
              (c, v) -> c.withTimeouts(c.timeouts().withDefaultDeadlineMillis(v))),
          new NumericKey(
              "timeouts.destructionWindowMillis",
              30000,
              1,
              3600000,
              c -> c.timeouts().destructionWindowMillis(),
              (c, v) -> c.withTimeouts(c.timeouts().withDestructionWindowMillis(v))),
          new NumericKey(
              "timeouts.describeTimeoutMillis",
              5000,
              1,
              600000,
              c -> c.timeouts().describeTimeoutMillis(),
              (c, v) -> c.withTimeouts(c.timeouts().withDescribeTimeoutMillis(v))),
          new NumericKey(
              "retry.maxTransportFailovers",
              1,
              0,
              4,
              c -> (long) c.retry().maxTransportFailovers(),
              (c, v) -> c.withRetry(c.retry().withMaxTransportFailovers(Math.toIntExact(v)))),
          new NumericKey(
              "merge.maxBytes",
              1048576,
              4096,
              1073741824,
              c -> c.merge().maxBytes(),
              (c, v) -> c.withMerge(c.merge().withMaxBytes(v))),
          new NumericKey(
              "shm.maxMappings",
              1024,
              1,
              65536,
              c -> (long) c.shm().maxMappings(),
              (c, v) -> c.withShm(c.shm().withMaxMappings(Math.toIntExact(v)))),
          new NumericKey(
              "shm.lanes",
              2,
              1,
              16,
              c -> (long) c.shm().lanes(),
              (c, v) -> c.withShm(c.shm().withLanes(Math.toIntExact(v)))),
          new NumericKey(
              "file.lanes",
              1,
              1,
              64,
              c -> (long) c.file().lanes(),
              (c, v) -> c.withFile(c.file().withLanes(Math.toIntExact(v)))),
          new NumericKey(
              "file.queueDepth",
              64,
              1,
              4096,
              c -> (long) c.file().queueDepth(),
              (c, v) -> c.withFile(c.file().withQueueDepth(Math.toIntExact(v)))),
          new NumericKey(
              "file.maxChunkBytes",
              1048576,
              4096,
              1073741824,
              c -> (long) c.file().maxChunkBytes(),
              (c, v) -> c.withFile(c.file().withMaxChunkBytes(Math.toIntExact(v)))),
          new NumericKey(
              "file.maxFileSegments",
              64,
              1,
              65536,
              c -> (long) c.file().maxFileSegments(),
              (c, v) -> c.withFile(c.file().withMaxFileSegments(Math.toIntExact(v)))),
          new NumericKey(
              "file.channelThreads",
              4,
              1,
              256,
              c -> (long) c.file().channelThreads(),
              (c, v) -> c.withFile(c.file().withChannelThreads(Math.toIntExact(v)))),
          new NumericKey(
              "rdma.lanes",
              2,
              1,
              16,
              c -> (long) c.rdma().lanes(),
              (c, v) -> c.withRdma(c.rdma().withLanes(Math.toIntExact(v)))),
          new NumericKey(
              "rdma.softwareDevices",
              2,
              1,
              8,
              c -> (long) c.rdma().softwareDevices(),
              (c, v) -> c.withRdma(c.rdma().withSoftwareDevices(Math.toIntExact(v)))),
          new NumericKey(
              "rdma.maxEndpoints",
              64,
              1,
              4096,
              c -> (long) c.rdma().maxEndpoints(),
              (c, v) -> withRdmaBudget(c, "maxEndpoints", v)),
          new NumericKey(
              "rdma.maxGrants",
              1024,
              1,
              65536,
              c -> (long) c.rdma().maxGrants(),
              (c, v) -> withRdmaBudget(c, "maxGrants", v)),
          new NumericKey(
              "rdma.maxSendWr",
              1024,
              1,
              4096,
              c -> (long) c.rdma().maxSendWr(),
              (c, v) -> withRdmaBudget(c, "maxSendWr", v)),
          new NumericKey(
              "rdma.maxCqes",
              32768,
              16,
              65536,
              c -> (long) c.rdma().maxCqes(),
              (c, v) -> withRdmaBudget(c, "maxCqes", v)),
          new NumericKey(
              "rdma.railErrors",
              3,
              1,
              1000,
              c -> (long) c.rdma().railErrors(),
              (c, v) -> withRailKey(c, "railErrors", v)),
          new NumericKey(
              "rdma.railErrorWindowMillis",
              10000,
              1,
              3600000,
              c -> (long) c.rdma().railErrorWindowMillis(),
              (c, v) -> withRailKey(c, "railErrorWindowMillis", v)),
          new NumericKey(
              "rdma.railCooldownMillis",
              30000,
              1,
              3600000,
              c -> (long) c.rdma().railCooldownMillis(),
              (c, v) -> withRailKey(c, "railCooldownMillis", v),
              "\"railMaxCooldownMillis\":86400000"),
          new NumericKey(
              "rdma.railMaxCooldownMillis",
              300000,
              1,
              86400000,
              c -> (long) c.rdma().railMaxCooldownMillis(),
              (c, v) -> withRailKey(c, "railMaxCooldownMillis", v),
              "\"railCooldownMillis\":1"),
          new NumericKey(
              "rdma.railProbeIntervalMillis",
              1000,
              0,
              3600000,
              c -> (long) c.rdma().railProbeIntervalMillis(),
              (c, v) -> withRailKey(c, "railProbeIntervalMillis", v)),
          new NumericKey(
              "rdma.priorityAgingMillis",
              10,
              1,
              60000,
              c -> (long) c.rdma().priorityAgingMillis(),
              (c, v) -> withAgingMillis(c, v)),
          new NumericKey(
              "rdma.gidIndex",
              -1,
              -1,
              255,
              c -> (long) c.rdma().gidIndex(),
              (c, v) -> c.withRdma(c.rdma().withGidIndex(Math.toIntExact(v)))),
          new NumericKey(
              "rdma.maxDirectBytes",
              67108864,
              65536,
              1099511627776L,
              c -> c.rdma().maxDirectBytes(),
              (c, v) -> c.withRdma(c.rdma().withMaxDirectBytes(v))),
          new NumericKey(
              "rdma.selection.preferredNumaNode",
              -1,
              -1,
              1023,
              c -> (long) c.rdma().selection().preferredNumaNode(),
              (c, v) ->
                  c.withRdma(
                      c.rdma()
                          .withSelection(
                              c.rdma()
                                  .selection()
                                  .withNuma(
                                      Math.toIntExact(v),
                                      c.rdma().selection().strictLocalNuma())))),
          new NumericKey(
              "notifications.inboxCapacity",
              4096,
              1,
              1048576,
              c -> (long) c.notifications().inboxCapacity(),
              (c, v) ->
                  c.withNotifications(c.notifications().withInboxCapacity(Math.toIntExact(v)))),
          new NumericKey(
              "notifications.inboxBytes",
              67108864L,
              16777216L,
              17179869184L,
              c -> c.notifications().inboxBytes(),
              (c, v) -> c.withNotifications(c.notifications().withInboxBytes(v))),
          new NumericKey(
              "notifications.maxTagBytes",
              256,
              1,
              4096,
              c -> (long) c.notifications().maxTagBytes(),
              (c, v) -> c.withNotifications(c.notifications().withMaxTagBytes(Math.toIntExact(v)))),
          new NumericKey(
              "notifications.maxPayloadBytes",
              65536,
              0,
              8388608,
              c -> (long) c.notifications().maxPayloadBytes(),
              (c, v) ->
                  c.withNotifications(c.notifications().withMaxPayloadBytes(Math.toIntExact(v)))),
          new NumericKey(
              "notifications.answerTimeoutMillis",
              10000,
              1,
              600000,
              c -> (long) c.notifications().answerTimeoutMillis(),
              (c, v) ->
                  c.withNotifications(
                      c.notifications().withAnswerTimeoutMillis(Math.toIntExact(v)))),
          new NumericKey(
              "observability.metrics.port",
              0,
              0,
              65535,
              c -> (long) c.observability().metrics().port(),
              (c, v) ->
                  c.withObservability(
                      c.observability()
                          .withMetrics(c.observability().metrics().withPort(Math.toIntExact(v))))),
          new NumericKey(
              "observability.dashboard.port",
              0,
              0,
              65535,
              c -> (long) c.observability().dashboard().port(),
              (c, v) ->
                  c.withObservability(
                      c.observability()
                          .withDashboard(
                              c.observability().dashboard().withPort(Math.toIntExact(v))))),
          new NumericKey(
              "observability.tickMillis",
              1000,
              100,
              60000,
              c -> (long) c.observability().tickMillis(),
              (c, v) -> c.withObservability(c.observability().withTickMillis(Math.toIntExact(v)))),
          new NumericKey(
              "directory.consistencyTimeoutMillis",
              5000,
              100,
              60000,
              c -> (long) c.directory().consistencyTimeoutMillis(),
              (c, v) ->
                  c.withDirectory(c.directory().withConsistencyTimeoutMillis(Math.toIntExact(v)))),
          new NumericKey(
              "directory.refreshMillis",
              1000,
              50,
              60000,
              c -> (long) c.directory().refreshMillis(),
              (c, v) -> c.withDirectory(c.directory().withRefreshMillis(Math.toIntExact(v)))));
}
