package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.ActivePeer;
import io.orbite.nativebind.verbs.ConformancePeer;
import io.orbite.nativebind.verbs.Verbs;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A {@link ConformancePeer} in a child JVM of its own ({@link SoftPeerMain} on this test class
 * path), optionally started under a launcher such as {@code ip netns exec <ns>}: a real second
 * process, reached by the local end only over the soft wire, and driven here over its stdin and
 * stdout one line per call ({@code OK <result>} or {@code ERR <why>}).
 */
final class ProcessPeer implements ActivePeer {
  private static final HexFormat HEX = HexFormat.of();
  private static final long CALL_SECONDS = 20;

  private final Process process;
  private final BufferedReader out;
  private final Writer in;
  private final StringBuilder log = new StringBuilder();
  private final Verbs.Gid gid;
  private final int lid;
  private final int activeMtu;

  /**
   * Starts the peer with its soft device on {@code ipv4}, under {@code launcher} (may be empty).
   */
  ProcessPeer(List<String> launcher, String ipv4) {
    List<String> cmd = new ArrayList<>(launcher);
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("--enable-native-access=ALL-UNNAMED");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(SoftPeerMain.class.getName());
    cmd.add(ipv4);
    try {
      process = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + cmd, e);
    }
    out =
        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    String[] g = call("gid").split(" ");
    gid = new Verbs.Gid(Long.parseUnsignedLong(g[0], 16), Long.parseUnsignedLong(g[1], 16));
    String[] port = call("port").split(" ");
    lid = Integer.parseInt(port[0]);
    activeMtu = Integer.parseInt(port[1]);
  }

  /** The child's pid (for a kill). */
  long pid() {
    return process.pid();
  }

  /** Kills the child at once (SIGKILL): its sockets close as the kernel reaps it. */
  void kill() throws InterruptedException {
    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
  }

  private String call(String line) {
    if (!process.isAlive()) {
      throw new AssertionError("peer process has exited (" + process.exitValue() + "); " + log);
    }
    CompletableFuture<String> reply =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                in.write(line + "\n");
                in.flush();
                return out.readLine();
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            });
    String r;
    try {
      r = reply.get(CALL_SECONDS, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError("peer did not answer '" + line + "' within " + CALL_SECONDS + " s");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted waiting for the peer", e);
    } catch (ExecutionException e) {
      throw new AssertionError("peer call '" + line + "' failed", e.getCause());
    }
    log.append(line).append(" -> ").append(r).append('\n');
    if (r == null) {
      throw new AssertionError("peer closed its output after '" + line + "'");
    }
    if (r.startsWith("ERR ")) {
      throw new AssertionError("peer refused '" + line + "': " + r.substring(4));
    }
    return r.length() > 3 ? r.substring(3) : "";
  }

  private static String gid(Verbs.Gid g) {
    return Long.toHexString(g.hi()) + " " + Long.toHexString(g.lo());
  }

  @Override
  public Verbs.Gid gid() {
    return gid;
  }

  @Override
  public int lid() {
    return lid;
  }

  @Override
  public int activeMtu() {
    return activeMtu;
  }

  @Override
  public int createQp() {
    return Integer.parseInt(call("createQp"));
  }

  @Override
  public void connect(int qpn, Verbs.Gid remoteGid, int remoteLid, int remoteMtu, int remoteQpn) {
    call(
        "connect "
            + qpn
            + " "
            + gid(remoteGid)
            + " "
            + remoteLid
            + " "
            + remoteMtu
            + " "
            + remoteQpn);
  }

  @Override
  public Buffer register(int length, int access, byte fill) {
    String[] b = call("register " + length + " " + access + " " + fill).split(" ");
    return new Buffer(
        Integer.parseInt(b[0]),
        Long.parseLong(b[1]),
        Integer.parseInt(b[2]),
        Integer.parseInt(b[3]));
  }

  @Override
  public void write(Buffer buffer, int offset, byte[] bytes) {
    call("write " + buffer.id() + " " + offset + " " + HEX.formatHex(bytes));
  }

  @Override
  public byte[] read(Buffer buffer) {
    return HEX.parseHex(call("read " + buffer.id()));
  }

  @Override
  public void deregister(Buffer buffer) {
    call("deregister " + buffer.id());
  }

  @Override
  public void postRecv(int qpn, long wrId, Buffer buffer, int offset, int length) {
    call("postRecv " + qpn + " " + wrId + " " + buffer.id() + " " + offset + " " + length);
  }

  @Override
  public int bindMw(int qpn, Buffer buffer, int offset, int length, int access) {
    return Integer.parseInt(
        call("bindMw " + qpn + " " + buffer.id() + " " + offset + " " + length + " " + access));
  }

  @Override
  public int localInvalidate(int qpn, int rkey) {
    return Integer.parseInt(call("localInvalidate " + qpn + " " + rkey));
  }

  @Override
  public List<Verbs.Wc> recvCompletions(int qpn, int n) {
    return wcs(call("recvCompletions " + qpn + " " + n));
  }

  @Override
  public Verbs.Wc post(
      int qpn,
      int opcode,
      Buffer local,
      int offset,
      int length,
      long remoteAddr,
      int rkey,
      int imm) {
    return wcs(call(
            "post "
                + qpn
                + " "
                + opcode
                + " "
                + local.id()
                + " "
                + offset
                + " "
                + length
                + " "
                + remoteAddr
                + " "
                + rkey
                + " "
                + imm))
        .getFirst();
  }

  static String wcs(List<Verbs.Wc> wcs) {
    StringBuilder s = new StringBuilder();
    for (Verbs.Wc w : wcs) {
      if (!s.isEmpty()) {
        s.append(';');
      }
      s.append(w.wrId())
          .append(',')
          .append(w.status())
          .append(',')
          .append(w.opcode())
          .append(',')
          .append(w.vendorErr())
          .append(',')
          .append(w.byteLen())
          .append(',')
          .append(w.immOrInvalidated())
          .append(',')
          .append(w.qpNum())
          .append(',')
          .append(w.srcQp())
          .append(',')
          .append(w.wcFlags());
    }
    return s.toString();
  }

  static List<Verbs.Wc> wcs(String text) {
    List<Verbs.Wc> wcs = new ArrayList<>();
    if (text.isEmpty()) {
      return wcs;
    }
    for (String one : text.split(";")) {
      String[] f = one.split(",");
      wcs.add(
          new Verbs.Wc(
              Long.parseLong(f[0]),
              Integer.parseInt(f[1]),
              Integer.parseInt(f[2]),
              Integer.parseInt(f[3]),
              Integer.parseInt(f[4]),
              Integer.parseInt(f[5]),
              Integer.parseInt(f[6]),
              Integer.parseInt(f[7]),
              Integer.parseInt(f[8])));
    }
    return wcs;
  }

  @Override
  public int qpState(int qpn) {
    return Integer.parseInt(call("qpState " + qpn));
  }

  @Override
  public void destroyQp(int qpn) {
    call("destroyQp " + qpn);
  }

  @Override
  public void close() {
    try {
      if (process.isAlive()) {
        call("close");
      }
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new AssertionError("peer process did not exit after close");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
