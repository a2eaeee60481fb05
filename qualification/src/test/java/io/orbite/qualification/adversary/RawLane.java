package io.orbite.qualification.adversary;

import io.orbite.qualification.harness.EngineProcess;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The frames a raw client sends an engine process by hand, from the documented layout ({@link
 * Wire}): its connection, a TCP lane's HELLO with the requester identity, a READ_REQUEST.
 */
final class RawLane {
  private RawLane() {}

  /** A connection to the engine process's listener, reads bounded at 10 s. */
  /** The source's engine counter {@code key}, from its COUNTERS line. */
  static long counter(EngineProcess source, String key) throws java.io.IOException {
    for (String kv : source.call("COUNTERS").split(" ")) {
      if (kv.startsWith(key + "=")) {
        return Long.parseLong(kv.substring(key.length() + 1));
      }
    }
    throw new AssertionError("no counter " + key);
  }

  static Socket connect(EngineProcess source) throws IOException {
    String[] hp = source.endpoint().split(":");
    Socket s = new Socket();
    s.connect(new InetSocketAddress(hp[0], Integer.parseInt(hp[1])), 5_000);
    s.setSoTimeout(10_000);
    return s;
  }

  /** A requester identity as a HELLO carries it: name, host and port, each as documented. */
  static byte[] identity(String name) {
    byte[] n = name.getBytes(StandardCharsets.UTF_8);
    byte[] h = "127.0.0.1".getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(2 + n.length + 2 + h.length + 2)
        .putShort((short) n.length)
        .put(n)
        .putShort((short) h.length)
        .put(h)
        .putShort((short) 9)
        .array();
  }

  /** A TCP lane's HELLO naming {@code name} at {@code epoch}, for the source's {@code target}. */
  static byte[] hello(String name, long epoch, long target) {
    byte[] id = identity(name);
    return Wire.concat(
        new Wire.Header(Wire.Type.HELLO, 0, id.length, 1, target, epoch, 0, Wire.TRANSPORT_TCP)
            .encode(),
        id);
  }

  /** A READ_REQUEST of {@code count} bytes of {@code region} at {@code offset}. */
  static byte[] readRequest(long target, long region, long offset, long count) {
    return new Wire.Header(Wire.Type.READ_REQUEST, 0, 0, 2, target, region, offset, count).encode();
  }
}
