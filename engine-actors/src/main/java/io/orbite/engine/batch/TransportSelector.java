package io.orbite.engine.batch;

import io.orbite.config.PolicyMatch;
import io.orbite.config.TransportPolicies;
import io.orbite.config.TransportPolicy;
import io.orbite.engine.Op;
import io.orbite.engine.Priority;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.TaskWork;
import java.util.List;

/**
 * The transport selector: the configuration's first-match {@code policies}, compiled once when the
 * engine starts into plain arrays, so that the routing step ({@link RequestValidator}) matches a
 * request with a few comparisons per rule and allocates nothing per task.
 *
 * <p>It applies only to a request that lets the engine choose ({@link Transport#UNSPEC}) to a peer
 * segment: a request naming its transport, and a request to a file segment, is routed as before.
 * The first rule whose conditions all hold decides ({@link #match}); its transports are tried in
 * order ({@link #route}), and the first whose channel reaches the region and takes work now carries
 * the task ({@link io.orbite.engine.Route#POLICY}). When none can, the request is refused, naming
 * the rule. A peer pattern is matched once per segment ({@link #peerMask}), not once per task.
 *
 * <p>A rule's lane and rail masks ({@code choose.laneMask}, {@code choose.railMask}) travel on each
 * task it chose ({@link io.orbite.engine.spi.TaskWork#laneMask}), and a transport with a mask is
 * available to the rule only when its channel can honour the mask now ({@link
 * PeerChannel#maskRefusal}): a rail mask whose rails have no healthy pair moves on to the rule's
 * next transport, as an unhealthy RDMA channel does.
 *
 * <p>Immutable, so shared by every submitting thread.
 */
public final class TransportSelector {
  /** No rules: every request routed as without policies. */
  public static final TransportSelector NONE = compile(TransportPolicies.NONE);

  /** A condition's value that accepts everything. */
  private static final byte ANY = -1;

  /** {@link #memoryKind}'s values: the ordinals of {@link TransportPolicy.Memory}. */
  private static final int REGISTERED = TransportPolicy.Memory.REGISTERED.ordinal();

  private static final int ALLOCATED = TransportPolicy.Memory.ALLOCATED.ordinal();
  private static final int SHARED = TransportPolicy.Memory.SHARED.ordinal();

  private final int rules;
  private final byte[] op;
  private final long[] minBytes;
  private final long[] maxBytes;
  private final byte[] priority;
  private final byte[] memory;

  /** The match of each rule with a peer pattern; null for a rule that has none. */
  private final PolicyMatch[] peer;

  /** The rules without a peer pattern, as bits: every segment matches them. */
  private final long anyPeer;

  private final Transport[][] transports;

  /** The priority each rule gives a request that kept the default; null: none. */
  private final Priority[] gives;

  /**
   * Per rule, the transports (as bits of their ordinals) whose task may fail over to TCP: those the
   * rule lists TCP after.
   */
  private final int[] failsOverFrom;

  /** Per rule, {@code rule 2 (policies[2]) chose SHM, TCP}, for refusals. */
  private final String[] described;

  /** Per rule, the TCP lanes its tasks may use; {@link TaskWork#ANY}: every lane. */
  private final long[] laneMask;

  /** Per rule, the RDMA rails its tasks may use; {@link TaskWork#ANY}: every rail. */
  private final long[] railMask;

