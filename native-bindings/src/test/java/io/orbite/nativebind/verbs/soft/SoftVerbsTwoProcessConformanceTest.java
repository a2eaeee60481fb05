package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.ConformancePeer;
import java.util.List;

/**
 * {@link SoftVerbsConformance} (the provider-agnostic suite and the soft-only tests) across two
 * processes: the far end is a {@link SoftVerbs} in a child JVM of its own ({@link ProcessPeer}),
 * its device on 127.0.0.1, reached only over the soft wire. Every test of the suite runs against a
 * fresh child.
 */
class SoftVerbsTwoProcessConformanceTest extends SoftVerbsConformance {
  @Override
  protected ConformancePeer openPeer() {
    return new ProcessPeer(List.of(), "127.0.0.1");
  }
}
