package io.orbite.engine;

import java.util.List;

/**
 * What {@link Engine#checkPeer} learned at one endpoint.
 *
 * @param endpoint the endpoint checked ({@code host:port})
 * @param answering the incarnation whose Describe answered there; null when nothing answered
 * @param fenced the incarnations this check fenced because another epoch answers there ({@link
 *     PeerEvent.PeerFenced} was published for each)
 * @param lost the incarnations this check fenced because nothing answers there ({@link
 *     PeerEvent.PeerLost} was published for each)
 * @param detail why nothing answered (the Describe failure's sentence); empty when something did
 */
public record PeerCheck(
    String endpoint,
    SegmentDescriptor answering,
    List<SegmentDescriptor> fenced,
    List<SegmentDescriptor> lost,
    String detail) {
  /** Copies the lists. */
  public PeerCheck {
    fenced = List.copyOf(fenced);
    lost = List.copyOf(lost);
  }
}
