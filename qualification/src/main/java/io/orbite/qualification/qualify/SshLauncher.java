package io.orbite.qualification.qualify;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Peers on hosts reached over ssh, identity-pinned: each host of a case is the profile's {@code
 * hosts.<alias>.ssh}. Before anything runs there, the host's key must be in the profile's
 * known-hosts file (strict checking, batch mode: no prompt, no password), and the host must report
 * the profile's hostname and boot id. The same build must be installed on every host at {@code
 * remoteClassPath}. A peer's environment travels in its command line ({@code env K=V ...}), each
 * word quoted for the remote shell; kills and liveness checks go by PID over ssh.
 */
final class SshLauncher implements Launcher {
  private final Profile profile;

  SshLauncher(Profile profile) {
    this.profile = profile;
  }

  @Override
  public String name() {
    return "ssh";
  }

  private Profile.Ssh ssh(String alias) {
    Profile.Host h = profile.hosts().get(alias);
    if (h == null || h.ssh() == null) {
      throw new ProfileException(
          "hosts."
              + alias
              + ".ssh: the ssh launcher needs it (address, user, identityFile,"
              + " knownHosts, hostname, bootId, remoteJava, remoteClassPath)");
    }
    return h.ssh();
  }

  /** {@code ssh} with the pinned options, to {@code alias}, running {@code remote}. */
  private List<String> ssh(String alias, String remote) {
    Profile.Ssh s = ssh(alias);
    return List.of(
        "ssh",
        "-i",
        s.identityFile(),
        "-p",
        Integer.toString(s.port()),
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "UserKnownHostsFile=" + s.knownHosts(),
        "-o",
        "ConnectTimeout=10",
        "-o",
        "LogLevel=ERROR",
        s.user() + "@" + s.address(),
        remote);
  }

  @Override
  public void setUp(Profile.Case c) throws IOException {
    for (String alias : List.of(c.source().host(), c.requester().host())) {
      check(alias);
    }
  }

  @Override
  public String[] identity(String alias) {
    Profile.Ssh s = ssh(alias);
    return new String[] {s.hostname(), s.bootId()};
  }

  /** Checks that {@code alias} is the host the profile names: its hostname and its boot id. */
  private void check(String alias) throws IOException {
    Profile.Ssh s = ssh(alias);
    String out =
        NetnsLauncher.run(
            ssh(alias, "cat /proc/sys/kernel/hostname /proc/sys/kernel/random/boot_id")
                .toArray(String[]::new));
    String[] lines = out.trim().split("\\s+");
    if (lines.length != 2) {
      throw new IOException("host '" + alias + "' at " + s.address() + " answered: " + out);
    }
    if (!lines[0].equals(s.hostname())) {
      throw new IOException(
          "host '"
              + alias
              + "' at "
              + s.address()
              + " is '"
              + lines[0]
              + "', not the profile's hostname '"
              + s.hostname()
              + "': nothing was run there");
    }
    if (!lines[1].equals(s.bootId())) {
      throw new IOException(
          "host '"
              + alias
              + "' at "
              + s.address()
              + " has boot id "
              + lines[1]
              + ", not the profile's "
              + s.bootId()
              + " (rebooted, or another machine): nothing was run there");
    }
  }

  @Override
  public String address(String host) {
    return ssh(host).address();
  }

  @Override
  public Launch command(String host, Map<String, String> env, List<String> args) {
    StringBuilder remote = new StringBuilder("env");
    new java.util.TreeMap<>(env)
        .forEach((k, v) -> remote.append(' ').append(k).append('=').append(quote(v)));
    for (String word : Launcher.wrapped(args)) {
      remote.append(' ').append(quote(word));
    }
    return new Launch(ssh(host, remote.toString()), Map.of());
  }

  @Override
  public List<String> peerCommand(String host, List<String> args) {
    Profile.Ssh s = ssh(host);
    List<String> cmd = new ArrayList<>();
    cmd.add(s.remoteJava());
    cmd.addAll(io.orbite.qualification.harness.EngineProcess.jvmFlags());
    cmd.addAll(List.of("-cp", s.remoteClassPath(), QualifyPeer.class.getName()));
    cmd.addAll(args);
    return cmd;
  }

  @Override
  public void kill(String host, long pid) throws IOException {
    NetnsLauncher.run(ssh(host, "kill -KILL " + pid).toArray(String[]::new));
  }

  @Override
  public boolean alive(String host, long pid) throws IOException {
    Process p = new ProcessBuilder(ssh(host, "kill -0 " + pid)).redirectErrorStream(true).start();
    p.getInputStream().readAllBytes();
    try {
      int status = p.waitFor();
      if (status == 255) {
        throw new IOException("ssh to '" + host + "' failed while checking pid " + pid);
      }
      return status == 0;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }

  @Override
  public void close() {}

  /** {@code word} quoted for a POSIX shell: in single quotes, each single quote spelled out. */
  static String quote(String word) {
    return "'" + word.replace("'", "'\"'\"'") + "'";
  }
}
