package io.orbite.config;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What a {@link TransportPolicy} chooses for the requests it matches. Checked when it becomes part
 * of a {@link TransportPolicies}, see {@link TransportPolicy}.
 *
 * <p>A mask is a 64-bit set, bit {@code i} standing for lane or rail {@code i}; JSON writes it as
 * an unsigned integer ({@code "laneMask": 1} is lane 0, {@code 6} lanes 1 and 2, up to {@code
 * 18446744073709551615}, every bit), and Java as a {@code long} whose bit 63 is lane or rail 63.
 * {@code null} (the key absent) restricts nothing; {@code 0} names nothing and is refused.
 *
 * @param transports the transports tried in order: the first whose channel to the peer can carry
 *     the request's region now wins; if none can, the request is refused at submit naming the rule
 *     and why each was unavailable. 1..3 transports ({@link #MAX_TRANSPORTS}), none repeated
 * @param priority the priority given to a request that kept the default one ({@code HIGH}, as
 *     {@code TransferRequest.read}/{@code write} give), or {@code null} to leave every request's
 *     own. A request that set {@code MEDIUM} or {@code LOW} keeps it.
 * @param laneMask the TCP lanes that may carry the rule's tasks (bit {@code i}: the lane in slot
 *     {@code i} of the channel to the peer, {@code 0 .. tcp.lanes - 1}), or {@code null} for every
 *     lane. Only on a rule whose transports include TCP; no bit at or above {@code tcp.lanes}
 *     (checked by {@link EngineConfig}, which knows it)
 * @param railMask the RDMA rails the rule's tasks may be posted on (bit {@code i}: this engine's
 *     rail {@code i}, in the order the transport opened its devices), or {@code null} for every
 *     rail the selection allows. Only on a rule whose transports include RDMA. A mask that names no
 *     rail the transport opened, or only rails not healthy now, makes RDMA unavailable to the rule
 *     at submit (the next transport it names is tried)
 */
