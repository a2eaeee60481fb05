package io.orbite.engine.wire;

import io.orbite.engine.Access;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.wire.FrameRejectedException.Reason;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Payload of a DESCRIBE_RESPONSE, big-endian: host (u16 length + UTF-8), port (u32), epoch (u64),
 * region count (u32), then per region id (u64), length (u64), access (u8).
 */
public final class DescribeCodec {
  /** Bytes per encoded region. */
  public static final int REGION_BYTES = 17;
  /** The largest host name accepted (DNS limit). */
  public static final int MAX_HOST_BYTES = 253;

  private DescribeCodec() {}

  public static ByteBuffer encode(Description d) {
    byte[] host = d.host().getBytes(StandardCharsets.UTF_8);
    if (host.length > MAX_HOST_BYTES) {
      throw new IllegalArgumentException("host name longer than " + MAX_HOST_BYTES + " bytes");
    }
    ByteBuffer buf = ByteBuffer.allocate(2 + host.length + 4 + 8 + 4 + d.regions().size() * REGION_BYTES);
    buf.putShort((short) host.length).put(host).putInt(d.port()).putLong(d.epoch()).putInt(d.regions().size());
    for (RemoteRegion r : d.regions()) {
      buf.putLong(r.regionId()).putLong(r.lengthBytes()).put((byte) r.access().code());
    }
    return buf.flip();
  }

  /** Decodes a payload, refusing anything malformed or with bytes left over. */
  public static Description decode(ByteBuffer buf) throws FrameRejectedException {
    try {
      int hostLength = buf.getShort() & 0xffff;
      if (hostLength == 0 || hostLength > MAX_HOST_BYTES) {
        throw new FrameRejectedException(Reason.INCONSISTENT_LENGTH, "describe: host length " + hostLength);
      }
      byte[] host = new byte[hostLength];
      buf.get(host);
      int port = buf.getInt();
      long epoch = buf.getLong();
      int count = buf.getInt();
      if (count < 0 || (long) count * REGION_BYTES != buf.remaining()) {
        throw new FrameRejectedException(
            Reason.INCONSISTENT_LENGTH, "describe: " + count + " regions but " + buf.remaining() + " bytes left");
      }
      List<RemoteRegion> regions = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        long id = buf.getLong();
        long length = buf.getLong();
        int access = buf.get();
        if (length <= 0 || access < 1 || access > 3) {
          throw new FrameRejectedException(
              Reason.INCONSISTENT_LENGTH, "describe: region " + id + " has length " + length + ", access " + access);
        }
        regions.add(new RemoteRegion(id, length, Access.fromCode(access)));
      }
      if (port < 1 || port > 65535) {
        throw new FrameRejectedException(Reason.INCONSISTENT_LENGTH, "describe: port " + port);
      }
      return new Description(new String(host, StandardCharsets.UTF_8), port, epoch, regions);
    } catch (BufferUnderflowException e) {
      throw new FrameRejectedException(Reason.INCONSISTENT_LENGTH, "describe: payload ends early");
    }
  }
}
