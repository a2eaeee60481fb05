package io.orbite.engine.wire;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The SHM part of a Describe answer: the source's host and token, and the allocations it exports.
 */
public record SharedExports(SharedHost host, List<SharedRegion> regions) {
  public SharedExports {
    Objects.requireNonNull(host, "host");
    regions = List.copyOf(regions);
  }

  /** The exported allocations by region id. */
  public Map<Long, SharedRegion> byRegion() {
    return regions.stream()
        .collect(Collectors.toUnmodifiableMap(SharedRegion::regionId, Function.identity()));
  }
}
