package io.orbite.engine.batch;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.Registration;
import java.util.List;
import java.util.Optional;

/**
 * Requester-side checks of a submission, run before anything is charged or sent. The source checks
 * authority again on every frame; this only refuses what is already known to be wrong, naming the
 * task and the field.
 */
public final class RequestValidator {
  private RequestValidator() {}

  /**
   * A submission that passed: its byte total, and the routing of each request, chosen once here and
   * used as it is by admission.
   *
   * @param totalBytes the requests' bytes
   * @param routings each request's channel and route, in request order
   */
  public record Routed(long totalBytes, PeerSegment.Routing[] routings) {}

  /** Throws {@link TransferException} for the first invalid request; routes every request. */
  public static Routed validate(List<TransferRequest> requests) {
    if (requests == null || requests.isEmpty()) {
      throw new TransferException(ErrorKind.INVALID_ARGUMENT, "submit: no requests");
    }
    long total = 0;
    PeerSegment.Routing[] routings = new PeerSegment.Routing[requests.size()];
    for (int i = 0; i < requests.size(); i++) {
      TransferRequest r = requests.get(i);
      if (r == null) {
        throw invalid(i, "request is null");
      }
      routings[i] = check(i, r);
      total = Math.addExact(total, r.lengthBytes());
    }
    return new Routed(total, routings);
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

  private static PeerSegment.Routing check(int i, TransferRequest r) {
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
    PeerSegment.Routing routing = remote.route(r.transport(), r.regionId());
    PeerChannel channel = routing.channel();
    ChannelGate base = remote.channel().gate();
    if (base.state() instanceof ChannelGate.Fenced) {
      // A replaced incarnation refuses on every transport (C3), whichever channel was chosen.
      throw new TransferException(
          ErrorKind.EPOCH_MISMATCH,
          "task " + i + ": " + base.refusal() + "; open the segment again");
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
    return routing;
  }

  private static TransferException invalid(int i, String what) {
    return new TransferException(ErrorKind.INVALID_ARGUMENT, "task " + i + ": " + what);
  }
}
