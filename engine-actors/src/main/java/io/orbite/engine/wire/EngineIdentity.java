package io.orbite.engine.wire;

import io.orbite.config.EngineConfig;
import io.orbite.engine.wire.FrameRejectedException.Reason;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

/**
 * Who a requester is across its restarts: its engine name and the endpoint it listens at. A
 * requester restarted with the same name at the same endpoint is the same engine in a new
 * incarnation (a new epoch); two engines on one host differ by their endpoints. Carried as the
 * payload of every HELLO a requester sends, so that a source can fence the old incarnation's lanes
 * and sessions when the new one says HELLO.
 *
 * <p>Payload, big-endian: name (u16 length + UTF-8), host (u16 length + UTF-8), port (u16). A
 * decoded identity is checked as strictly as a configuration: the name as {@link
 * EngineConfig#NAME_REGEX}, the host 1..{@value DescribeCodec#MAX_HOST_BYTES} bytes of valid UTF-8
 * without whitespace or control characters, the port 1..65535, and no byte left over.
 *
 * @param name the engine's {@code name}
 * @param host the host peers reach it at (as its {@code SegmentDescriptor} says)
 * @param port the port it listens at
 */
public record EngineIdentity(String name, String host, int port) {
  /** The longest encoded identity: the most a HELLO's payload may hold. */
  public static final int MAX_BYTES =
      2 + EngineConfig.MAX_NAME_LENGTH + 2 + DescribeCodec.MAX_HOST_BYTES + 2;

  private static final Pattern NAME = Pattern.compile(EngineConfig.NAME_REGEX);

  /**
   * Checks the components as {@link #decode} does.
   *
   * @throws IllegalArgumentException naming the component that is not valid
   */
  public EngineIdentity {
    String why = invalid(name, host, port);
    if (why != null) {
      throw new IllegalArgumentException(why);
    }
  }

  /** What is wrong with the components, or null when they are valid. */
  private static String invalid(String name, String host, int port) {
    if (name == null || !NAME.matcher(name).matches()) {
      return "engine name " + quote(name) + " does not match " + EngineConfig.NAME_REGEX;
    }
    if (host == null
        || host.isEmpty()
        || host.getBytes(StandardCharsets.UTF_8).length > DescribeCodec.MAX_HOST_BYTES
        || host.codePoints()
            .anyMatch(c -> Character.isWhitespace(c) || Character.isISOControl(c))) {
      return "host "
          + quote(host)
          + " is not 1.."
          + DescribeCodec.MAX_HOST_BYTES
          + " bytes without whitespace";
    }
    if (port < 1 || port > 65535) {
      return "port " + port + " is outside 1..65535";
    }
    return null;
  }

  private static String quote(String s) {
    return s == null ? "null" : '"' + s.replace("\"", "\\\"") + '"';
  }

  /**
   * The payload a HELLO carries.
   *
   * @return a buffer of at most {@link #MAX_BYTES}, positioned at 0
   */
  public ByteBuffer encode() {
    byte[] n = name.getBytes(StandardCharsets.UTF_8);
    byte[] h = host.getBytes(StandardCharsets.UTF_8);
    ByteBuffer buf = ByteBuffer.allocate(2 + n.length + 2 + h.length + 2);
    buf.putShort((short) n.length).put(n).putShort((short) h.length).put(h).putShort((short) port);
    return buf.flip();
  }

  /**
   * Reads an identity from the whole of {@code payload} (from its position to its limit).
   *
   * @throws FrameRejectedException MALFORMED_PAYLOAD naming what is wrong: a field that ends early,
   *     bytes left over, text that is not valid UTF-8, or a component that is not valid
   */
  public static EngineIdentity decode(ByteBuffer payload) throws FrameRejectedException {
    ByteBuffer buf = payload.slice();
    try {
      String name = string(buf, "name", EngineConfig.MAX_NAME_LENGTH);
      String host = string(buf, "host", DescribeCodec.MAX_HOST_BYTES);
      int port = buf.getShort() & 0xffff;
      if (buf.hasRemaining()) {
        throw rejected(buf.remaining() + " bytes after the port");
      }
      String why = invalid(name, host, port);
      if (why != null) {
        throw rejected(why);
      }
      return new EngineIdentity(name, host, port);
    } catch (BufferUnderflowException e) {
      throw rejected("the payload of " + payload.remaining() + " bytes ends early");
    }
  }

  private static String string(ByteBuffer buf, String what, int max) throws FrameRejectedException {
    int length = buf.getShort() & 0xffff;
    if (length == 0 || length > max) {
      throw rejected(what + " length " + length + ", expected 1.." + max);
    }
    byte[] bytes = new byte[length];
    buf.get(bytes);
    try {
      // Compared as a key: a lossy decode could make two identities match.
      return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString();
    } catch (CharacterCodingException e) {
      throw rejected(what + " is not valid UTF-8");
    }
  }

  private static FrameRejectedException rejected(String detail) {
    return new FrameRejectedException(Reason.MALFORMED_PAYLOAD, "HELLO identity: " + detail);
  }

  /** {@code name@host:port}. */
  @Override
  public String toString() {
    return name + "@" + host + ":" + port;
  }
}
