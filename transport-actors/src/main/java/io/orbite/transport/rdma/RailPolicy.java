package io.orbite.transport.rdma;

import io.orbite.config.RdmaPriorityMatrix;
import io.orbite.config.RdmaSelectionConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * Which of the transport's rails may carry a slice, and in which selection tier each sits (spec
 * 002, "Device, port, GID and memory topology discovery" and "Custom topology and priority
 * matrices"), fixed when the transport starts. The hard limits are intersected before any score:
 * the device mask ({@code rdma.selection.deviceMask}), strict NUMA locality ({@code
 * rdma.selection.strictLocalNuma}: a rail known to sit on another node than {@code
 * preferredNumaNode} is refused, one of unknown locality stays) and the priority matrix row of the
 * requester's location (a device it does not list is refused). Weights and probes choose only among
 * what is left; nothing widens it.
 *
 * <p>Tiers: with a matrix, a rail's rank in its row (0, 1, 2); without one, its NUMA locality
 * relative to {@code preferredNumaNode}: the same node tier 0, unknown tier 1, another node tier 2;
 * every rail tier 0 while the preferred node is unknown. Immutable.
 */
final class RailPolicy {
  /** A start-time refusal: a mask or matrix name that is not an opened device. */
  static final class Refused extends IllegalStateException {
    Refused(String message) {
      super(message);
    }
  }

  private final List<String> devices;
  private final int[] numa;
  private final int[] tier;
  private final String[] excludedBy;
  private final String noneAllowed;
  private final String location;

  private RailPolicy(
      List<String> devices, int[] numa, int[] tier, String[] excludedBy, String location) {
    this.devices = devices;
    this.numa = numa;
    this.tier = tier;
    this.excludedBy = excludedBy;
    this.location = location;
    List<String> why = new ArrayList<>();
    for (int r = 0; r < devices.size(); r++) {
      if (excludedBy[r] == null) {
        why = null;
        break;
      }
      why.add(devices.get(r) + " by " + excludedBy[r]);
    }
    this.noneAllowed =
        why == null
            ? null
            : "the RDMA selection policy allows no rail (" + String.join("; ", why) + ")";
  }

  /** Every rail allowed, all in tier 0 (no policy). */
  static RailPolicy open(List<String> devices) {
    int[] unknown = new int[devices.size()];
    java.util.Arrays.fill(unknown, -1);
    return new RailPolicy(
        List.copyOf(devices),
        unknown,
        new int[devices.size()],
        new String[devices.size()],
        RdmaPriorityMatrix.ANY_LOCATION);
  }

  /**
   * The policy of {@code selection} over the opened {@code devices}, whose NUMA nodes are {@code
   * numa} (-1 unknown), with {@code matrix} (the inline one, the file's, or {@link
   * RdmaPriorityMatrix#NONE}).
   *
   * @throws Refused naming {@code rdma.selection.deviceMask[i]}, or the matrix's JSON path, for the
   *     first name that is not an opened device, and the opened ones
   */
  static RailPolicy of(
      RdmaSelectionConfig selection, List<String> devices, int[] numa, RdmaPriorityMatrix matrix) {
    List<String> mask = selection.deviceMask();
    for (int i = 0; i < mask.size(); i++) {
      if (!devices.contains(mask.get(i))) {
        throw new Refused(
            "rdma.selection.deviceMask["
                + i
                + "]: \""
                + mask.get(i)
                + "\" is not an opened device (opened: "
                + String.join(", ", devices)
                + ")");
      }
    }
    matrix
        .inventoryError(devices)
        .ifPresent(
            e -> {
              throw new Refused(e);
            });
    int preferred = selection.preferredNumaNode();
    List<List<String>> ranks = matrix.ranksFor(preferred);
    String location = matrix.isEmpty() ? "" : matrix.locationFor(preferred);
    String row =
        "the priority matrix row "
            + location
            + (matrix.synthesized(preferred) ? " (synthesized from every named device)" : "");
    int n = devices.size();
    int[] tier = new int[n];
    String[] excludedBy = new String[n];
    for (int r = 0; r < n; r++) {
      String device = devices.get(r);
      if (matrix.isEmpty()) {
        tier[r] = numaTier(preferred, numa[r]);
      } else {
        tier[r] = -1;
        for (int k = 0; k < ranks.size() && tier[r] < 0; k++) {
          if (ranks.get(k).contains(device)) {
            tier[r] = k;
          }
        }
        if (tier[r] < 0) {
          tier[r] = RailSelector.TIER_WEIGHTS.length - 1;
          excludedBy[r] = row + ", which does not list it";
        }
      }
      if (excludedBy[r] == null && !mask.isEmpty() && !mask.contains(device)) {
        excludedBy[r] = "rdma.selection.deviceMask";
      }
      if (excludedBy[r] == null
          && selection.strictLocalNuma()
          && preferred >= 0
          && numa[r] >= 0
          && numa[r] != preferred) {
        excludedBy[r] =
            "rdma.selection.strictLocalNuma (on NUMA node "
                + numa[r]
                + ", preferred "
                + preferred
                + ")";
      }
    }
    return new RailPolicy(List.copyOf(devices), numa.clone(), tier, excludedBy, location);
  }

  /** The NUMA tier of a rail on {@code node} for memory on {@code preferred} (-1: unknown). */
  static int numaTier(int preferred, int node) {
    if (preferred < 0) {
      return 0;
    }
    if (node < 0) {
      return 1;
    }
    return node == preferred ? 0 : 2;
  }

  int rails() {
    return devices.size();
  }

  boolean allowed(int rail) {
    return excludedBy[rail] == null;
  }

  int tier(int rail) {
    return tier[rail];
  }

  int numaNode(int rail) {
    return numa[rail];
  }

  int[] tiers() {
    return tier.clone();
  }

  /** Why {@code rail} may not carry slices, or null when it may. */
  String excludedBy(int rail) {
    return excludedBy[rail];
  }

  /** Why no rail may carry a slice (naming each rail's policy), or null when some rail may. */
  String noneAllowed() {
    return noneAllowed;
  }

  /** The matrix row in use ({@code cpu:0}, {@code *}), or empty without a matrix. */
  String location() {
    return location;
  }
}
