package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.ConformancePeer;
import io.orbite.nativebind.verbs.InJvmPeer;

/**
 * {@link SoftVerbsConformance} (the provider-agnostic suite and the soft-only tests) between two
 * {@link SoftVerbs} in this JVM: two fabrics with one device each on 127.0.0.1, talking over TCP
 * like two processes would.
 */
class SoftVerbsConformanceTest extends SoftVerbsConformance {
  @Override
  protected ConformancePeer openPeer() {
    return new InJvmPeer("127.0.0.1");
  }
}
