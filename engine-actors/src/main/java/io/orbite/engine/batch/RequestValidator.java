package io.orbite.engine.batch;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.Priority;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.TaskWork;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Requester-side checks of a submission, run before anything is charged or sent. The source checks
 * authority again on every frame; this only refuses what is already known to be wrong, naming the
 * task and the field.
 *
 * <p>It is also the routing step: each request is routed once, here, through its segment ({@link
 * PeerSegment#route}), or, for an UNSPEC request to a peer that a transport policy rule matches,
 * through the rule ({@link TransportSelector}).
 */
public final class RequestValidator {
  private RequestValidator() {}

  /**
   * A submission that passed: its byte total, and the routing of each request, chosen once here and
   * used as it is by admission, with the policy rule that chose it, if any.
   *
   * @param totalBytes the requests' bytes
   * @param routings each request's channel and route, in request order
   * @param selector the transport policies the requests were routed with
   * @param rules the index of the rule that chose each request's transport (-1: none), in request
   *     order; null when no rule chose any (one array per submission, none per task)
   */
  public record Routed(
      long totalBytes, PeerSegment.Routing[] routings, TransportSelector selector, short[] rules) {

    /**
     * Requests routed without policies.
     *
     * @param totalBytes the requests' bytes
     * @param routings each request's channel and route, in request order
     */
    public Routed(long totalBytes, PeerSegment.Routing[] routings) {
      this(totalBytes, routings, TransportSelector.NONE, null);
    }

    /** The rule that chose request {@code k}'s transport, or -1. */
    public int rule(int k) {
      return rules == null ? -1 : rules[k];
    }

    /** The priority request {@code k}'s task runs at ({@link TransportSelector#priority}). */
    public Priority priority(int k, Priority requested) {
      return rules == null ? requested : selector.priority(rules[k], requested);
    }

    /** The TCP lanes request {@code k}'s task may use ({@link TransportSelector#laneMask}). */
    public long laneMask(int k) {
      return rules == null ? TaskWork.ANY : selector.laneMask(rules[k]);
    }

    /** The RDMA rails request {@code k}'s task may use ({@link TransportSelector#railMask}). */
    public long railMask(int k) {
      return rules == null ? TaskWork.ANY : selector.railMask(rules[k]);
    }

    /**
     * Whether request {@code k}'s task, handed to {@code from}, may fail over to TCP as far as the
     * rule that chose it goes ({@link TransportSelector#mayFailOver}).
     */
    public boolean mayFailOver(int k, Transport from) {
      return rules == null || selector.mayFailOver(rules[k], from);
    }
  }

  /**
   * What the routing step keeps across the requests of one submission when policies are on: the
   * last segment's peer mask (matched once per segment, not per task) and the rules chosen.
   */
  private static final class Selection {
    private final TransportSelector selector;
    private final int size;
    private PeerSegment segment;
    private long peers;
    private short[] rules;

    Selection(TransportSelector selector, int size) {
      this.selector = selector;
      this.size = size;
    }

    /** The first rule that accepts request {@code r} to {@code remote}, or -1. */
    int match(TransferRequest r, PeerSegment remote, Registration local) {
      if (r.transport() != Transport.UNSPEC || remote.channel().transport() == Transport.FILE) {
        return -1;
      }
      if (remote != segment) {
        segment = remote;
        peers = selector.peerMask(remote);
      }
      return selector.match(
          r.op(), r.lengthBytes(), r.priority(), TransportSelector.memoryKind(local), peers);
    }

    void chose(int i, int rule) {
      if (rules == null) {
        rules = new short[size];
        Arrays.fill(rules, (short) -1);
      }
      rules[i] = (short) rule;
    }
  }

  /**
   * {@link #validate(List, TransportSelector)} without policies: every request routed as it names.
   */
  public static Routed validate(List<TransferRequest> requests) {
    return validate(requests, TransportSelector.NONE);
  }

  /**
   * Throws {@link TransferException} for the first invalid request; routes every request, through
   * {@code selector}'s first matching rule for an UNSPEC request to a peer.
   */
  public static Routed validate(List<TransferRequest> requests, TransportSelector selector) {
    if (requests == null || requests.isEmpty()) {
      throw new TransferException(ErrorKind.INVALID_ARGUMENT, "submit: no requests");
    }
    long total = 0;
    PeerSegment.Routing[] routings = new PeerSegment.Routing[requests.size()];
    Selection selection = selector.active() ? new Selection(selector, requests.size()) : null;
    for (int i = 0; i < requests.size(); i++) {
      TransferRequest r = requests.get(i);
      if (r == null) {
        throw invalid(i, "request is null");
      }
      routings[i] = check(i, r, selection);
      total = Math.addExact(total, r.lengthBytes());
    }
    return new Routed(total, routings, selector, selection == null ? null : selection.rules);
  }

  /**
   * The one peer a notified submission's requests go to (they have passed {@link #validate}).
   *
   * @throws TransferException INVALID_ARGUMENT when they go to more than one remote segment, or to
   *     a file segment
   */
  public static PeerSegment notifiedPeer(List<TransferRequest> requests) {
    PeerSegment peer = (PeerSegment) requests.get(0).remote();
    if (peer.channel().transport() == io.orbite.engine.Transport.FILE) {
      throw invalid(
          0, "a notification goes to a peer engine, not to a file segment (" + peer.label() + ")");
    }
    for (int i = 1; i < requests.size(); i++) {
      if (requests.get(i).remote() != peer) {
        throw invalid(
            i,
            "a notification needs every request of its submission to go to one remote segment:"
                + " this one goes to "
                + requests.get(i).remote().label()
                + ", task 0 to "
                + peer.label());
      }
    }
    return peer;
  }

  private static PeerSegment.Routing check(int i, TransferRequest r, Selection selection) {
    if (r.local() == null) {
      throw invalid(i, "local memory is null");
    }
    if (r.remote() == null) {
      throw invalid(i, "remote segment is null");
    }
    if (!(r.remote() instanceof PeerSegment remote)) {
      throw invalid(
          i,
          "remote segment is not one an OrbiTE engine opened: " + r.remote().getClass().getName());
    }
    if (r.remote().isClosed()) {
      throw invalid(
          i, "remote segment " + r.remote().label() + " was closed; open the segment again");
    }
    if (r.lengthBytes() <= 0) {
      throw invalid(i, "length must be positive, got " + r.lengthBytes());
    }
    if (r.deadline() != null && (r.deadline().isNegative() || r.deadline().isZero())) {
      throw invalid(i, "deadline must be positive, got " + r.deadline());
    }
    long localLength = r.local().lengthBytes();
    if (r.localOffset() < 0 || r.localOffset() > localLength - r.lengthBytes()) {
      throw invalid(
          i,
          "local range ["
              + r.localOffset()
              + ", +"
              + r.lengthBytes()
              + ") is outside region "
              + r.local().regionId()
              + " of "
              + localLength
              + " B");
    }
    if (!(r.local() instanceof Registration local)) {
      throw invalid(
          i,
          "local memory is not a range an OrbiTE engine registered: "
              + r.local().getClass().getName());
    }
    if (!local.visible()) {
      throw invalid(i, "local region " + r.local().regionId() + " is unregistered");
    }
    Optional<RemoteRegion> region = r.remote().region(r.regionId());
    if (region.isEmpty()) {
      throw invalid(i, "region " + r.regionId() + " was not published by " + r.remote().label());
    }
    long remoteLength = region.get().lengthBytes();
    if (r.remoteOffset() < 0 || r.remoteOffset() > remoteLength - r.lengthBytes()) {
      throw invalid(
          i,
          "remote range ["
              + r.remoteOffset()
              + ", +"
              + r.lengthBytes()
              + ") is outside region "
              + r.regionId()
              + " of "
              + remoteLength
              + " B at "
              + r.remote().label());
    }
    if (!region.get().access().allows(r.op())) {
      throw new TransferException(
          ErrorKind.PERMISSION_DENIED,
          "task "
              + i
              + ": region "
              + r.regionId()
              + " at "
              + r.remote().label()
              + " grants "
              + region.get().access()
              + ", not remote "
              + (r.op() == Op.READ ? "READ" : "WRITE"));
    }
    int rule = selection == null ? -1 : selection.match(r, remote, local);
    PeerSegment.Routing routing =
        rule >= 0
            ? selection.selector.route(rule, remote, r.regionId())
            : remote.route(r.transport(), r.regionId());
    PeerChannel channel = routing.channel();
    ChannelGate base = remote.channel().gate();
    if (base.state() instanceof ChannelGate.Fenced) {
      // A replaced incarnation refuses on every transport (C3), whichever channel was chosen.
      throw new TransferException(
          ErrorKind.EPOCH_MISMATCH,
          "task " + i + ": " + base.refusal() + "; open the segment again");
    }
    if (channel == null && rule >= 0) {
      throw new TransferException(ErrorKind.UNAVAILABLE, "task " + i + ": " + routing.refusal());
    }
    if (channel == null) {
      throw new TransferException(
          ErrorKind.UNAVAILABLE,
          "task "
              + i
              + ": transport "
              + r.transport()
              + " is not available to "
              + r.remote().label()
              + ": "
              + routing.refusal());
    }
    if (!channel.gate().active()) {
      throw channel.gate().refusalException("task " + i + ": ");
    }
    if (rule >= 0) {
      selection.chose(i, rule);
    }
    return routing;
  }

  private static TransferException invalid(int i, String what) {
    return new TransferException(ErrorKind.INVALID_ARGUMENT, "task " + i + ": " + what);
  }
}
