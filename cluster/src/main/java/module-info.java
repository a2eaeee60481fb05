/**
 * OrbiTE's optional peer directory on Pekko Cluster: engines publish their name, incarnation,
 * transports and named regions in a replicated map (Distributed Data) and find each other by name;
 * restarts and removed members fence this engine's entries through the same path as a restart its
 * own lanes detect. The engine's other modules do not depend on this one.
 */
module io.orbite.cluster {
  requires transitive io.orbite.engine;
  requires transitive pekko.actor.typed;
  requires transitive pekko.stream;
  requires pekko.actor;
  requires pekko.cluster;
  requires pekko.cluster.typed;
  requires pekko.cluster.ddata;
  requires scala.library;
  requires typesafe.config;
  requires com.fasterxml.jackson.databind;
  requires org.slf4j;

  exports io.orbite.cluster;
}
