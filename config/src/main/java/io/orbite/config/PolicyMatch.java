package io.orbite.config;

/**
 * Which requests a {@link TransportPolicy} applies to: all its conditions must hold. A condition
 * left {@code null} (or, for sizes, at its default) accepts every request. Checked when it becomes
 * part of a {@link TransportPolicies}, see {@link TransportPolicy}.
 *
 * @param op the request's direction, or {@code null} for both
 * @param minBytes the least {@code lengthBytes} accepted. Default {@value #DEFAULT_MIN_BYTES};
 *     range {@value #MIN_MIN_BYTES}..{@value #MAX_MIN_BYTES}; at most {@code maxBytes}
 * @param maxBytes the most {@code lengthBytes} accepted. Default {@value #DEFAULT_MAX_BYTES} (no
 *     bound); range {@value #MIN_MAX_BYTES}..{@value #MAX_MAX_BYTES}
 * @param priority the request's own priority (before any rule gives it one), or {@code null} for
 *     every priority
 * @param peer a pattern the peer's endpoint ({@code host:port}, as its segment descriptor names it)
 *     must match, or {@code null} for every peer. {@code *} matches any run of characters,
 *     including none; every other character stands for itself, letters compared without regard to
 *     case. The pattern is {@code *} alone, or ends with {@code :} and a port part of digits and
 *     {@code *}: {@code "10.0.*:*"} and {@code "*:7000"} are patterns, {@code "10.0.*"} is refused
 *     (no port part). 1..{@value #MAX_PEER_LENGTH} characters, no whitespace or control characters.
 * @param memory the kind of the request's local memory, or {@code null} for every kind
 */
