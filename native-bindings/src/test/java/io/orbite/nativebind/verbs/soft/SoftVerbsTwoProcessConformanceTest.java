package io.orbite.nativebind.verbs.soft;

import java.util.List;

/**
 * {@link VerbsConformance} across two processes: the far end is a {@link SoftVerbs} in a child JVM
 * of its own ({@link ProcessPeer}), its device on 127.0.0.1, reached only over the soft wire. Every
 * test of the suite runs against a fresh child.
 */
class SoftVerbsTwoProcessConformanceTest extends VerbsConformance {
  @Override
  protected ConformancePeer openPeer() {
    return new ProcessPeer(List.of(), "127.0.0.1");
  }
}
