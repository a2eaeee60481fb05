package io.orbite.engine.wire;

import io.orbite.engine.RemoteRegion;
import java.util.List;

/** What a source says about itself in a DESCRIBE_RESPONSE. */
public record Description(String host, int port, long epoch, List<RemoteRegion> regions) {
  public Description {
    regions = List.copyOf(regions);
  }
}
