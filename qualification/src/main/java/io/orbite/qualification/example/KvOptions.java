package io.orbite.qualification.example;

import io.orbite.engine.streams.StreamSettings;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;

/** What a run of {@link KvHandoff} does, and its command line ({@code USAGE}). */
public record KvOptions(
    int requests,
    StreamSettings.Ordering ordering,
    int blocksPerRequest,
    long pageBytes,
    long poolBytes,
    int batchTasks,
    long inflightBytes,
    long seed,
    Duration timeout,
    boolean corruptOneBlock,
    boolean warmup,
    int pushWindow,
    int layerRequests,
    int layers,
    int layerPages,
    long layerPageBytes,
    int layerDepth,
    int layerRounds,
    boolean notificationFault) {
  /** The command line, as {@code -h} prints it. */
  static final String USAGE =
      """
      usage: ./orbite example kv-handoff [options]
      Phases against one prefill process: the decode pulls every KV block through the Streams API;
      then it pulls a layered KV cache layer by layer, one submission per layer on one batch.
      Every byte checked.
        --requests N                  requests whose KV blocks are handed off (default 64)
        --ordering in-order|as-completed
                                      order of the stream's results (default in-order)
        --blocks B                    KV blocks per request (default 4)
        --page-kib K                  largest KV page; requests use K, K/2, K/4 or K/8 (default 2048)
        --pool-mib M                  prefill KV pool size, grown when the blocks need more (default 512)
        --batch-tasks T               most READs per engine batch (default 16)
        --inflight-mib M              most bytes the stream holds in flight (default 32)
        --seed S                      seed of sizes, placement and contents (default 20260101)
        --timeout-s S                 give up on the transfer after S seconds (default 300)
        --no-warmup                   skip the untimed warm-up passes (every block pulled, the same
                                      stream, until two passes in a row compile for at most 10 ms of
                                      JIT time, at most 12 passes; then the destination is reset to
                                      its guard pattern): time a cold JVM instead
        --push-window W               push phase: most requests the prefill has in flight, each one
                                      submission of its blocks' WRITEs with a notification (default 8)
        --layer-requests N            layer phase: requests in the prefill's layered region (default 8)
        --layers L                    layer phase: layers per request (default 32)
        --layer-pages P               layer phase: adjacent pages per layer (default 16)
        --layer-page-kib K            layer phase: page size (default 64)
        --layer-depth D               layer phase: most layers in flight, D >= 2: layer k+1 .. k+D-1
                                      are submitted before layer k is awaited (default 32: 32 MiB
                                      in flight with the default layer, as the stream pull holds)
        --layer-rounds R              layer phase: timed rounds, each pulling every layer of every
                                      request once (default 5: 1.25 GiB with the default layout)
        --json                        the report goes to stderr; stdout gets one JSON object with
                                      the figures (pulled_GBps, request_p50_ms, request_p99_ms,
                                      push_notified_GBps, notify_after_write_p50_us,
                                      layers_pulled_GBps, tasks_merged, physical_transfers, ...)
        --corrupt-one-block           test hook: the prefill damages one byte of one block after
                                      publishing it, and one byte of one layer of its layered
                                      region; the run must find both (the block in the pull and in
                                      the push) and fail
        --notification-fault          test hook: in the timed push pass the prefill submits one
                                      request without its notification and sends another's twice;
                                      the run must report one missing and one duplicate and fail""";

  public static KvOptions defaults() {
    return new KvOptions(
        64,
        StreamSettings.Ordering.IN_ORDER,
        4,
        2L << 20,
        512L << 20,
        16,
        32L << 20,
        20260101L,
        Duration.ofSeconds(300),
        false,
        true,
        8,
        8,
        32,
        16,
        64L << 10,
        32,
        5,
        false);
  }

  public KvPlan plan() {
    return new KvPlan(requests, blocksPerRequest, pageBytes, poolBytes, seed);
  }

  /** The layered region of the layer-by-layer phase. */
  public KvLayers layered() {
    return new KvLayers(layerRequests, layers, layerPages, layerPageBytes, seed);
  }

  /**
   * Parses command line options over {@link #defaults()}; throws IllegalArgumentException naming
   * the bad one.
   */
  public static KvOptions parse(List<String> args) {
    KvOptions d = defaults();
    int requests = d.requests;
    StreamSettings.Ordering ordering = d.ordering;
    int blocks = d.blocksPerRequest;
    long page = d.pageBytes;
    long pool = d.poolBytes;
    int batchTasks = d.batchTasks;
    long inflight = d.inflightBytes;
    long seed = d.seed;
    Duration timeout = d.timeout;
    boolean corrupt = d.corruptOneBlock;
    boolean warmup = d.warmup;
    int pushWindow = d.pushWindow;
    int layerRequests = d.layerRequests;
    int layers = d.layers;
    int layerPages = d.layerPages;
    long layerPage = d.layerPageBytes;
    int layerDepth = d.layerDepth;
    int layerRounds = d.layerRounds;
    boolean notificationFault = d.notificationFault;
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      String v = null;
      int eq = a.indexOf('=');
      if (a.startsWith("--") && eq > 0) {
        v = a.substring(eq + 1);
        a = a.substring(0, eq);
      }
      if (a.equals("--corrupt-one-block")) {
        corrupt = true;
        continue;
      }
      if (a.equals("--notification-fault")) {
        notificationFault = true;
        continue;
      }
      if (a.equals("--no-warmup")) {
        warmup = false;
        continue;
      }
      if (v == null) {
        if (i + 1 >= args.size()) {
          throw new IllegalArgumentException(a + " needs a value");
        }
        v = args.get(++i);
      }
      switch (a) {
        case "--requests" -> requests = positiveInt(a, v);
        case "--ordering" ->
            ordering =
                switch (v) {
                  case "in-order" -> StreamSettings.Ordering.IN_ORDER;
                  case "as-completed" -> StreamSettings.Ordering.AS_COMPLETED;
                  default ->
                      throw new IllegalArgumentException(
                          "--ordering: in-order or as-completed, got '" + v + "'");
                };
        case "--blocks" -> blocks = positiveInt(a, v);
        case "--page-kib" -> page = positiveInt(a, v) * 1024L;
        case "--pool-mib" -> pool = nonNegativeLong(a, v) << 20;
        case "--batch-tasks" -> batchTasks = positiveInt(a, v);
        case "--inflight-mib" -> inflight = positiveInt(a, v) * (1L << 20);
        case "--seed" -> seed = Long.parseLong(v);
        case "--timeout-s" -> timeout = Duration.ofSeconds(positiveInt(a, v));
        case "--push-window" -> pushWindow = positiveInt(a, v);
        case "--layer-requests" -> layerRequests = positiveInt(a, v);
        case "--layers" -> layers = positiveInt(a, v);
        case "--layer-pages" -> layerPages = positiveInt(a, v);
        case "--layer-page-kib" -> layerPage = positiveInt(a, v) * 1024L;
        case "--layer-depth" -> {
          layerDepth = positiveInt(a, v);
          if (layerDepth < 2) {
            throw new IllegalArgumentException(
                a + " must be >= 2 (layer k+1 is submitted before layer k is awaited), got 1");
          }
        }
        case "--layer-rounds" -> layerRounds = positiveInt(a, v);
        default -> throw new IllegalArgumentException("unknown option " + a);
      }
    }
    KvOptions o =
        new KvOptions(
            requests,
            ordering,
            blocks,
            page,
            pool,
            batchTasks,
            inflight,
            seed,
            timeout,
            corrupt,
            warmup,
            pushWindow,
            layerRequests,
            layers,
            layerPages,
            layerPage,
            layerDepth,
            layerRounds,
            notificationFault);
    o.plan(); // validates the sizes
    o.layered();
    return o;
  }

  private static int positiveInt(String option, String v) {
    int n = number(option, v, Integer::parseInt);
    if (n < 1) {
      throw new IllegalArgumentException(option + " must be >= 1, got " + n);
    }
    return n;
  }

  private static long nonNegativeLong(String option, String v) {
    long n = number(option, v, Long::parseLong);
    if (n < 0 || n > (1L << 30)) {
      throw new IllegalArgumentException(option + " must be 0.." + (1L << 30) + ", got " + n);
    }
    return n;
  }

  /** {@code v} as {@code parser} reads it, or an error naming {@code option}. */
  private static <N> N number(String option, String v, Function<String, N> parser) {
    try {
      return parser.apply(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + ": not a number: '" + v + "'");
    }
  }
}
