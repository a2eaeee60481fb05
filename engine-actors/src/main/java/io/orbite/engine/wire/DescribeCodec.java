package io.orbite.engine.wire;

import io.orbite.engine.Access;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.wire.FrameRejectedException.Reason;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Payload of a DESCRIBE_RESPONSE, big-endian: host (u16 length + UTF-8), port (u32), epoch (u64),
 * region count (u32), then per region id (u64), length (u64), access (u8); then the SHM part: a
 * flag (u8: 0 none, 1 present) and, when present, hostname (u16 length + UTF-8), boot id (u16
 * length + UTF-8), pid (u32), token fd (u32), token inode (u64), export count (u32), then per
 * export region id (u64), fd (u32), inode (u64), offset (u64), length (u64), access (u8).
 *
 * <p>Then any number of tagged parts, each a tag (u8), a body length (u16) and the body: tag
 * {@value #LIMITS_TAG} is the limits part ({@link TransferLimits}: TCP frame payload limit (u32),
 * largest merged transfer (u64)). An answer that ends after the SHM part is an older engine's,
 * which advertised no limits ({@link Description#limits()} null). A part whose tag this engine does
 * not know is skipped, so a newer engine may add parts without making its answers unreadable here;
 * a known tag must come once, with its body's exact length. (An engine from before the tagged parts
 * refuses an answer that carries any: the answer has no version to tell it to skip them.)
 */
public final class DescribeCodec {
  /** Bytes per encoded region. */
  public static final int REGION_BYTES = 17;

  /** Bytes per encoded SHM export. */
  public static final int EXPORT_BYTES = 37;

  /** The largest host name accepted (DNS limit). */
  public static final int MAX_HOST_BYTES = 253;

  /** The largest boot id accepted (the kernel's is a 36-character UUID). */
  public static final int MAX_BOOT_ID_BYTES = 64;

  /** Tag of the limits part. */
  public static final int LIMITS_TAG = 1;

  /** Body bytes of the limits part. */
  public static final int LIMITS_BYTES = 4 + 8;

  /** Bytes of a tagged part's tag and body length. */
  private static final int PART_HEADER_BYTES = 1 + 2;

  private DescribeCodec() {}

  public static ByteBuffer encode(Description d) {
    byte[] host = d.host().getBytes(StandardCharsets.UTF_8);
    if (host.length > MAX_HOST_BYTES) {
      throw new IllegalArgumentException("host name longer than " + MAX_HOST_BYTES + " bytes");
    }
    SharedExports shared = d.shared();
    byte[] hostname =
        shared == null ? new byte[0] : shared.host().hostname().getBytes(StandardCharsets.UTF_8);
    byte[] bootId =
        shared == null ? new byte[0] : shared.host().bootId().getBytes(StandardCharsets.UTF_8);
    if (hostname.length > MAX_HOST_BYTES || bootId.length > MAX_BOOT_ID_BYTES) {
      throw new IllegalArgumentException("shared host name or boot id too long");
    }
    int sharedBytes =
        shared == null
            ? 0
            : 2
                + hostname.length
                + 2
                + bootId.length
                + 4
                + 4
                + 8
                + 4
                + shared.regions().size() * EXPORT_BYTES;
    TransferLimits limits = d.limits();
    int limitsBytes = limits == null ? 0 : PART_HEADER_BYTES + LIMITS_BYTES;
    ByteBuffer buf =
        ByteBuffer.allocate(
            2
                + host.length
                + 4
                + 8
                + 4
                + d.regions().size() * REGION_BYTES
                + 1
                + sharedBytes
                + limitsBytes);
    buf.putShort((short) host.length)
        .put(host)
        .putInt(d.port())
        .putLong(d.epoch())
        .putInt(d.regions().size());
    for (RemoteRegion r : d.regions()) {
      buf.putLong(r.regionId()).putLong(r.lengthBytes()).put((byte) r.access().code());
    }
    if (shared == null) {
      buf.put((byte) 0);
    } else {
      SharedHost h = shared.host();
      buf.put((byte) 1)
          .putShort((short) hostname.length)
          .put(hostname)
          .putShort((short) bootId.length)
          .put(bootId)
          .putInt(h.pid())
          .putInt(h.tokenFd())
          .putLong(h.tokenInode())
          .putInt(shared.regions().size());
      for (SharedRegion e : shared.regions()) {
        buf.putLong(e.regionId())
            .putInt(e.fd())
            .putLong(e.inode())
            .putLong(e.offset())
            .putLong(e.lengthBytes())
            .put((byte) e.access().code());
      }
    }
    if (limits != null) {
      buf.put((byte) LIMITS_TAG)
          .putShort((short) LIMITS_BYTES)
          .putInt(limits.tcpFramePayloadBytes())
          .putLong(limits.maxTransferBytes());
    }
    return buf.flip();
  }

  /** Decodes a payload, refusing anything malformed or with bytes left over. */
  public static Description decode(ByteBuffer buf) throws FrameRejectedException {
    try {
      int hostLength = buf.getShort() & 0xffff;
      if (hostLength == 0 || hostLength > MAX_HOST_BYTES) {
        throw rejected("describe: host length " + hostLength);
      }
      byte[] host = new byte[hostLength];
      buf.get(host);
      int port = buf.getInt();
      long epoch = buf.getLong();
      int count = buf.getInt();
      // The regions and at least the SHM flag byte must follow.
      if (count < 0 || (long) count * REGION_BYTES + 1 > buf.remaining()) {
        throw rejected("describe: " + count + " regions but " + buf.remaining() + " bytes left");
      }
      List<RemoteRegion> regions = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        long id = buf.getLong();
        long length = buf.getLong();
        int access = buf.get();
        if (length <= 0 || access < 1 || access > 3) {
          throw rejected("describe: region " + id + " has length " + length + ", access " + access);
        }
        regions.add(new RemoteRegion(id, length, Access.fromCode(access)));
      }
      if (port < 1 || port > 65535) {
        throw rejected("describe: port " + port);
      }
      SharedExports shared = decodeShared(buf, regions);
      TransferLimits limits = decodeParts(buf);
      return new Description(
          new String(host, StandardCharsets.UTF_8), port, epoch, regions, shared, limits);
    } catch (BufferUnderflowException e) {
      throw rejected("describe: payload ends early");
    }
  }

  private static SharedExports decodeShared(ByteBuffer buf, List<RemoteRegion> regions)
      throws FrameRejectedException {
    int flag = buf.get();
    if (flag == 0) {
      return null;
    }
    if (flag != 1) {
      throw rejected("describe: SHM flag " + flag);
    }
    String hostname = string(buf, MAX_HOST_BYTES, "SHM host name");
    String bootId = string(buf, MAX_BOOT_ID_BYTES, "SHM boot id");
    int pid = buf.getInt();
    int tokenFd = buf.getInt();
    long tokenInode = buf.getLong();
    int count = buf.getInt();
    if (pid <= 0 || tokenFd < 0) {
      throw rejected("describe: SHM pid " + pid + ", token fd " + tokenFd);
    }
    if (count < 0 || (long) count * EXPORT_BYTES > buf.remaining()) {
      throw rejected("describe: " + count + " SHM exports but " + buf.remaining() + " bytes left");
    }
    Map<Long, RemoteRegion> published = new HashMap<>();
    regions.forEach(r -> published.put(r.regionId(), r));
    Set<Long> seen = new HashSet<>();
    List<SharedRegion> exports = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      long id = buf.getLong();
      int fd = buf.getInt();
      long inode = buf.getLong();
      long offset = buf.getLong();
      long length = buf.getLong();
      int access = buf.get();
      RemoteRegion region = published.get(id);
      // An export must describe exactly a published region, once.
      if (region == null
          || !seen.add(id)
          || fd < 0
          || offset < 0
          || length != region.lengthBytes()
          || access != region.access().code()
          || offset > Long.MAX_VALUE - length) {
        throw rejected(
            "describe: SHM export of region "
                + id
                + " (fd "
                + fd
                + ", offset "
                + offset
                + ", length "
                + length
                + ", access "
                + access
                + ") does not match a published region");
      }
      exports.add(new SharedRegion(id, fd, inode, offset, length, region.access()));
    }
    return new SharedExports(new SharedHost(hostname, bootId, pid, tokenFd, tokenInode), exports);
  }

  /**
   * Reads the tagged parts after the SHM part, to the end of the payload: the limits part, or null
   * when there is none (an older engine's answer).
   */
  private static TransferLimits decodeParts(ByteBuffer buf) throws FrameRejectedException {
    TransferLimits limits = null;
    while (buf.hasRemaining()) {
      if (buf.remaining() < PART_HEADER_BYTES) {
        throw rejected("describe: " + buf.remaining() + " bytes after the SHM part");
      }
      int tag = buf.get() & 0xff;
      int length = buf.getShort() & 0xffff;
      if (length > buf.remaining()) {
        throw rejected(
            "describe: part " + tag + " of " + length + " B but " + buf.remaining() + " B left");
      }
      if (tag != LIMITS_TAG) {
        // A newer engine's part: skipped, so its answers stay readable here.
        buf.position(buf.position() + length);
        continue;
      }
      if (limits != null || length != LIMITS_BYTES) {
        throw rejected(
            "describe: limits part "
                + (limits != null ? "given twice" : "of " + length + " B, not " + LIMITS_BYTES));
      }
      int frame = buf.getInt();
      long transfer = buf.getLong();
      if (frame <= 0 || transfer <= 0) {
        throw rejected(
            "describe: limits of frame payload " + frame + " B and transfer " + transfer + " B");
      }
      limits = new TransferLimits(frame, transfer);
    }
    return limits;
  }

  private static String string(ByteBuffer buf, int max, String what) throws FrameRejectedException {
    int length = buf.getShort() & 0xffff;
    if (length == 0 || length > max) {
      throw rejected("describe: " + what + " length " + length);
    }
    byte[] bytes = new byte[length];
    buf.get(bytes);
    try {
      return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString();
    } catch (java.nio.charset.CharacterCodingException e) {
      // Compared byte for byte with this host's identity: a lossy decode could make two differ or
      // match.
      throw rejected("describe: " + what + " is not valid UTF-8");
    }
  }

  private static FrameRejectedException rejected(String detail) {
    return new FrameRejectedException(Reason.INCONSISTENT_LENGTH, detail);
  }
}
