package io.orbite.engine.batch;

import io.orbite.engine.TransferRequest;
import io.orbite.engine.spi.PeerSegment;
import java.util.List;

/**
 * What {@link RequestValidator#validate} hands admission, made without its checks: a test that
 * admits requests the validator would refuse (a local range unregistered since) still routes each
 * through its segment's routing step.
 */
final class Routings {
  private Routings() {}

  static RequestValidator.Routed of(List<TransferRequest> requests) {
    long total = 0;
    PeerSegment.Routing[] routings = new PeerSegment.Routing[requests.size()];
    for (int i = 0; i < routings.length; i++) {
      TransferRequest r = requests.get(i);
      total += r.lengthBytes();
      routings[i] = ((PeerSegment) r.remote()).route(r.transport(), r.regionId());
    }
    return new RequestValidator.Routed(total, routings);
  }
}
