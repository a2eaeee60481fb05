package io.orbite.qualification.qualify;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Where the peers of a case run, and how the supervisor starts, kills and faults them: {@code
 * local} (processes on this host, on loopback), {@code netns} ({@link NetnsLauncher}: each host of
 * the case a network namespace of its own, joined by a veth pair) or {@code ssh} ({@link
 * SshLauncher}: identity-pinned hosts).
 *
 * <p>Every launcher runs the peer's java under a small {@code sh} wrapper that waits for it and
 * then prints {@code EXITSTATUS <status>}: the wrapper is the peer's parent and reaps it, on
 * whichever host it runs, so the supervisor learns the exact exit status of the exact PID (137
 * after a SIGKILL) even through ssh, which does not pass a remote signal's status back.
 */
interface Launcher extends AutoCloseable {
  /** The shell program of the wrapper: runs its arguments, then prints their exit status. */
  String WRAPPER = "\"$@\"; echo EXITSTATUS $?";

  /** The launcher's name as the profile and the CLI spell it. */
  String name();

  /** Makes the hosts of {@code c} ready (namespaces, a link, identity checks). */
  void setUp(Profile.Case c) throws IOException;

  /** The address an engine on {@code host} listens on and its peer dials. */
  String address(String host);

  /**
   * The command that starts {@code args} (a java command line) on {@code host} under the wrapper,
   * with {@code env} in its environment.
   *
   * @return the command and the environment to give it locally (ssh carries the environment in the
   *     command itself)
   */
  Launch command(String host, Map<String, String> env, List<String> args);

  /** The java command line of a {@link QualifyPeer} on {@code host}. */
  List<String> peerCommand(String host, List<String> args);

  /**
   * Sends SIGKILL to {@code pid} on {@code host}; by default a PID of this machine (the local and
   * netns launchers share its PID space).
   */
  default void kill(String host, long pid) throws IOException {
    ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
  }

  /** Whether {@code pid} still exists on {@code host}; by default a PID of this machine. */
  default boolean alive(String host, long pid) throws IOException {
    return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
  }

  /**
   * Who {@code host} is: its hostname and boot id. The local and netns launchers' hosts are this
   * machine; an ssh host is the one its profile pins (checked in {@link #setUp}).
   */
  default String[] identity(String host) throws IOException {
    return new String[] {
      java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/kernel/hostname")).trim(),
      java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/kernel/random/boot_id"))
          .trim()
    };
  }

  /** Takes {@code host}'s end of the case's link down, or up again. */
  default void link(String host, boolean up) throws IOException {
    throw new IOException("the " + name() + " launcher has no link to take down: use netns");
  }

  /** Removes what {@link #setUp} made (also when the case failed). */
  @Override
  void close();

  /**
   * A command and the environment to run it with.
   *
   * @param command the command line
   * @param env the environment to add locally
   */
  record Launch(List<String> command, Map<String, String> env) {}

  /** The wrapped command: {@code sh -c WRAPPER sh args...}. */
  static List<String> wrapped(List<String> args) {
    List<String> cmd = new ArrayList<>(List.of("sh", "-c", WRAPPER, "sh"));
    cmd.addAll(args);
    return cmd;
  }

  /** The launcher named {@code name} for {@code profile}. */
  static Launcher named(String name, Profile profile) {
    return switch (name) {
      case "local" -> new LocalLauncher();
      case "netns" -> new NetnsLauncher();
      case "ssh" -> new SshLauncher(profile);
      default ->
          throw new ProfileException("--launcher: '" + name + "' is not one of local, netns, ssh");
    };
  }

  /** Processes on this host, on loopback. */
  final class LocalLauncher implements Launcher {
    @Override
    public String name() {
      return "local";
    }

    @Override
    public void setUp(Profile.Case c) {}

    @Override
    public String address(String host) {
      return "127.0.0.1";
    }

    @Override
    public Launch command(String host, Map<String, String> env, List<String> args) {
      return new Launch(wrapped(args), env);
    }

    @Override
    public List<String> peerCommand(String host, List<String> args) {
      return io.orbite.qualification.harness.EngineProcess.javaCommand(
          io.orbite.qualification.harness.EngineProcess.classPath(),
          QualifyPeer.class.getName(),
          args);
    }

    @Override
    public void close() {}
  }
}
