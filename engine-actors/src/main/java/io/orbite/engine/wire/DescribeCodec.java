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
 * largest merged transfer (u64)). Tag {@value #ENGINE_NAME_TAG} is the engine's name (its {@code
 * EngineConfig.name}, the body's UTF-8 bytes, 1..{@value #MAX_ENGINE_NAME_BYTES}). Tag {@value
 * #REGION_NAMES_TAG} names published regions: entries to the body's end, each a region id (u64), a
 * name length (u8) and the name ({@link RegionNames}); it may come several times (a body holds at
 * most 65535 bytes), and every entry names a region the answer publishes, none named twice, no name
 * given twice. Tag {@value #NOT_READY_TAG}, with an empty body, says the engine's application has
 * not marked it ready ({@link Description#ready()} false): the requester asks again instead of
 * opening it.
 *
 * <p>An answer that ends after the SHM part is an older engine's, which advertised no limits
 * ({@link Description#limits()} null), no names and no readiness (ready). A part whose tag this
 * engine does not know is skipped, so a newer engine may add parts without making its answers
 * unreadable here; a known tag other than the region names must come once, with its body's exact
 * length. (An engine from before the tagged parts refuses an answer that carries any: the answer
 * has no version to tell it to skip them.)
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

  /** Tag of the engine name part. */
  public static final int ENGINE_NAME_TAG = 2;

  /** Tag of a region names part. */
  public static final int REGION_NAMES_TAG = 3;

  /** Tag of the not-ready part (empty body). */
  public static final int NOT_READY_TAG = 4;

  /** The longest engine name accepted, in UTF-8 bytes. */
  public static final int MAX_ENGINE_NAME_BYTES = 255;

  /** The largest body of a tagged part (its length is a u16). */
  public static final int MAX_PART_BYTES = 0xffff;

  /** Bytes of a tagged part's tag and body length. */
  private static final int PART_HEADER_BYTES = 1 + 2;

  private DescribeCodec() {}

  /**
   * Encodes a description as a DESCRIBE_RESPONSE payload.
   *
   * @param d what the source says about itself
   * @return the payload, flipped for reading
   * @throws IllegalArgumentException for a host, SHM identity or engine name over its bound, or a
   *     region name that breaks {@link RegionNames}' rule
   */
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
    byte[] engineName = d.engineName().getBytes(StandardCharsets.UTF_8);
    if (engineName.length > MAX_ENGINE_NAME_BYTES) {
      throw new IllegalArgumentException(
          "engine name longer than " + MAX_ENGINE_NAME_BYTES + " bytes");
    }
    List<byte[]> nameParts = nameParts(d.regions());
    int partsBytes =
        limitsBytes
            + (engineName.length == 0 ? 0 : PART_HEADER_BYTES + engineName.length)
            + (d.ready() ? 0 : PART_HEADER_BYTES);
    for (byte[] part : nameParts) {
      partsBytes += PART_HEADER_BYTES + part.length;
    }
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
                + partsBytes);
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
    if (engineName.length > 0) {
      buf.put((byte) ENGINE_NAME_TAG).putShort((short) engineName.length).put(engineName);
    }
    for (byte[] part : nameParts) {
      buf.put((byte) REGION_NAMES_TAG).putShort((short) part.length).put(part);
    }
    if (!d.ready()) {
      buf.put((byte) NOT_READY_TAG).putShort((short) 0);
    }
    return buf.flip();
  }

  /** The bodies of the region names parts: the named regions' entries, each body within a u16. */
  private static List<byte[]> nameParts(List<RemoteRegion> regions) {
    List<byte[]> parts = new ArrayList<>();
    ByteBuffer body = ByteBuffer.allocate(MAX_PART_BYTES);
    for (RemoteRegion r : regions) {
      if (r.name() == null) {
        continue;
      }
      String invalid = RegionNames.invalidBecause(r.name());
      if (invalid != null) {
        throw new IllegalArgumentException("region " + r.regionId() + ": " + invalid);
      }
      byte[] name = r.name().getBytes(StandardCharsets.US_ASCII);
      if (body.remaining() < 8 + 1 + name.length) {
        parts.add(java.util.Arrays.copyOf(body.array(), body.position()));
        body.clear();
      }
      body.putLong(r.regionId()).put((byte) name.length).put(name);
    }
    if (body.position() > 0) {
      parts.add(java.util.Arrays.copyOf(body.array(), body.position()));
    }
    return parts;
  }

  /**
   * Decodes a payload, refusing anything malformed or with bytes left over.
   *
   * @param buf the payload, from its position to its limit
   * @return the description, its regions carrying the names the answer gave them
   * @throws FrameRejectedException naming the first inconsistency
   */
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
      Parts parts = decodeParts(buf, regions);
      return new Description(
          new String(host, StandardCharsets.UTF_8),
          port,
          epoch,
          parts.named(regions),
          shared,
          parts.limits,
          parts.engineName,
          parts.ready);
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

  /** What the tagged parts said; the defaults are an older engine's (no part at all). */
  private static final class Parts {
    TransferLimits limits;
    String engineName = "";
    boolean ready = true;
    final Map<Long, String> names = new HashMap<>();

    /** The regions with the names the parts gave them. */
    List<RemoteRegion> named(List<RemoteRegion> regions) {
      if (names.isEmpty()) {
        return regions;
      }
      List<RemoteRegion> out = new ArrayList<>(regions.size());
      for (RemoteRegion r : regions) {
        out.add(
            new RemoteRegion(r.regionId(), r.lengthBytes(), r.access(), names.get(r.regionId())));
      }
      return out;
    }
  }

  /**
   * Reads the tagged parts after the SHM part, to the end of the payload: the limits, the engine
   * name, the region names (each naming a region of {@code regions}) and the not-ready flag.
   */
  private static Parts decodeParts(ByteBuffer buf, List<RemoteRegion> regions)
      throws FrameRejectedException {
    Parts parts = new Parts();
    Set<Integer> seen = new HashSet<>();
    Set<Long> published = null;
    Set<String> namesGiven = new HashSet<>();
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
      if (tag != LIMITS_TAG
          && tag != ENGINE_NAME_TAG
          && tag != REGION_NAMES_TAG
          && tag != NOT_READY_TAG) {
        // A newer engine's part: skipped, so its answers stay readable here.
        buf.position(buf.position() + length);
        continue;
      }
      if (tag != REGION_NAMES_TAG && !seen.add(tag)) {
        throw rejected("describe: part " + tag + " given twice");
      }
      switch (tag) {
        case LIMITS_TAG -> parts.limits = decodeLimits(buf, length);
        case ENGINE_NAME_TAG -> {
          if (length == 0 || length > MAX_ENGINE_NAME_BYTES) {
            throw rejected("describe: engine name of " + length + " B");
          }
          parts.engineName = utf8(buf, length, "engine name");
        }
        case NOT_READY_TAG -> {
          if (length != 0) {
            throw rejected("describe: not-ready part of " + length + " B, not 0");
          }
          parts.ready = false;
        }
        default -> {
          if (published == null) {
            published = new HashSet<>();
            for (RemoteRegion r : regions) {
              published.add(r.regionId());
            }
          }
          decodeNames(buf, length, published, namesGiven, parts.names);
        }
      }
    }
    return parts;
  }

  private static TransferLimits decodeLimits(ByteBuffer buf, int length)
      throws FrameRejectedException {
    if (length != LIMITS_BYTES) {
      throw rejected("describe: limits part of " + length + " B, not " + LIMITS_BYTES);
    }
    int frame = buf.getInt();
    long transfer = buf.getLong();
    if (frame <= 0 || transfer <= 0) {
      throw rejected(
          "describe: limits of frame payload " + frame + " B and transfer " + transfer + " B");
    }
    return new TransferLimits(frame, transfer);
  }

  /** One region names part's entries, each naming a published region once with a valid name. */
  private static void decodeNames(
      ByteBuffer buf, int length, Set<Long> published, Set<String> given, Map<Long, String> names)
      throws FrameRejectedException {
    int end = buf.position() + length;
    while (buf.position() < end) {
      if (end - buf.position() < 8 + 1) {
        throw rejected("describe: region names part ends inside an entry");
      }
      long id = buf.getLong();
      int nameLength = buf.get() & 0xff;
      if (nameLength > end - buf.position()) {
        throw rejected("describe: name of region " + id + " runs past its part");
      }
      byte[] bytes = new byte[nameLength];
      buf.get(bytes);
      String name = new String(bytes, StandardCharsets.ISO_8859_1);
      String invalid = RegionNames.invalidBecause(name);
      if (invalid != null) {
        throw rejected("describe: region " + id + ": " + invalid);
      }
      if (!published.contains(id)) {
        throw rejected("describe: name '" + name + "' given to region " + id + ", not published");
      }
      if (names.containsKey(id) || !given.add(name)) {
        throw rejected(
            "describe: "
                + (names.containsKey(id)
                    ? "region " + id + " named twice"
                    : "name '" + name + "' given to two regions"));
      }
      names.put(id, name);
    }
  }

  private static String utf8(ByteBuffer buf, int length, String what)
      throws FrameRejectedException {
    byte[] bytes = new byte[length];
    buf.get(bytes);
    try {
      return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString();
    } catch (java.nio.charset.CharacterCodingException e) {
      throw rejected("describe: " + what + " is not valid UTF-8");
    }
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