  private TransportSelector(List<TransportPolicy> list) {
    rules = list.size();
    op = new byte[rules];
    minBytes = new long[rules];
    maxBytes = new long[rules];
    priority = new byte[rules];
    memory = new byte[rules];
    peer = new PolicyMatch[rules];
    transports = new Transport[rules][];
    gives = new Priority[rules];
    failsOverFrom = new int[rules];
    described = new String[rules];
    laneMask = new long[rules];
    railMask = new long[rules];
    long everyPeer = 0;
    for (int r = 0; r < rules; r++) {
      PolicyMatch m = list.get(r).match();
      op[r] = m.op() == null ? ANY : (byte) Op.valueOf(m.op().name()).ordinal();
      minBytes[r] = m.minBytes();
      maxBytes[r] = m.maxBytes();
      priority[r] =
          m.priority() == null ? ANY : (byte) Priority.valueOf(m.priority().name()).ordinal();
      memory[r] = m.memory() == null ? ANY : (byte) m.memory().ordinal();
      if (m.peer() == null) {
        everyPeer |= 1L << r;
      } else {
        peer[r] = m;
      }
      List<TransportPolicy.Transport> named = list.get(r).choose().transports();
      Transport[] order = new Transport[named.size()];
      StringBuilder text = new StringBuilder();
      for (int k = 0; k < order.length; k++) {
        order[k] = Transport.valueOf(named.get(k).name());
        text.append(k == 0 ? "" : ", ").append(order[k]);
      }
      transports[r] = order;
      int tcp = named.indexOf(TransportPolicy.Transport.TCP);
      for (int k = 0; k < tcp; k++) {
        failsOverFrom[r] |= 1 << order[k].ordinal();
      }
      TransportPolicy.Priority p = list.get(r).choose().priority();
      gives[r] = p == null ? null : Priority.valueOf(p.name());
      described[r] = "rule " + r + " (policies[" + r + "]) chose " + text;
      Long lanes = list.get(r).choose().laneMask();
      Long rails = list.get(r).choose().railMask();
      laneMask[r] = lanes == null ? TaskWork.ANY : lanes;
      railMask[r] = rails == null ? TaskWork.ANY : rails;
    }
    anyPeer = everyPeer;
  }

  /**
   * Compiles checked policies ({@code EngineConfig.policies()}).
   *
   * @param policies the rules, first match first; at most {@value TransportPolicies#MAX_RULES}, so
   *     one bit of a {@code long} stands for each
   * @return the selector
   */
  public static TransportSelector compile(TransportPolicies policies) {
    return new TransportSelector(policies.rules());
  }

  /**
   * Whether there is any rule: without one, the routing step skips the selector.
   *
   * @return true when the configuration has policies
   */
  public boolean active() {
    return rules > 0;
  }

  /**
   * Which rules accept the peer of {@code segment}: run once per segment a submission names (it
   * builds the endpoint text once).
   *
   * @param segment a peer segment
   * @return one bit per rule, set when the rule has no peer pattern or its pattern matches
   */
  long peerMask(PeerSegment segment) {
    long mask = anyPeer;
    if (mask != (rules == 64 ? -1L : (1L << rules) - 1)) {
      String endpoint = segment.descriptor().endpoint();
      for (int r = 0; r < rules; r++) {
        if (peer[r] != null && peer[r].peerMatches(endpoint)) {
          mask |= 1L << r;
        }
      }
    }
    return mask;
  }

  /**
   * The kind of local memory a registration is, as {@code policies[].match.memory} names it.
   *
   * @param local the request's local memory
   * @return REGISTERED (caller-owned), ALLOCATED, or SHARED (a memfd same-host peers may map)
   */
  static int memoryKind(Registration local) {
    if (!local.engineOwned()) {
      return REGISTERED;
    }
    return local.shared() != null ? SHARED : ALLOCATED;
  }

  /**
   * The first rule that accepts a request.
   *
   * @param requestOp its direction
   * @param length its length in bytes
   * @param requestPriority its own priority
   * @param memoryKind {@link #memoryKind} of its local memory
   * @param peers {@link #peerMask} of its segment
   * @return the rule's index, or -1 when no rule accepts it
   */
  int match(Op requestOp, long length, Priority requestPriority, int memoryKind, long peers) {
    int o = requestOp.ordinal();
    int p = requestPriority.ordinal();
    for (int r = 0; r < rules; r++) {
      if ((peers & (1L << r)) != 0
          && (op[r] == ANY || op[r] == o)
          && length >= minBytes[r]
          && length <= maxBytes[r]
          && (priority[r] == ANY || priority[r] == p)
          && (memory[r] == ANY || memory[r] == memoryKind)) {
        return r;
      }
    }
    return -1;
  }