public record PolicyMatch(
    TransportPolicy.Op op,
    long minBytes,
    long maxBytes,
    TransportPolicy.Priority priority,
    String peer,
    TransportPolicy.Memory memory) {

  /** Default {@link #minBytes()}: no lower bound. */
  public static final long DEFAULT_MIN_BYTES = 0;

  /** Smallest accepted {@link #minBytes()}. */
  public static final long MIN_MIN_BYTES = 0;

  /** Largest accepted {@link #minBytes()}. */
  public static final long MAX_MIN_BYTES = Long.MAX_VALUE;

  /** Default {@link #maxBytes()}: no upper bound. */
  public static final long DEFAULT_MAX_BYTES = Long.MAX_VALUE;

  /** Smallest accepted {@link #maxBytes()}. */
  public static final long MIN_MAX_BYTES = 1;

  /** Largest accepted {@link #maxBytes()}. */
  public static final long MAX_MAX_BYTES = Long.MAX_VALUE;

  /** Longest accepted {@link #peer()} pattern, in characters. */
  public static final int MAX_PEER_LENGTH = 255;

  /**
   * A match that accepts every request.
   *
   * @return no direction, size, priority, peer or memory condition
   */
  public static PolicyMatch any() {
    return new PolicyMatch(null, DEFAULT_MIN_BYTES, DEFAULT_MAX_BYTES, null, null, null);
  }

  /**
   * A copy with {@link #op()} replaced.
   *
   * @param value the direction, or {@code null} for both
   * @return a new match; this one is unchanged
   */
  public PolicyMatch withOp(TransportPolicy.Op value) {
    return new PolicyMatch(value, minBytes, maxBytes, priority, peer, memory);
  }

  /**
   * A copy with {@link #minBytes()} replaced.
   *
   * @param value the least length accepted
   * @return a new match; this one is unchanged
   */
  public PolicyMatch withMinBytes(long value) {
    return new PolicyMatch(op, value, maxBytes, priority, peer, memory);
  }

  /**
   * A copy with {@link #maxBytes()} replaced.
   *
   * @param value the most length accepted
   * @return a new match; this one is unchanged
   */
  public PolicyMatch withMaxBytes(long value) {
    return new PolicyMatch(op, minBytes, value, priority, peer, memory);
  }

  /**
   * A copy with {@link #priority()} replaced.
   *
   * @param value the request priority accepted, or {@code null} for every priority
   * @return a new match; this one is unchanged
   */
  public PolicyMatch withPriority(TransportPolicy.Priority value) {
    return new PolicyMatch(op, minBytes, maxBytes, value, peer, memory);
  }

  /**
   * A copy with {@link #peer()} replaced.
   *
   * @param value the endpoint pattern, or {@code null} for every peer
   * @return a new match; this one is unchanged
   */
  public PolicyMatch withPeer(String value) {
    return new PolicyMatch(op, minBytes, maxBytes, priority, value, memory);
  }

  /**
   * A copy with {@link #memory()} replaced.
   *
   * @param value the local memory kind accepted, or {@code null} for every kind
   * @return a new match; this one is unchanged
   */
  public PolicyMatch withMemory(TransportPolicy.Memory value) {
    return new PolicyMatch(op, minBytes, maxBytes, priority, peer, value);
  }

  /**
   * Whether {@code endpoint} matches {@link #peer()}; always true without a pattern. Allocates
   * nothing: the engine runs it once per segment a submission names.
   *
   * @param endpoint a peer's {@code host:port}
   * @return whether the pattern accepts it
   */
  public boolean peerMatches(String endpoint) {
    return peer == null || glob(peer, endpoint);
  }

  /**
   * Whether {@code text} matches {@code pattern}, where {@code *} matches any run of characters and
   * letters compare without regard to case. Linear backtracking over the last star: no recursion,
   * no allocation.
   */
  static boolean glob(String pattern, String text) {
    int p = 0;
    int t = 0;
    int star = -1;
    int resume = 0;
    while (t < text.length()) {
      if (p < pattern.length() && pattern.charAt(p) == '*') {
        star = p++;
        resume = t;
      } else if (p < pattern.length() && same(pattern.charAt(p), text.charAt(t))) {
        p++;
        t++;
      } else if (star >= 0) {
        p = star + 1;
        t = ++resume;
      } else {
        return false;
      }
    }
    while (p < pattern.length() && pattern.charAt(p) == '*') {
      p++;
    }
    return p == pattern.length();
  }

  private static boolean same(char a, char b) {
    return a == b || Character.toLowerCase(a) == Character.toLowerCase(b);
  }

  /**
   * Checks the match of rule {@code path} ({@code policies[2]}); messages name {@code
   * <path>.match.<key>}.
   */
  void check(String path) {
    String at = Checks.child(path, "match");
    Checks.requireRange(Checks.child(at, "minBytes"), minBytes, MIN_MIN_BYTES, MAX_MIN_BYTES);
    Checks.requireRange(Checks.child(at, "maxBytes"), maxBytes, MIN_MAX_BYTES, MAX_MAX_BYTES);
    if (minBytes > maxBytes) {
      throw new ConfigException(
          Checks.child(at, "minBytes"),
          "must be at most maxBytes (" + maxBytes + "), got " + minBytes);
    }
    if (peer != null) {
      checkPeer(Checks.child(at, "peer"), peer);
    }
  }

  private static void checkPeer(String path, String pattern) {
    if (pattern.isEmpty()
        || pattern.length() > MAX_PEER_LENGTH
        || pattern
            .codePoints()
            .anyMatch(c -> Character.isWhitespace(c) || Character.isISOControl(c))) {
      throw new ConfigException(
          path,
          "must be 1.."
              + MAX_PEER_LENGTH
              + " characters without whitespace, got "
              + Checks.quote(pattern));
    }
    if (pattern.equals("*")) {
      return;
    }
    int colon = pattern.lastIndexOf(':');
    String port = colon < 0 ? "" : pattern.substring(colon + 1);
    if (colon <= 0 || port.isEmpty() || !port.chars().allMatch(c -> c == '*' || isDigit(c))) {
      throw new ConfigException(
          path,
          "must be \"*\" or host:port, the port digits and *, such as \"10.0.*:*\" or"
              + " \"*:7000\", got "
              + Checks.quote(pattern));
    }
  }

  private static boolean isDigit(int c) {
    return c >= '0' && c <= '9';
  }
}
