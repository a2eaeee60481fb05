package io.orbite.nativebind.verbs.soft;

/**
 * {@link VerbsConformance} between two {@link SoftVerbs} in this JVM: two fabrics with one device
 * each on 127.0.0.1, talking over TCP like two processes would.
 */
class SoftVerbsConformanceTest extends VerbsConformance {
  @Override
  protected ConformancePeer openPeer() {
    return new InJvmPeer("127.0.0.1");
  }
}
