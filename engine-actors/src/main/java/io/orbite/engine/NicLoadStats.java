package io.orbite.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One RDMA rail's load as this engine's requester side sees it ({@link Engine#nicLoadStats()}): its
 * link rate and the two bandwidth estimates the rail selection uses, and its byte charges. They are
 * local observations, read from the owner view (published every 200 ms), never by asking a device.
 * All rates are in bytes per second.
 *
 * @param device the device's name, for example {@code mlx5_0} or {@code soft0}
 * @param linkBytesPerSecond the port's link rate (400 Gb/s when the port reports none): the seed of
 *     both estimates, which stay within 0.1..10 times it
 * @param selectionBytesPerSecond the selection estimate: an EWMA of slices' payload bytes over
 *     their post-to-completion time
 * @param transmitBytesPerSecond the transmit estimate: completed payload bytes over time while
 *     payload was outstanding
 * @param chargedBytes bytes of slices assigned to the rail and not yet finished
 * @param postedBytes payload bytes ever posted on the rail
 * @param completedBytes payload bytes of posted slices that have ended (moved or not)
 * @param allocatedBytes bytes ever assigned to the rail
 * @param numaNode the NUMA node the device is attached to, {@code -1} when unknown
 * @param tier the rail's selection tier (0, 1 or 2; score weights 1, 5, 10), fixed when the
 *     transport started: its rank in the priority matrix row in use, else its NUMA locality
 *     relative to {@code rdma.selection.preferredNumaNode}
 * @param eligible whether the selection policy ({@code rdma.selection}: the device mask, strict
 *     NUMA, the priority matrix) lets the rail carry slices at all
 */
public record NicLoadStats(
    String device,
    long linkBytesPerSecond,
    long selectionBytesPerSecond,
    long transmitBytesPerSecond,
    long chargedBytes,
    long postedBytes,
    long completedBytes,
    long allocatedBytes,
    int numaNode,
    int tier,
    boolean eligible) {
  /**
   * The rails' loads in {@code view}: one per RDMA context owner.
   *
   * @param view an owner view ({@link Engine#ownerView()})
   * @return one entry per rail, in the view's order; empty without the RDMA transport
   */
  public static List<NicLoadStats> of(OwnerView view) {
    List<NicLoadStats> out = new ArrayList<>();
    for (OwnerView.Owner o : view.owners()) {
      if (!o.kind().equals("RdmaContext")) {
        continue;
      }
      Map<String, Long> c = o.charges();
      // The context's actor is "context-<device>" (its detail also leads with the device, but
      // goes on with the route and the lanes' state).
      String path = o.path();
      int at = path.lastIndexOf("/context-");
      out.add(
          new NicLoadStats(
              at >= 0 ? path.substring(at + "/context-".length()) : path,
              c.getOrDefault("linkBytesPerSecond", 0L),
              c.getOrDefault("selectionBytesPerSecond", 0L),
              c.getOrDefault("transmitBytesPerSecond", 0L),
              c.getOrDefault("chargedBytes", 0L),
              c.getOrDefault("postedBytes", 0L),
              c.getOrDefault("completedBytes", 0L),
              c.getOrDefault("allocatedBytes", 0L),
              (int) (long) c.getOrDefault("numaNode", -1L),
              (int) (long) c.getOrDefault("tier", 0L),
              c.getOrDefault("eligible", 1L) != 0));
    }
    return out;
  }
}