  /**
   * The routing rule {@code rule} gives a request for {@code regionId} of {@code segment}: the
   * first of its transports whose channel can carry it now.
   *
   * @return a routing with a channel and {@link io.orbite.engine.Route#POLICY}; or, when none of
   *     the rule's transports can, a routing without a channel whose refusal names the rule and why
   *     each transport was unavailable
   */
  PeerSegment.Routing route(int rule, PeerSegment segment, long regionId) {
    Transport[] order = transports[rule];
    for (Transport t : order) {
      PeerSegment.Routing routing = segment.policyRoute(t, regionId);
      if (routing != null && maskRefusal(rule, t, routing.channel()) == null) {
        return routing;
      }
    }
    StringBuilder why =
        new StringBuilder(described[rule])
            .append(" for it, but none is available to ")
            .append(segment.label())
            .append(": ");
    for (int k = 0; k < order.length; k++) {
      PeerSegment.Routing routing = segment.policyRoute(order[k], regionId);
      String masked = routing == null ? null : maskRefusal(rule, order[k], routing.channel());
      why.append(k == 0 ? "" : "; ")
          .append(order[k])
          .append(": ")
          .append(
              routing == null
                  ? segment.unavailableBecause(order[k], regionId)
                  : masked != null ? masked : "available again only as this was refused");
    }
    return new PeerSegment.Routing(null, null, why.toString());
  }

  /**
   * Why {@code channel} cannot honour rule {@code rule}'s mask for {@code transport} now, naming
   * the mask's path; null when the rule has no mask for it or the channel can.
   */
  private String maskRefusal(int rule, Transport transport, PeerChannel channel) {
    long mask = mask(rule, transport);
    if (mask == TaskWork.ANY) {
      return null;
    }
    String refusal = channel.maskRefusal(mask);
    if (refusal == null) {
      return null;
    }
    return "policies["
        + rule
        + "].choose."
        + (transport == Transport.TCP ? "laneMask" : "railMask")
        + " ("
        + Long.toUnsignedString(mask)
        + ") "
        + refusal;
  }

  /** Rule {@code rule}'s mask for {@code transport}: lanes for TCP, rails for RDMA, else none. */
  private long mask(int rule, Transport transport) {
    return switch (transport) {
      case TCP -> laneMask[rule];
      case RDMA -> railMask[rule];
      default -> TaskWork.ANY;
    };
  }

  /**
   * The TCP lanes a task rule {@code rule} chose may use.
   *
   * @param rule the rule, or -1
   * @return its lane mask; {@link TaskWork#ANY} for none, or without a rule
   */
  long laneMask(int rule) {
    return rule < 0 ? TaskWork.ANY : laneMask[rule];
  }

  /**
   * The RDMA rails a task rule {@code rule} chose may use.
   *
   * @param rule the rule, or -1
   * @return its rail mask; {@link TaskWork#ANY} for none, or without a rule
   */
  long railMask(int rule) {
    return rule < 0 ? TaskWork.ANY : railMask[rule];
  }

  /**
   * The priority a request runs at: the one rule {@code rule} gives, when the request kept the
   * default ({@link Priority#HIGH}); its own otherwise.
   *
   * @param rule the rule that chose the request's transport, or -1
   * @param requested the request's own priority
   * @return the priority its task carries
   */
  Priority priority(int rule, Priority requested) {
    if (rule < 0 || gives[rule] == null || requested != Priority.HIGH) {
      return requested;
    }
    return gives[rule];
  }

  /**
   * Whether a task rule {@code rule} sent to {@code from} may fail over to TCP: only when the rule
   * lists TCP after {@code from}. A task no rule chose may, as before.
   *
   * @param rule the rule, or -1
   * @param from the transport it was handed to
   * @return whether failover stays within what the rule chose
   */
  boolean mayFailOver(int rule, Transport from) {
    return rule < 0 || (failsOverFrom[rule] & (1 << from.ordinal())) != 0;
  }
}
