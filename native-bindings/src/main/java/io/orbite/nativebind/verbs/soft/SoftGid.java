package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Verbs;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.Optional;

/**
 * A soft device's GID says where its responder listens: bytes 0..1 are the responder's TCP port
 * (big-endian), bytes 2..3 an alias (big-endian; 0 for the device's first entry), bytes 4..9 are
 * zero, bytes 10..11 are {@code ff ff} and bytes 12..15 the IPv4 address, so the low half is an
 * IPv4-mapped address as on RoCEv2. The alias lets a device list several distinct valid GIDs that
 * all lead to its one responder (as a RoCE port lists one address per IP it carries); decoding
 * ignores it.
 */
public final class SoftGid {
  private SoftGid() {}

  /**
   * The GID of a responder.
   *
   * @param address the IPv4 address it listens on
   * @param port the TCP port it listens on
   * @return its GID
   */
  public static Verbs.Gid encode(Inet4Address address, int port) {
    return encode(address, port, 0);
  }

  /**
   * The GID of a responder under an alias.
   *
   * @param address the IPv4 address it listens on
   * @param port the TCP port it listens on
   * @param alias 0..65535: distinct aliases give distinct GIDs for the same responder
   * @return its GID
   */
  public static Verbs.Gid encode(Inet4Address address, int port, int alias) {
    if (port < 0 || port > 0xffff) {
      throw new IllegalArgumentException("TCP port out of range: " + port);
    }
    if (alias < 0 || alias > 0xffff) {
      throw new IllegalArgumentException("GID alias out of range (0..65535): " + alias);
    }
    byte[] raw = new byte[16];
    raw[0] = (byte) (port >>> 8);
    raw[1] = (byte) port;
    raw[2] = (byte) (alias >>> 8);
    raw[3] = (byte) alias;
    raw[10] = (byte) 0xff;
    raw[11] = (byte) 0xff;
    System.arraycopy(address.getAddress(), 0, raw, 12, 4);
    return Verbs.Gid.of(raw);
  }

  /**
   * Where a responder listens.
   *
   * @param gid a GID (may be null)
   * @return the address it names; empty when it is not a soft GID (or names port 0)
   */
  public static Optional<InetSocketAddress> decode(Verbs.Gid gid) {
    if (gid == null) {
      return Optional.empty();
    }
    byte[] raw = gid.bytes();
    for (int i = 4; i < 10; i++) {
      if (raw[i] != 0) {
        return Optional.empty();
      }
    }
    if (raw[10] != (byte) 0xff || raw[11] != (byte) 0xff) {
      return Optional.empty();
    }
    int port = ((raw[0] & 0xff) << 8) | (raw[1] & 0xff);
    if (port == 0) {
      return Optional.empty();
    }
    byte[] ip = new byte[4];
    System.arraycopy(raw, 12, ip, 0, 4);
    try {
      return Optional.of(new InetSocketAddress(InetAddress.getByAddress(ip), port));
    } catch (UnknownHostException e) {
      return Optional.empty();
    }
  }
}
