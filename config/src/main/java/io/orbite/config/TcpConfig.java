package io.orbite.config;

/**
 * TCP transport between engines. JSON section {@code tcp}.
 *
 * <p>Why this file is over 500 lines: it is a plain record of fourteen checked settings, each with
 * its range constants, its line in the compact constructor and the reader, and the {@code with*}
 * copies its API offers; splitting it would only spread one section's keys over several files.
 *
 * @param lanes number of parallel TCP connections (lanes) opened to each peer. Default {@value
 *     #DEFAULT_LANES}; range {@value #MIN_LANES}..{@value #MAX_LANES}.
 * @param socketBufferBytes size requested for each socket's send and receive buffers
 *     (SO_SNDBUF/SO_RCVBUF), in bytes. Default {@value #DEFAULT_SOCKET_BUFFER_BYTES} (256 KiB: on
 *     loopback it cost less CPU per byte than 4 MiB, see docs/transports/tcp.md; raise it for links
 *     with a large bandwidth-delay product); range {@value #MIN_SOCKET_BUFFER_BYTES}..{@value
 *     #MAX_SOCKET_BUFFER_BYTES} (64 KiB..256 MiB).
 * @param maxFramePayloadBytes largest payload one frame may carry, in bytes; larger transfers are
 *     split. Default {@value #DEFAULT_MAX_FRAME_PAYLOAD_BYTES} (16 MiB); range {@value
 *     #MIN_MAX_FRAME_PAYLOAD_BYTES}..{@value #MAX_MAX_FRAME_PAYLOAD_BYTES} (4 KiB..1 GiB).
 * @param connectTimeoutMillis how long to wait for a lane's TCP connect to complete, in
 *     milliseconds. Default {@value #DEFAULT_CONNECT_TIMEOUT_MILLIS}; range {@value
 *     #MIN_CONNECT_TIMEOUT_MILLIS}..{@value #MAX_CONNECT_TIMEOUT_MILLIS} (10 minutes).
 * @param laneWindowFrames most frames that may be sent on one lane and not yet acknowledged, in
 *     frames. Default {@value #DEFAULT_LANE_WINDOW_FRAMES}; range {@value
 *     #MIN_LANE_WINDOW_FRAMES}..{@value #MAX_LANE_WINDOW_FRAMES}.
 * @param laneWindowBytes most payload bytes that may be sent on one lane and not yet acknowledged,
 *     in bytes. Default {@value #DEFAULT_LANE_WINDOW_BYTES} (64 MiB); range {@value
 *     #MIN_LANE_WINDOW_BYTES}..{@value #MAX_LANE_WINDOW_BYTES} (1 MiB..4 GiB).
 * @param retryReadOnOtherLane whether, when a lane's connection breaks, its READ frames and its
 *     frames never sent are sent once more (after the lane drained them, if their deadline allows)
 *     on the open lane to the same peer incarnation with the fewest bytes charged. A WRITE that may
 *     have reached the socket is never sent again (effect UNKNOWN). Off: such frames fail
 *     PEER_LOST. Default {@value #DEFAULT_RETRY_READ_ON_OTHER_LANE}.
 * @param reconnectInitialBackoffMillis a lane whose connection broke (and drained) reconnects to
 *     the same peer incarnation after this long, then after twice that, and so on up to {@code
 *     reconnectMaxBackoffMillis}, each step with up to 25% random jitter. Default {@value
 *     #DEFAULT_RECONNECT_INITIAL_BACKOFF_MILLIS}; range {@value
 *     #MIN_RECONNECT_INITIAL_BACKOFF_MILLIS}..{@value #MAX_RECONNECT_INITIAL_BACKOFF_MILLIS}.
 * @param reconnectMaxBackoffMillis the longest step between reconnection attempts; at least {@code
 *     reconnectInitialBackoffMillis}. Default {@value #DEFAULT_RECONNECT_MAX_BACKOFF_MILLIS}; range
 *     {@value #MIN_RECONNECT_MAX_BACKOFF_MILLIS}..{@value #MAX_RECONNECT_MAX_BACKOFF_MILLIS}.
 * @param reconnectGiveUpMillis how long a channel with no working lane keeps reconnecting before
 *     the peer is declared lost (its gate closes PEER_LOST, {@code PeerLost} is published). Default
 *     {@value #DEFAULT_RECONNECT_GIVE_UP_MILLIS}; range {@value
 *     #MIN_RECONNECT_GIVE_UP_MILLIS}..{@value #MAX_RECONNECT_GIVE_UP_MILLIS}.
 * @param waitWhileReconnecting whether a task submitted while no lane works (the channel is
 *     RECONNECTING) waits for a lane, within its deadline; {@code false} fails it PEER_LOST at
 *     once, never sent. Default {@value #DEFAULT_WAIT_WHILE_RECONNECTING}.
 * @param keepaliveIntervalMillis an idle requester lane sends a keepalive after this long without
 *     traffic. Default {@value #DEFAULT_KEEPALIVE_INTERVAL_MILLIS}; range {@value
 *     #MIN_KEEPALIVE_INTERVAL_MILLIS}..{@value #MAX_KEEPALIVE_INTERVAL_MILLIS}.
 * @param livenessTimeoutMillis a lane that has heard nothing from its peer for this long while
 *     expecting an answer (a keepalive or a request outstanding) is lost: it drains and reconnects.
 *     The bound within which a dead, stopped or replaced peer is noticed with no task running; more
 *     than {@code keepaliveIntervalMillis}. Default {@value #DEFAULT_LIVENESS_TIMEOUT_MILLIS};
 *     range {@value #MIN_LIVENESS_TIMEOUT_MILLIS}..{@value #MAX_LIVENESS_TIMEOUT_MILLIS}.
 * @param sourceIdleTimeoutMillis source side: an accepted lane that received no request (keepalives
 *     do not count) for this long is closed and its loans returned; the requester reconnects when
 *     it next needs it. 0: never. Default {@value #DEFAULT_SOURCE_IDLE_TIMEOUT_MILLIS} (5 minutes);
 *     range {@value #MIN_SOURCE_IDLE_TIMEOUT_MILLIS}..{@value #MAX_SOURCE_IDLE_TIMEOUT_MILLIS} (1
 *     day).
 */
