package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.ConformancePeer;
import io.orbite.nativebind.verbs.InJvmPeer;
import io.orbite.nativebind.verbs.Verbs;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

/**
 * The child process of a {@link ProcessPeer}: an {@link InJvmPeer} (a {@link SoftVerbs} with one
 * device on the address given as the argument) driven by one command per line on stdin, answered
 * {@code OK <result>} or {@code ERR <why>} on stdout. Exits when stdin closes or on {@code close}.
 */
public final class SoftPeerMain {
  private SoftPeerMain() {}

  /** {@code SoftPeerMain <ipv4>}. */
  public static void main(String[] args) throws IOException {
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    System.setOut(System.err); // nothing but answers on the protocol stream
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    InJvmPeer peer = new InJvmPeer(args[0]);
    Map<Integer, ConformancePeer.Buffer> buffers = new HashMap<>();
    HexFormat hex = HexFormat.of();
    String line;
    while ((line = in.readLine()) != null) {
      String[] a = line.split(" ");
      try {
        String result =
            switch (a[0]) {
              case "gid" -> {
                Verbs.Gid g = peer.gid();
                yield Long.toHexString(g.hi()) + " " + Long.toHexString(g.lo());
              }
              case "port" -> peer.lid() + " " + peer.activeMtu();
              case "createQp" -> Integer.toString(peer.createQp());
              case "connect" -> {
                peer.connect(
                    Integer.parseInt(a[1]),
                    new Verbs.Gid(
                        Long.parseUnsignedLong(a[2], 16), Long.parseUnsignedLong(a[3], 16)),
                    Integer.parseInt(a[4]),
                    Integer.parseInt(a[5]),
                    Integer.parseInt(a[6]));
                yield "";
              }
              case "register" -> {
                ConformancePeer.Buffer b =
                    peer.register(
                        Integer.parseInt(a[1]), Integer.parseInt(a[2]), Byte.parseByte(a[3]));
                buffers.put(b.id(), b);
                yield b.id() + " " + b.addr() + " " + b.rkey() + " " + b.length();
              }
              case "write" -> {
                peer.write(
                    buffers.get(Integer.parseInt(a[1])),
                    Integer.parseInt(a[2]),
                    hex.parseHex(a[3]));
                yield "";
              }
              case "read" -> hex.formatHex(peer.read(buffers.get(Integer.parseInt(a[1]))));
              case "deregister" -> {
                peer.deregister(buffers.get(Integer.parseInt(a[1])));
                yield "";
              }
              case "postRecv" -> {
                peer.postRecv(
                    Integer.parseInt(a[1]),
                    Long.parseLong(a[2]),
                    buffers.get(Integer.parseInt(a[3])),
                    Integer.parseInt(a[4]),
                    Integer.parseInt(a[5]));
                yield "";
              }
              case "bindMw" ->
                  Integer.toString(
                      peer.bindMw(
                          Integer.parseInt(a[1]),
                          buffers.get(Integer.parseInt(a[2])),
                          Integer.parseInt(a[3]),
                          Integer.parseInt(a[4]),
                          Integer.parseInt(a[5])));
              case "localInvalidate" ->
                  Integer.toString(
                      peer.localInvalidate(Integer.parseInt(a[1]), Integer.parseInt(a[2])));
              case "recvCompletions" ->
                  ProcessPeer.wcs(
                      peer.recvCompletions(Integer.parseInt(a[1]), Integer.parseInt(a[2])));
              case "post" ->
                  ProcessPeer.wcs(
                      java.util.List.of(
                          peer.post(
                              Integer.parseInt(a[1]),
                              Integer.parseInt(a[2]),
                              buffers.get(Integer.parseInt(a[3])),
                              Integer.parseInt(a[4]),
                              Integer.parseInt(a[5]),
                              Long.parseLong(a[6]),
                              Integer.parseInt(a[7]),
                              Integer.parseInt(a[8]))));
              case "qpState" -> Integer.toString(peer.qpState(Integer.parseInt(a[1])));
              case "destroyQp" -> {
                peer.destroyQp(Integer.parseInt(a[1]));
                yield "";
              }
              case "close" -> {
                peer.close();
                out.println("OK");
                System.exit(0);
                yield "";
              }
              default -> throw new IllegalArgumentException("unknown command " + a[0]);
            };
        out.println(result.isEmpty() ? "OK" : "OK " + result);
      } catch (Throwable t) {
        out.println("ERR " + String.valueOf(t).replace('\n', ' '));
      }
    }
    peer.close();
  }
}