public record PolicyChoice(
    List<TransportPolicy.Transport> transports,
    TransportPolicy.Priority priority,
    Long laneMask,
    Long railMask) {

  /** Most transports one rule may name: each of TCP, SHM and RDMA once. */
  public static final int MAX_TRANSPORTS = TransportPolicy.Transport.values().length;

  /**
   * Most lanes or rails a mask can name: one bit of a {@code long} each ({@code tcp.lanes} max).
   */
  public static final int MAX_MASK_BITS = Long.SIZE;

  /**
   * Copies {@code transports} (a {@code null} list or element is kept, for the check to name).
   *
   * @param transports the transports tried in order
   * @param priority the priority given, or {@code null}
   * @param laneMask the TCP lanes allowed, or {@code null} for every lane
   * @param railMask the RDMA rails allowed, or {@code null} for every rail
   */
  public PolicyChoice {
    transports =
        transports == null ? null : Collections.unmodifiableList(new ArrayList<>(transports));
  }

  /**
   * A choice without masks.
   *
   * @param transports the transports tried in order
   * @param priority the priority given, or {@code null}
   */
  public PolicyChoice(
      List<TransportPolicy.Transport> transports, TransportPolicy.Priority priority) {
    this(transports, priority, null, null);
  }

  /**
   * A choice of {@code first}, then each of {@code then} in order, that gives no priority and
   * restricts no lane or rail.
   *
   * @param first the transport tried first
   * @param then the transports tried after it, in order
   * @return the choice
   */
  public static PolicyChoice of(
      TransportPolicy.Transport first, TransportPolicy.Transport... then) {
    List<TransportPolicy.Transport> all = new ArrayList<>(1 + then.length);
    all.add(first);
    Collections.addAll(all, then);
    return new PolicyChoice(all, null);
  }

  /**
   * A copy with {@link #priority()} replaced.
   *
   * @param value the priority given to requests that kept the default one, or {@code null}
   * @return a new choice; this one is unchanged
   */
  public PolicyChoice withPriority(TransportPolicy.Priority value) {
    return new PolicyChoice(transports, value, laneMask, railMask);
  }

  /**
   * A copy with {@link #laneMask()} replaced.
   *
   * @param value the TCP lanes allowed (bit {@code i}: lane {@code i}), or {@code null} for every
   *     lane
   * @return a new choice; this one is unchanged
   */
  public PolicyChoice withLaneMask(Long value) {
    return new PolicyChoice(transports, priority, value, railMask);
  }

  /**
   * A copy with {@link #railMask()} replaced.
   *
   * @param value the RDMA rails allowed (bit {@code i}: rail {@code i}), or {@code null} for every
   *     rail
   * @return a new choice; this one is unchanged
   */
  public PolicyChoice withRailMask(Long value) {
    return new PolicyChoice(transports, priority, laneMask, value);
  }

  /** The mask as JSON writes it: unsigned, {@code -1L} is {@code 18446744073709551615}. */
  static String unsigned(long mask) {
    return Long.toUnsignedString(mask);
  }

  /**
   * Checks the choice of rule {@code path} ({@code policies[2]}); messages name {@code
   * <path>.choose.<key>}.
   */
  void check(String path) {
    String choose = Checks.child(path, "choose");
    String at = Checks.child(choose, "transports");
    Checks.requireNonNull(at, transports);
    if (transports.isEmpty()) {
      throw new ConfigException(at, "must name at least one transport (TCP, SHM, RDMA)");
    }
    if (transports.size() > MAX_TRANSPORTS) {
      throw new ConfigException(
          at, "must name at most " + MAX_TRANSPORTS + " transports, got " + transports.size());
    }
    for (int i = 0; i < transports.size(); i++) {
      String element = at + "[" + i + "]";
      Checks.requireNonNull(element, transports.get(i));
      int first = transports.indexOf(transports.get(i));
      if (first < i) {
        throw new ConfigException(
            element,
            "must differ from every other transport, got \""
                + transports.get(i)
                + "\" again (first at "
                + at
                + "["
                + first
                + "])");
      }
    }
    checkMask(choose, "laneMask", laneMask, "lane", TransportPolicy.Transport.TCP);
    checkMask(choose, "railMask", railMask, "rail", TransportPolicy.Transport.RDMA);
  }

  private void checkMask(
      String choose, String key, Long mask, String what, TransportPolicy.Transport needs) {
    if (mask == null) {
      return;
    }
    String at = Checks.child(choose, key);
    if (mask == 0) {
      throw new ConfigException(
          at,
          "must name at least one "
              + what
              + " (bit i stands for "
              + what
              + " i; leave the key out for every "
              + what
              + "), got 0");
    }
    if (!transports.contains(needs)) {
      throw new ConfigException(
          at,
          "restricts "
              + needs
              + " "
              + what
              + "s, but the rule's transports ("
              + String.join(", ", transports.stream().map(Enum::name).toList())
              + ") do not include "
              + needs);
    }
  }

  /**
   * Checks {@link #laneMask()} against the lanes each peer gets ({@code tcp.lanes}), naming {@code
   * <path>.choose.laneMask}.
   */
  void checkLanes(String path, int lanes) {
    if (laneMask == null || lanes >= MAX_MASK_BITS) {
      return;
    }
    long beyond = laneMask & (-1L << lanes);
    if (beyond != 0) {
      throw new ConfigException(
          Checks.child(Checks.child(path, "choose"), "laneMask"),
          "names lane "
              + (MAX_MASK_BITS - 1 - Long.numberOfLeadingZeros(beyond))
              + ", but tcp.lanes is "
              + lanes
              + " (lanes 0.."
              + (lanes - 1)
              + "; "
              + unsigned(laneMask)
              + " is more than "
              + unsigned((1L << lanes) - 1)
              + ")");
    }
  }
}