public record TcpConfig(
    int lanes,
    int socketBufferBytes,
    int maxFramePayloadBytes,
    int connectTimeoutMillis,
    int laneWindowFrames,
    long laneWindowBytes,
    boolean retryReadOnOtherLane,
    int reconnectInitialBackoffMillis,
    int reconnectMaxBackoffMillis,
    int reconnectGiveUpMillis,
    boolean waitWhileReconnecting,
    int keepaliveIntervalMillis,
    int livenessTimeoutMillis,
    long sourceIdleTimeoutMillis) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "tcp";

  /** Default {@link #lanes()}. */
  public static final int DEFAULT_LANES = 2;

  /** Smallest accepted {@link #lanes()}. */
  public static final int MIN_LANES = 1;

  /** Largest accepted {@link #lanes()}. */
  public static final int MAX_LANES = 64;

  /** Default {@link #socketBufferBytes()}: 256 KiB. */
  public static final int DEFAULT_SOCKET_BUFFER_BYTES = 256 * 1024;

  /** Smallest accepted {@link #socketBufferBytes()}: 64 KiB. */
  public static final int MIN_SOCKET_BUFFER_BYTES = 64 * 1024;

  /** Largest accepted {@link #socketBufferBytes()}: 256 MiB. */
  public static final int MAX_SOCKET_BUFFER_BYTES = 256 * 1024 * 1024;

  /** Default {@link #maxFramePayloadBytes()}: 16 MiB. */
  public static final int DEFAULT_MAX_FRAME_PAYLOAD_BYTES = 16 * 1024 * 1024;

  /** Smallest accepted {@link #maxFramePayloadBytes()}: 4 KiB. */
  public static final int MIN_MAX_FRAME_PAYLOAD_BYTES = 4 * 1024;

  /** Largest accepted {@link #maxFramePayloadBytes()}: 1 GiB. */
  public static final int MAX_MAX_FRAME_PAYLOAD_BYTES = 1024 * 1024 * 1024;

  /** Default {@link #connectTimeoutMillis()}: 5 seconds. */
  public static final int DEFAULT_CONNECT_TIMEOUT_MILLIS = 5_000;

  /** Smallest accepted {@link #connectTimeoutMillis()}. */
  public static final int MIN_CONNECT_TIMEOUT_MILLIS = 1;

  /** Largest accepted {@link #connectTimeoutMillis()}: 10 minutes. */
  public static final int MAX_CONNECT_TIMEOUT_MILLIS = 600_000;

  /** Default {@link #laneWindowFrames()}. */
  public static final int DEFAULT_LANE_WINDOW_FRAMES = 1024;

  /** Smallest accepted {@link #laneWindowFrames()}. */
  public static final int MIN_LANE_WINDOW_FRAMES = 1;

  /** Largest accepted {@link #laneWindowFrames()}. */
  public static final int MAX_LANE_WINDOW_FRAMES = 65_536;

  /** Default {@link #laneWindowBytes()}: 64 MiB. */
  public static final long DEFAULT_LANE_WINDOW_BYTES = 64L * 1024 * 1024;

  /** Smallest accepted {@link #laneWindowBytes()}: 1 MiB. */
  public static final long MIN_LANE_WINDOW_BYTES = 1024L * 1024;

  /** Largest accepted {@link #laneWindowBytes()}: 4 GiB. */
  public static final long MAX_LANE_WINDOW_BYTES = 4L * 1024 * 1024 * 1024;

  /** Default {@link #reconnectInitialBackoffMillis()}. */
  public static final int DEFAULT_RECONNECT_INITIAL_BACKOFF_MILLIS = 20;

  /** Minimum {@link #reconnectInitialBackoffMillis()}. */
  public static final int MIN_RECONNECT_INITIAL_BACKOFF_MILLIS = 1;

  /** Maximum {@link #reconnectInitialBackoffMillis()}. */
  public static final int MAX_RECONNECT_INITIAL_BACKOFF_MILLIS = 60_000;

  /** Default {@link #reconnectMaxBackoffMillis()}. */
  public static final int DEFAULT_RECONNECT_MAX_BACKOFF_MILLIS = 500;

  /** Minimum {@link #reconnectMaxBackoffMillis()}. */
  public static final int MIN_RECONNECT_MAX_BACKOFF_MILLIS = 1;

  /** Maximum {@link #reconnectMaxBackoffMillis()}. */
  public static final int MAX_RECONNECT_MAX_BACKOFF_MILLIS = 600_000;

  /** Default {@link #reconnectGiveUpMillis()}. */
  public static final int DEFAULT_RECONNECT_GIVE_UP_MILLIS = 30_000;

  /** Minimum {@link #reconnectGiveUpMillis()}. */
  public static final int MIN_RECONNECT_GIVE_UP_MILLIS = 1;

  /** Maximum {@link #reconnectGiveUpMillis()} (1 day). */
  public static final int MAX_RECONNECT_GIVE_UP_MILLIS = 86_400_000;

  /** Default {@link #waitWhileReconnecting()}. */
  public static final boolean DEFAULT_WAIT_WHILE_RECONNECTING = true;

  /** Default {@link #keepaliveIntervalMillis()}. */
  public static final int DEFAULT_KEEPALIVE_INTERVAL_MILLIS = 500;

  /** Minimum {@link #keepaliveIntervalMillis()}. */
  public static final int MIN_KEEPALIVE_INTERVAL_MILLIS = 10;

  /** Maximum {@link #keepaliveIntervalMillis()}. */
  public static final int MAX_KEEPALIVE_INTERVAL_MILLIS = 600_000;

  /** Default {@link #livenessTimeoutMillis()}. */
  public static final int DEFAULT_LIVENESS_TIMEOUT_MILLIS = 2_000;

  /** Minimum {@link #livenessTimeoutMillis()}. */
  public static final int MIN_LIVENESS_TIMEOUT_MILLIS = 20;

  /** Maximum {@link #livenessTimeoutMillis()}. */
  public static final int MAX_LIVENESS_TIMEOUT_MILLIS = 3_600_000;

  /** Default {@link #sourceIdleTimeoutMillis()} (5 minutes). */
  public static final long DEFAULT_SOURCE_IDLE_TIMEOUT_MILLIS = 300_000;

  /** Minimum {@link #sourceIdleTimeoutMillis()} (0: never). */
  public static final long MIN_SOURCE_IDLE_TIMEOUT_MILLIS = 0;

  /** Maximum {@link #sourceIdleTimeoutMillis()} (1 day). */
  public static final long MAX_SOURCE_IDLE_TIMEOUT_MILLIS = 86_400_000;

  /**
   * Validates every numeric component against its {@code MIN_*}..{@code MAX_*} range; any {@link
   * #retryReadOnOtherLane()} is accepted.
   *
   * @throws ConfigException naming {@code tcp.<key>} for the first component out of range
   */
  public TcpConfig {
    Checks.requireRange(SECTION + ".lanes", lanes, MIN_LANES, MAX_LANES);
    Checks.requireRange(
        SECTION + ".socketBufferBytes",
        socketBufferBytes,
        MIN_SOCKET_BUFFER_BYTES,
        MAX_SOCKET_BUFFER_BYTES);
    Checks.requireRange(
        SECTION + ".maxFramePayloadBytes",
        maxFramePayloadBytes,
        MIN_MAX_FRAME_PAYLOAD_BYTES,
        MAX_MAX_FRAME_PAYLOAD_BYTES);
    Checks.requireRange(
        SECTION + ".connectTimeoutMillis",
        connectTimeoutMillis,
        MIN_CONNECT_TIMEOUT_MILLIS,
        MAX_CONNECT_TIMEOUT_MILLIS);
    Checks.requireRange(
        SECTION + ".laneWindowFrames",
        laneWindowFrames,
        MIN_LANE_WINDOW_FRAMES,
        MAX_LANE_WINDOW_FRAMES);
    Checks.requireRange(
        SECTION + ".laneWindowBytes",
        laneWindowBytes,
        MIN_LANE_WINDOW_BYTES,
        MAX_LANE_WINDOW_BYTES);
    Checks.requireRange(
        SECTION + ".reconnectInitialBackoffMillis",
        reconnectInitialBackoffMillis,
        MIN_RECONNECT_INITIAL_BACKOFF_MILLIS,
        MAX_RECONNECT_INITIAL_BACKOFF_MILLIS);
    Checks.requireRange(
        SECTION + ".reconnectMaxBackoffMillis",
        reconnectMaxBackoffMillis,
        MIN_RECONNECT_MAX_BACKOFF_MILLIS,
        MAX_RECONNECT_MAX_BACKOFF_MILLIS);
    if (reconnectMaxBackoffMillis < reconnectInitialBackoffMillis) {
      throw new ConfigException(
          SECTION + ".reconnectMaxBackoffMillis",
          "must be at least tcp.reconnectInitialBackoffMillis ("
              + reconnectInitialBackoffMillis
              + "), got "
              + reconnectMaxBackoffMillis);
    }
    Checks.requireRange(
        SECTION + ".reconnectGiveUpMillis",
        reconnectGiveUpMillis,
        MIN_RECONNECT_GIVE_UP_MILLIS,
        MAX_RECONNECT_GIVE_UP_MILLIS);
    Checks.requireRange(
        SECTION + ".keepaliveIntervalMillis",
        keepaliveIntervalMillis,
        MIN_KEEPALIVE_INTERVAL_MILLIS,
        MAX_KEEPALIVE_INTERVAL_MILLIS);
    Checks.requireRange(
        SECTION + ".livenessTimeoutMillis",
        livenessTimeoutMillis,
        MIN_LIVENESS_TIMEOUT_MILLIS,
        MAX_LIVENESS_TIMEOUT_MILLIS);
    if (livenessTimeoutMillis <= keepaliveIntervalMillis) {
      throw new ConfigException(
          SECTION + ".livenessTimeoutMillis",
          "must be more than tcp.keepaliveIntervalMillis ("
              + keepaliveIntervalMillis
              + "), got "
              + livenessTimeoutMillis);
    }
    Checks.requireRange(
        SECTION + ".sourceIdleTimeoutMillis",
        sourceIdleTimeoutMillis,
        MIN_SOURCE_IDLE_TIMEOUT_MILLIS,
        MAX_SOURCE_IDLE_TIMEOUT_MILLIS);
  }

  /**
   * All components at their defaults.
   *
   * @return the settings an absent or empty {@code tcp} section reads as: {@value #DEFAULT_LANES}
   *     lanes per peer, 256 KiB socket buffers, 16 MiB frames, a 5 s connect timeout, lane windows
   *     of {@value #DEFAULT_LANE_WINDOW_FRAMES} frames and 64 MiB, and READ retry on another lane
   */
  public static TcpConfig defaults() {
    return new TcpConfig(
        DEFAULT_LANES,
        DEFAULT_SOCKET_BUFFER_BYTES,
        DEFAULT_MAX_FRAME_PAYLOAD_BYTES,
        DEFAULT_CONNECT_TIMEOUT_MILLIS,
        DEFAULT_LANE_WINDOW_FRAMES,
        DEFAULT_LANE_WINDOW_BYTES,
        DEFAULT_RETRY_READ_ON_OTHER_LANE,
        DEFAULT_RECONNECT_INITIAL_BACKOFF_MILLIS,
        DEFAULT_RECONNECT_MAX_BACKOFF_MILLIS,
        DEFAULT_RECONNECT_GIVE_UP_MILLIS,
        DEFAULT_WAIT_WHILE_RECONNECTING,
        DEFAULT_KEEPALIVE_INTERVAL_MILLIS,
        DEFAULT_LIVENESS_TIMEOUT_MILLIS,
        DEFAULT_SOURCE_IDLE_TIMEOUT_MILLIS);
  }

  /** Default {@link #retryReadOnOtherLane()}. */
  public static final boolean DEFAULT_RETRY_READ_ON_OTHER_LANE = true;

  /**
   * A copy with {@link #retryReadOnOtherLane()} replaced and every other component kept; any value
   * is accepted.
   *
   * @param retryReadOnOtherLane whether READ frames of a broken lane are sent once more on another
   *     open lane to the same peer incarnation, if their deadline allows; {@code false} fails them
   *     {@code PEER_LOST}
   * @return a new {@code TcpConfig}; this one is unchanged
   */
  public TcpConfig withRetryReadOnOtherLane(boolean retryReadOnOtherLane) {
    return new TcpConfig(
        lanes,
        socketBufferBytes,
        maxFramePayloadBytes,
        connectTimeoutMillis,
        laneWindowFrames,
        laneWindowBytes,
        retryReadOnOtherLane,
        reconnectInitialBackoffMillis,
        reconnectMaxBackoffMillis,
        reconnectGiveUpMillis,
        waitWhileReconnecting,
        keepaliveIntervalMillis,
        livenessTimeoutMillis,
        sourceIdleTimeoutMillis);
  }

  /**
   * A copy with {@link #lanes()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param lanes number of parallel TCP connections (lanes) opened to each peer
   * @return a new {@code TcpConfig}; this one is unchanged
   * @throws ConfigException naming {@code tcp.lanes} if it is outside {@value #MIN_LANES}..{@value
   *     #MAX_LANES}
   */
  public TcpConfig withLanes(int lanes) {
    return new TcpConfig(
        lanes,
        socketBufferBytes,
        maxFramePayloadBytes,
        connectTimeoutMillis,
        laneWindowFrames,
        laneWindowBytes,
        retryReadOnOtherLane,
        reconnectInitialBackoffMillis,
        reconnectMaxBackoffMillis,
        reconnectGiveUpMillis,
        waitWhileReconnecting,
        keepaliveIntervalMillis,
        livenessTimeoutMillis,
        sourceIdleTimeoutMillis);
  }

  /**
   * A copy with {@link #socketBufferBytes()} replaced and every other component kept; the new value
   * is checked as by the constructor.
   *
   * @param socketBufferBytes size requested for each socket's send and receive buffers
   *     (SO_SNDBUF/SO_RCVBUF), in bytes
   * @return a new {@code TcpConfig}; this one is unchanged
   * @throws ConfigException naming {@code tcp.socketBufferBytes} if it is outside {@value
   *     #MIN_SOCKET_BUFFER_BYTES}..{@value #MAX_SOCKET_BUFFER_BYTES}
   */
  public TcpConfig withSocketBufferBytes(int socketBufferBytes) {
    return new TcpConfig(
        lanes,
        socketBufferBytes,
        maxFramePayloadBytes,
        connectTimeoutMillis,
        laneWindowFrames,
        laneWindowBytes,
        retryReadOnOtherLane,
        reconnectInitialBackoffMillis,
        reconnectMaxBackoffMillis,
        reconnectGiveUpMillis,
        waitWhileReconnecting,
        keepaliveIntervalMillis,
        livenessTimeoutMillis,
        sourceIdleTimeoutMillis);
  }

  /**
   * A copy with {@link #maxFramePayloadBytes()} replaced and every other component kept; the new
   * value is checked as by the constructor.
   *
   * @param maxFramePayloadBytes largest payload one frame may carry, in bytes; larger transfers are
   *     split
   * @return a new {@code TcpConfig}; this one is unchanged
   * @throws ConfigException naming {@code tcp.maxFramePayloadBytes} if it is outside {@value
   *     #MIN_MAX_FRAME_PAYLOAD_BYTES}..{@value #MAX_MAX_FRAME_PAYLOAD_BYTES}
   */
  public TcpConfig withMaxFramePayloadBytes(int maxFramePayloadBytes) {
    return new TcpConfig(
        lanes,
        socketBufferBytes,
        maxFramePayloadBytes,
        connectTimeoutMillis,
        laneWindowFrames,
        laneWindowBytes,
        retryReadOnOtherLane,
        reconnectInitialBackoffMillis,
        reconnectMaxBackoffMillis,
        reconnectGiveUpMillis,
        waitWhileReconnecting,
        keepaliveIntervalMillis,
        livenessTimeoutMillis,
        sourceIdleTimeoutMillis);
  }

  /**
   * A copy with {@link #connectTimeoutMillis()} replaced and every other component kept; the new
   * value is checked as by the constructor.
   *
   * @param connectTimeoutMillis how long a lane's TCP connect may take, in milliseconds
   * @return a new {@code TcpConfig}; this one is unchanged
   * @throws ConfigException naming {@code tcp.connectTimeoutMillis} if it is outside {@value
   *     #MIN_CONNECT_TIMEOUT_MILLIS}..{@value #MAX_CONNECT_TIMEOUT_MILLIS}
   */
  public TcpConfig withConnectTimeoutMillis(int connectTimeoutMillis) {
    return new TcpConfig(
        lanes,
        socketBufferBytes,
        maxFramePayloadBytes,
        connectTimeoutMillis,
        laneWindowFrames,
        laneWindowBytes,
        retryReadOnOtherLane,
        reconnectInitialBackoffMillis,
        reconnectMaxBackoffMillis,
        reconnectGiveUpMillis,
        waitWhileReconnecting,
        keepaliveIntervalMillis,
        livenessTimeoutMillis,
        sourceIdleTimeoutMillis);
  }

  /**
   * A copy with {@link #laneWindowFrames()} replaced and every other component kept; the new value
   * is checked as by the constructor.
   *
   * @param laneWindowFrames most frames sent on one lane and not yet acknowledged, in frames
   * @return a new {@code TcpConfig}; this one is unchanged
   * @throws ConfigException naming {@code tcp.laneWindowFrames} if it is outside {@value
   *     #MIN_LANE_WINDOW_FRAMES}..{@value #MAX_LANE_WINDOW_FRAMES}
   */
  public TcpConfig withLaneWindowFrames(int laneWindowFrames) {
    return new TcpConfig(
        lanes,
        socketBufferBytes,
        maxFramePayloadBytes,
        connectTimeoutMillis,
        laneWindowFrames,
        laneWindowBytes,
        retryReadOnOtherLane,
        reconnectInitialBackoffMillis,
        reconnectMaxBackoffMillis,
        reconnectGiveUpMillis,
        waitWhileReconnecting,
        keepaliveIntervalMillis,
        livenessTimeoutMillis,
        sourceIdleTimeoutMillis);
  }

  /**
   * A copy with {@link #laneWindowBytes()} replaced and every other component kept; the new value
   * is checked as by the constructor.
   *
   * @param laneWindowBytes most payload bytes sent on one lane and not yet acknowledged, in bytes
   * @return a new {@code TcpConfig}; this one is unchanged
   * @throws ConfigException naming {@code tcp.laneWindowBytes} if it is outside {@value
   *     #MIN_LANE_WINDOW_BYTES}..{@value #MAX_LANE_WINDOW_BYTES}
   */
  public TcpConfig withLaneWindowBytes(long laneWindowBytes) {
    return new TcpConfig(
        lanes,
        socketBufferBytes,
        maxFramePayloadBytes,
        connectTimeoutMillis,
        laneWindowFrames,
        laneWindowBytes,
        retryReadOnOtherLane,
        reconnectInitialBackoffMillis,
        reconnectMaxBackoffMillis,
        reconnectGiveUpMillis,
        waitWhileReconnecting,
        keepaliveIntervalMillis,
        livenessTimeoutMillis,
        sourceIdleTimeoutMillis);
  }

  static TcpConfig read(ConfigReader r) {
    return new TcpConfig(
        r.intValue("lanes", DEFAULT_LANES, MIN_LANES, MAX_LANES),
        r.intValue(
            "socketBufferBytes",
            DEFAULT_SOCKET_BUFFER_BYTES,
            MIN_SOCKET_BUFFER_BYTES,
            MAX_SOCKET_BUFFER_BYTES),
        r.intValue(
            "maxFramePayloadBytes",
            DEFAULT_MAX_FRAME_PAYLOAD_BYTES,
            MIN_MAX_FRAME_PAYLOAD_BYTES,
            MAX_MAX_FRAME_PAYLOAD_BYTES),
        r.intValue(
            "connectTimeoutMillis",
            DEFAULT_CONNECT_TIMEOUT_MILLIS,
            MIN_CONNECT_TIMEOUT_MILLIS,
            MAX_CONNECT_TIMEOUT_MILLIS),
        r.intValue(
            "laneWindowFrames",
            DEFAULT_LANE_WINDOW_FRAMES,
            MIN_LANE_WINDOW_FRAMES,
            MAX_LANE_WINDOW_FRAMES),
        r.longValue(
            "laneWindowBytes",
            DEFAULT_LANE_WINDOW_BYTES,
            MIN_LANE_WINDOW_BYTES,
            MAX_LANE_WINDOW_BYTES),
        r.booleanValue("retryReadOnOtherLane", DEFAULT_RETRY_READ_ON_OTHER_LANE),
        r.intValue(
            "reconnectInitialBackoffMillis",
            DEFAULT_RECONNECT_INITIAL_BACKOFF_MILLIS,
            MIN_RECONNECT_INITIAL_BACKOFF_MILLIS,
            MAX_RECONNECT_INITIAL_BACKOFF_MILLIS),
        r.intValue(
            "reconnectMaxBackoffMillis",
            DEFAULT_RECONNECT_MAX_BACKOFF_MILLIS,
            MIN_RECONNECT_MAX_BACKOFF_MILLIS,
            MAX_RECONNECT_MAX_BACKOFF_MILLIS),
        r.intValue(
            "reconnectGiveUpMillis",
            DEFAULT_RECONNECT_GIVE_UP_MILLIS,
            MIN_RECONNECT_GIVE_UP_MILLIS,
            MAX_RECONNECT_GIVE_UP_MILLIS),
        r.booleanValue("waitWhileReconnecting", DEFAULT_WAIT_WHILE_RECONNECTING),
        r.intValue(
            "keepaliveIntervalMillis",
            DEFAULT_KEEPALIVE_INTERVAL_MILLIS,
            MIN_KEEPALIVE_INTERVAL_MILLIS,
            MAX_KEEPALIVE_INTERVAL_MILLIS),
        r.intValue(
            "livenessTimeoutMillis",
            DEFAULT_LIVENESS_TIMEOUT_MILLIS,
            MIN_LIVENESS_TIMEOUT_MILLIS,
            MAX_LIVENESS_TIMEOUT_MILLIS),
        r.longValue(
            "sourceIdleTimeoutMillis",
            DEFAULT_SOURCE_IDLE_TIMEOUT_MILLIS,
            MIN_SOURCE_IDLE_TIMEOUT_MILLIS,
            MAX_SOURCE_IDLE_TIMEOUT_MILLIS));
  }

  /**
   * A copy with the reconnection settings replaced and every other component kept.
   *
   * @param initialBackoffMillis {@link #reconnectInitialBackoffMillis()}
   * @param maxBackoffMillis {@link #reconnectMaxBackoffMillis()}
   * @param giveUpMillis {@link #reconnectGiveUpMillis()}
   * @return a new {@code TcpConfig}; this one is unchanged
   * @throws ConfigException naming the first key out of range
   */
  public TcpConfig withReconnect(int initialBackoffMillis, int maxBackoffMillis, int giveUpMillis) {
    return new TcpConfig(
        lanes,
        socketBufferBytes,
        maxFramePayloadBytes,
        connectTimeoutMillis,
        laneWindowFrames,
        laneWindowBytes,
        retryReadOnOtherLane,
        initialBackoffMillis,
        maxBackoffMillis,
        giveUpMillis,
        waitWhileReconnecting,
        keepaliveIntervalMillis,
        livenessTimeoutMillis,
        sourceIdleTimeoutMillis);
  }

  /**
   * A copy with {@link #waitWhileReconnecting()} replaced and every other component kept.
   *
   * @param waitWhileReconnecting whether tasks wait for a lane while the channel reconnects
   * @return a new {@code TcpConfig}; this one is unchanged
   */
  public TcpConfig withWaitWhileReconnecting(boolean waitWhileReconnecting) {
    return new TcpConfig(
        lanes,
        socketBufferBytes,
        maxFramePayloadBytes,
        connectTimeoutMillis,
        laneWindowFrames,
        laneWindowBytes,
        retryReadOnOtherLane,
        reconnectInitialBackoffMillis,
        reconnectMaxBackoffMillis,
        reconnectGiveUpMillis,
        waitWhileReconnecting,
        keepaliveIntervalMillis,
        livenessTimeoutMillis,
        sourceIdleTimeoutMillis);
  }

  /**
   * A copy with the keepalive settings replaced and every other component kept.
   *
   * @param intervalMillis {@link #keepaliveIntervalMillis()}
   * @param livenessTimeoutMillis {@link #livenessTimeoutMillis()}
   * @return a new {@code TcpConfig}; this one is unchanged
   * @throws ConfigException naming the first key out of range
   */
  public TcpConfig withKeepalive(int intervalMillis, int livenessTimeoutMillis) {
    return new TcpConfig(
        lanes,
        socketBufferBytes,
        maxFramePayloadBytes,
        connectTimeoutMillis,
        laneWindowFrames,
        laneWindowBytes,
        retryReadOnOtherLane,
        reconnectInitialBackoffMillis,
        reconnectMaxBackoffMillis,
        reconnectGiveUpMillis,
        waitWhileReconnecting,
        intervalMillis,
        livenessTimeoutMillis,
        sourceIdleTimeoutMillis);
  }

  /**
   * A copy with {@link #sourceIdleTimeoutMillis()} replaced and every other component kept.
   *
   * @param sourceIdleTimeoutMillis how long an accepted lane may stay idle (0: for ever)
   * @return a new {@code TcpConfig}; this one is unchanged
   * @throws ConfigException naming {@code tcp.sourceIdleTimeoutMillis} when out of range
   */
  public TcpConfig withSourceIdleTimeoutMillis(long sourceIdleTimeoutMillis) {
    return new TcpConfig(
        lanes,
        socketBufferBytes,
        maxFramePayloadBytes,
        connectTimeoutMillis,
        laneWindowFrames,
        laneWindowBytes,
        retryReadOnOtherLane,
        reconnectInitialBackoffMillis,
        reconnectMaxBackoffMillis,
        reconnectGiveUpMillis,
        waitWhileReconnecting,
        keepaliveIntervalMillis,
        livenessTimeoutMillis,
        sourceIdleTimeoutMillis);
  }
}
