/**
 * The {@code ./orbite} CLI (demo, bench, examples), the engine-process harness and the byte
 * verifier: built on the engine's API like any application, plus the native bindings for the host
 * facts the benches report; the cluster scenario's nodes (Pekko Cluster members, cluster
 * bootstrap). It requires the transports and observability so that a launch on the module path
 * finds their services; nothing depends on this module.
 */
module io.orbite.qualification {
  requires io.orbite.engine;
  requires io.orbite.nativebind;
  requires io.orbite.transport;
  requires io.orbite.observability;
  requires io.orbite.cluster;
  requires pekko.actor;
  requires pekko.cluster;
  requires pekko.cluster.typed;
  requires typesafe.config;
  requires com.fasterxml.jackson.databind;
  requires org.slf4j;
  requires java.management;
  requires jdk.management;
}
