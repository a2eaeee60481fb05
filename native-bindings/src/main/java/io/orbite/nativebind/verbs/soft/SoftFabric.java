package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The configuration of the software provider: the devices (rails) a {@link SoftVerbs} lists.
 *
 * <p>Each device has a name ({@code soft0}, {@code soft1}...), the IPv4 address its responder binds
 * (127.0.0.1, or an address inside a network namespace), the TCP port it binds (0: an ephemeral
 * one, chosen when the device is first opened), a node GUID, its ports (numbered from 1, each
 * ACTIVE or DOWN, with the {@code ibv_port_attr} encodings of width and speed) and the attribute
 * table {@link Verbs#queryDevice} answers. Immutable.
 */
public final class SoftFabric {
  /** IBV_WIDTH_4X, the encoding of {@code active_width} for a 4x link. */
  public static final int WIDTH_4X = 2;

  /** IBV_SPEED_EDR (25 Gb/s per lane), the encoding of {@code active_speed}. */
  public static final int SPEED_EDR = 32;

  /**
   * One port, as it is when the device is created.
   *
   * @param state {@link Ibv#PORT_ACTIVE} or {@link Ibv#PORT_DOWN}
   * @param activeWidth the {@code active_width} encoding ({@link #WIDTH_4X}...)
   * @param activeSpeed the {@code active_speed} encoding ({@link #SPEED_EDR}...)
   * @param activeMtu the active MTU ({@link Ibv#MTU_4096}...)
   */
  public record PortSpec(int state, int activeWidth, int activeSpeed, int activeMtu) {
    /** Checks the state is ACTIVE or DOWN. */
    public PortSpec {
      if (state != Ibv.PORT_ACTIVE && state != Ibv.PORT_DOWN) {
        throw new IllegalArgumentException("a soft port is ACTIVE or DOWN, got " + state);
      }
    }

    /**
     * An ACTIVE 4x EDR port with a 4096-byte MTU.
     *
     * @return that port
     */
    public static PortSpec active() {
      return new PortSpec(Ibv.PORT_ACTIVE, WIDTH_4X, SPEED_EDR, Ibv.MTU_4096);
    }
  }

  /**
   * One device.
   *
   * @param name its name ({@code soft0}...), unique in the fabric
   * @param bindAddress the IPv4 address its responder binds and its QPs connect from
   * @param responderPort the TCP port its responder binds; 0 for an ephemeral one
   * @param nodeGuid its node GUID
   * @param ports its ports, numbered from 1, at least one
   * @param attr what {@code queryDevice} answers; {@code physPortCnt} must be {@code ports.size()}
   */
  public record DeviceSpec(
      String name,
      Inet4Address bindAddress,
      int responderPort,
      long nodeGuid,
      List<PortSpec> ports,
      Verbs.DeviceAttr attr) {
    /** Checks the fields and copies the port list. */
    public DeviceSpec {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(bindAddress, "bindAddress");
      Objects.requireNonNull(attr, "attr");
      ports = List.copyOf(ports);
      if (ports.isEmpty()) {
        throw new IllegalArgumentException("a device has at least one port");
      }
      if (attr.physPortCnt() != ports.size()) {
        throw new IllegalArgumentException(
            "physPortCnt " + attr.physPortCnt() + " but " + ports.size() + " ports");
      }
      if (responderPort < 0 || responderPort > 0xffff) {
        throw new IllegalArgumentException("responder port out of range: " + responderPort);
      }
    }

    /**
     * A device with one ACTIVE port, an ephemeral responder port and the default table.
     *
     * @param name its name
     * @param ipv4 its address, as a literal ({@code 127.0.0.1})
     * @param nodeGuid its node GUID
     * @return that device
     */
    public static DeviceSpec of(String name, String ipv4, long nodeGuid) {
      return of(name, ipv4, nodeGuid, List.of(PortSpec.active()));
    }

    /**
     * A device with {@code ports}, an ephemeral responder port and the default table.
     *
     * @param name its name
     * @param ipv4 its address, as a literal
     * @param nodeGuid its node GUID
     * @param ports its ports, numbered from 1
     * @return that device
     */
    public static DeviceSpec of(String name, String ipv4, long nodeGuid, List<PortSpec> ports) {
      return new DeviceSpec(
          name, ipv4(ipv4), 0, nodeGuid, ports, defaultAttr(nodeGuid, ports.size()));
    }
  }

  private final List<DeviceSpec> devices;

  private SoftFabric(List<DeviceSpec> devices) {
    this.devices = List.copyOf(devices);
    List<String> names = new ArrayList<>();
    for (DeviceSpec d : this.devices) {
      if (names.contains(d.name())) {
        throw new IllegalArgumentException("two devices named " + d.name());
      }
      names.add(d.name());
    }
  }

  /**
   * A fabric of exactly {@code devices}.
   *
   * @param devices the devices, in listing order, with distinct names
   * @return that fabric
   */
  public static SoftFabric of(List<DeviceSpec> devices) {
    return new SoftFabric(devices);
  }

  /**
   * Devices {@code soft0}... on one address, each with one ACTIVE port, an ephemeral responder port
   * and the default attribute table.
   *
   * @param ipv4 their address, as a literal
   * @param count how many
   * @return that fabric
   */
  public static SoftFabric onAddress(String ipv4, int count) {
    List<DeviceSpec> list = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      list.add(DeviceSpec.of("soft" + i, ipv4, 0x0200_5e00_0000_0000L | (i + 1)));
    }
    return new SoftFabric(list);
  }

  /**
   * The devices.
   *
   * @return the devices, in listing order
   */
  public List<DeviceSpec> devices() {
    return devices;
  }

  /**
   * The default attribute table: 256 QPs of 1024 WRs and 16 SGEs, 256 CQs of 65536 entries, 4096
   * MRs and MWs, 64 PDs, 1 TiB MRs.
   *
   * @param nodeGuid the device's node GUID
   * @param ports its number of ports
   * @return that table
   */
  public static Verbs.DeviceAttr defaultAttr(long nodeGuid, int ports) {
    return new Verbs.DeviceAttr(
        "soft-1.0", nodeGuid, 1L << 40, 0, 0, 256, 1024, 16, 256, 65536, 4096, 64, 4096, 16, ports);
  }

  private static Inet4Address ipv4(String text) {
    try {
      if (InetAddress.getByName(text) instanceof Inet4Address a) {
        return a;
      }
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("not an IPv4 address: " + text, e);
    }
    throw new IllegalArgumentException("not an IPv4 address: " + text);
  }
}
