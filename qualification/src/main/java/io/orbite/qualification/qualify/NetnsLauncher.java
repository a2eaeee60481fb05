package io.orbite.qualification.qualify;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Each host of a case in a network namespace of its own, the two joined by a veth pair with a /24
 * of their own and no default route: a distinct "host" on the network (../shared/notes and
 * docs/qualification.md, "Launchers"), whose link the supervisor can take down. Names carry this
 * JVM's PID and a counter, so parallel runs and a crashed run's leftovers cannot collide; {@link
 * #close} deletes them. The namespaces share this host's kernel, boot id and PID space, so SHM is
 * right between them, and kill and reap work by PID as on the local launcher.
 */
final class NetnsLauncher implements Launcher {
  private static final java.util.concurrent.atomic.AtomicInteger NEXT =
      new java.util.concurrent.atomic.AtomicInteger();

  /** Host alias to its namespace, veth end and address, for the case set up last. */
  private final Map<String, String[]> hosts = new LinkedHashMap<>();

  @Override
  public String name() {
    return "netns";
  }

  @Override
  public void setUp(Profile.Case c) throws IOException {
    close();
    long id = (ProcessHandle.current().pid() % 10_000) * 10 + NEXT.getAndIncrement() % 10;
    String net = "10.86." + (id % 250) + ".";
    List<String> aliases = new ArrayList<>(List.of(c.requester().host()));
    if (!c.source().host().equals(c.requester().host())) {
      aliases.add(c.source().host());
    }
    for (int i = 0; i < aliases.size(); i++) {
      String ns = "orbq" + id + "h" + i;
      String veth = "oq" + id + "v" + i;
      hosts.put(aliases.get(i), new String[] {ns, veth, net + (i + 1)});
      run("ip", "netns", "add", ns);
    }
    if (aliases.size() == 2) {
      String[] a = hosts.get(aliases.get(0));
      String[] b = hosts.get(aliases.get(1));
      run("ip", "link", "add", a[1], "type", "veth", "peer", "name", b[1]);
      for (String[] h : List.of(a, b)) {
        run("ip", "link", "set", h[1], "netns", h[0]);
        run("ip", "-n", h[0], "addr", "add", h[2] + "/24", "dev", h[1]);
        run("ip", "-n", h[0], "link", "set", h[1], "up");
      }
    } else {
      String[] a = hosts.get(aliases.get(0));
      a[2] = "127.0.0.1";
    }
    for (String[] h : hosts.values()) {
      run("ip", "-n", h[0], "link", "set", "lo", "up");
      String routes = run("ip", "-n", h[0], "route");
      if (routes.contains("default")) {
        throw new IOException("namespace " + h[0] + " has a default route: " + routes);
      }
    }
  }

  @Override
  public String address(String host) {
    return host(host)[2];
  }

  private String[] host(String alias) {
    String[] h = hosts.get(alias);
    if (h == null) {
      throw new IllegalStateException("no namespace for host '" + alias + "'");
    }
    return h;
  }

  @Override
  public Launch command(String host, Map<String, String> env, List<String> args) {
    List<String> cmd = new ArrayList<>(List.of("ip", "netns", "exec", host(host)[0]));
    cmd.addAll(Launcher.wrapped(args));
    return new Launch(cmd, env);
  }

  @Override
  public List<String> peerCommand(String host, List<String> args) {
    return new LocalLauncher().peerCommand(host, args);
  }

  @Override
  public void link(String host, boolean up) throws IOException {
    String[] h = host(host);
    run("ip", "-n", h[0], "link", "set", h[1], up ? "up" : "down");
  }

  @Override
  public void close() {
    for (String[] h : hosts.values()) {
      try {
        run("ip", "netns", "del", h[0]);
      } catch (IOException e) {
        System.err.println("orbite qualify: could not delete namespace " + h[0] + ": " + e);
      }
    }
    hosts.clear();
  }

  /** Runs a command, returns its output; a non-zero exit is an error naming it and its output. */
  static String run(String... cmd) throws IOException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    try {
      if (p.waitFor() != 0) {
        throw new IOException(String.join(" ", cmd) + " failed (" + p.exitValue() + "): " + out);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted: " + String.join(" ", cmd), e);
    }
    return out;
  }
}
