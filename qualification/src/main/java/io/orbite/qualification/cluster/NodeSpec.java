package io.orbite.qualification.cluster;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * One cluster node of the qualification scenario: its engine's name, where its Pekko Cluster member
 * listens (Artery TCP), how it joins, and the port its engine listens on (kept across a restart).
 * It renders the node's Pekko configuration ({@link #pekkoConfig()}) and travels to the child JVM
 * as its arguments ({@link #toArgs()}, {@link #parse}).
 *
 * @param name the engine's name ({@code EngineConfig.name}), the directory's key
 * @param host the node's own loopback address: Artery's canonical host and, for bootstrap, the
 *     management endpoint's (one contact point per address)
 * @param arteryPort the cluster member's port
 * @param enginePort the engine's TCP listen port
 * @param join how the node joins the cluster
 * @param seeds seed nodes as {@code host:port} (for {@link Join#SEEDS})
 * @param managementPort Pekko Management's HTTP port on {@code host} (for {@link Join#BOOTSTRAP})
 * @param contactPoints every node's management endpoint, {@code host:port}, the {@code config}
 *     discovery method's list (for {@link Join#BOOTSTRAP})
 * @param poolBytes the size of the region the node publishes as {@code kv-pool}
 */
public record NodeSpec(
    String name,
    String host,
    int arteryPort,
    int enginePort,
    Join join,
    List<String> seeds,
    int managementPort,
    List<String> contactPoints,
    long poolBytes) {

  /** The actor system's name: every member of one cluster has the same. */
  public static final String SYSTEM = "orbite";

  /** The service name the {@code config} discovery method lists the contact points under. */
  public static final String SERVICE = "orbite-engines";

  /** How a node joins the cluster. */
  public enum Join {
    /** {@code JoinSeedNodes} with a fixed list of members' addresses. */
    SEEDS,
    /** Pekko Management's cluster bootstrap, contact points from the {@code config} discovery. */
    BOOTSTRAP
  }

  /** Copies the lists. */
  public NodeSpec {
    seeds = List.copyOf(seeds);
    contactPoints = List.copyOf(contactPoints);
  }

  /**
   * This node's member address, as seed lists name it.
   *
   * @return {@code host:arteryPort}
   */
  public String memberHostPort() {
    return host + ":" + arteryPort;
  }

  /**
   * This node's management endpoint, as the contact point list names it.
   *
   * @return {@code host:managementPort}
   */
  public String contactPoint() {
    return host + ":" + managementPort;
  }

  /**
   * The node's Pekko configuration: a cluster provider on Artery TCP at {@code host:arteryPort},
   * the split-brain resolver (keep-majority) as downing provider, and timings cut so that the
   * scenario runs in seconds on a small host; for bootstrap, Pekko Management on {@code
   * host:managementPort} and the contact points as a {@code config} discovery service. Seed nodes
   * are not in it: the node joins them only once its engine serves its regions ({@link
   * ClusterNode}).
   *
   * @return HOCON, to be placed before the application's own configuration
   */
  public String pekkoConfig() {
    StringBuilder c = new StringBuilder();
    c.append(
        """
        pekko {
          loglevel = INFO
          actor.provider = cluster
          remote.artery {
            transport = tcp
            canonical.hostname = "%s"
            canonical.port = %d
          }
          coordinated-shutdown.exit-jvm = off
          cluster {
            downing-provider-class = "org.apache.pekko.cluster.sbr.SplitBrainResolverProvider"
            split-brain-resolver {
              active-strategy = keep-majority
              stable-after = 3s
              # A JVM starting on a 2-core host can starve the others' heartbeats for seconds;
              # such a burst must not read as an unstable cluster and down everyone.
              down-all-when-unstable = off
            }
            # Defaults are tuned for production WANs; on loopback the scenario wants seconds.
            failure-detector {
              heartbeat-interval = 1s
              acceptable-heartbeat-pause = 3s
              expected-response-after = 1s
            }
            periodic-tasks-initial-delay = 200ms
            gossip-interval = 300ms
            leader-actions-interval = 300ms
            unreachable-nodes-reaper-interval = 500ms
            seed-node-timeout = 2s
            retry-unsuccessful-join-after = 2s
            distributed-data {
              gossip-interval = 300ms
              notify-subscribers-interval = 100ms
            }
          }
        }
        """
            .formatted(host, arteryPort));
    if (join == Join.BOOTSTRAP) {
      c.append(
          """
          pekko.management {
            http.hostname = "%s"
            http.port = %d
            cluster.bootstrap {
              contact-point-discovery {
                service-name = "%s"
                discovery-method = config
                required-contact-point-nr = %d
                stable-margin = 1s
                interval = 500ms
              }
              contact-point.probe-interval = 500ms
            }
          }
          pekko.discovery.config.services."%s".endpoints = [%s]
          """
              .formatted(
                  host,
                  managementPort,
                  SERVICE,
                  contactPoints.size(),
                  SERVICE,
                  contactPoints.stream()
                      .map(
                          p -> {
                            int colon = p.lastIndexOf(':');
                            return "{host = \"%s\", port = %s}"
                                .formatted(p.substring(0, colon), p.substring(colon + 1));
                          })
                      .collect(Collectors.joining(", "))));
    }
    return c.toString();
  }

  /**
   * The node as command-line arguments for {@link ClusterNode}.
   *
   * @return the arguments {@link #parse} reads back
   */
  public List<String> toArgs() {
    return List.of(
        name,
        host,
        Integer.toString(arteryPort),
        Integer.toString(enginePort),
        join.name(),
        seeds.isEmpty() ? "-" : String.join(",", seeds),
        Integer.toString(managementPort),
        contactPoints.isEmpty() ? "-" : String.join(",", contactPoints),
        Long.toString(poolBytes));
  }

  /**
   * Reads {@link #toArgs()}'s output.
   *
   * @param args the child's arguments
   * @return the node
   * @throws IllegalArgumentException naming what is missing or wrong
   */
  public static NodeSpec parse(String[] args) {
    if (args.length != 9) {
      throw new IllegalArgumentException(
          "ClusterNode takes 9 arguments (name host arteryPort enginePort join seeds"
              + " managementPort contactPoints poolBytes), got "
              + args.length);
    }
    return new NodeSpec(
        args[0],
        args[1],
        Integer.parseInt(args[2]),
        Integer.parseInt(args[3]),
        Join.valueOf(args[4]),
        list(args[5]),
        Integer.parseInt(args[6]),
        list(args[7]),
        Long.parseLong(args[8]));
  }

  private static List<String> list(String arg) {
    return arg.equals("-") ? List.of() : new ArrayList<>(List.of(arg.split(",")));
  }
}
