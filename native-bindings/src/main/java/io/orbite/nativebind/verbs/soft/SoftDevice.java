package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.io.IOException;
import java.net.Inet4Address;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One soft device (rail) of a provider: its ports and their states, its attribute table, its MRs
 * and MWs ({@link SoftMemory}), its QPs by number, its open contexts, and its responder.
 *
 * <p>The responder binds when the device is first opened and closes (with every connection it
 * serves) when its last context is closed, so with an ephemeral port a device opened again may
 * listen elsewhere: every valid entry of its GID tables ({@link SoftGid}) always names where it
 * listens now. Each port has a table of {@link #GID_TABLE_LENGTH} entries; entry 0 is valid (alias
 * 0) and the others invalid (all zero) until a test's {@link SoftFaults#setGid} or {@link
 * SoftFaults#invalidateGid} changes them. Guarded by the provider's lock; the GID tables are also
 * read, lock-free, by requester threads.
 */
final class SoftDevice {
  final SoftFabric.DeviceSpec spec;
  final Verbs.Device record;
  final SoftMemory memory = new SoftMemory();
  final Map<Integer, SoftQp> qps = new HashMap<>();
  final List<SoftContext> contexts = new ArrayList<>();

  /**
   * RDMA READ and WRITE payload bytes this device's requesters moved (a READ's bytes scattered
   * here, a WRITE's bytes the target acknowledged): the provider's own count, as a port counter.
   */
  final java.util.concurrent.atomic.LongAdder payloadBytes =
      new java.util.concurrent.atomic.LongAdder();

  /** Entries in each port's GID table. */
  static final int GID_TABLE_LENGTH = 4;

  private final int[] portStates;

  /** Per port: its {@code active_width} and {@code active_speed} now (set by the fault table). */
  private final java.util.concurrent.atomic.AtomicIntegerArray portWidths;

  private final java.util.concurrent.atomic.AtomicIntegerArray portSpeeds;

  /** Per port, per GID index: the entry's alias, or -1 where the entry is invalid (all zero). */
  private final java.util.concurrent.atomic.AtomicIntegerArray[] gidAliases;

  private final ReentrantLock lock;
  private SoftResponder responder;
  private volatile int listenerPort;

  SoftDevice(long handle, SoftFabric.DeviceSpec spec, ReentrantLock lock) {
    this.spec = spec;
    this.lock = lock;
    this.record = new Verbs.Device(handle, spec.name(), spec.nodeGuid());
    this.portStates = new int[spec.ports().size()];
    for (int i = 0; i < portStates.length; i++) {
      portStates[i] = spec.ports().get(i).state();
    }
    this.portWidths = new java.util.concurrent.atomic.AtomicIntegerArray(portStates.length);
    this.portSpeeds = new java.util.concurrent.atomic.AtomicIntegerArray(portStates.length);
    for (int i = 0; i < portStates.length; i++) {
      portWidths.set(i, spec.ports().get(i).activeWidth());
      portSpeeds.set(i, spec.ports().get(i).activeSpeed());
    }
    this.gidAliases = new java.util.concurrent.atomic.AtomicIntegerArray[portStates.length];
    for (int i = 0; i < portStates.length; i++) {
      gidAliases[i] = new java.util.concurrent.atomic.AtomicIntegerArray(GID_TABLE_LENGTH);
      for (int g = 1; g < GID_TABLE_LENGTH; g++) {
        gidAliases[i].set(g, -1);
      }
    }
  }

  String name() {
    return spec.name();
  }

  Inet4Address address() {
    return spec.bindAddress();
  }

  int portCount() {
    return portStates.length;
  }

  /** The state of port {@code port} (from 1); DOWN for a port the device does not have. */
  int portState(int port) {
    return port >= 1 && port <= portStates.length ? portStates[port - 1] : Ibv.PORT_DOWN;
  }

  void setPortState(int port, int state) {
    portStates[port - 1] = state;
  }

  void setPortRate(int port, int activeWidth, int activeSpeed) {
    portWidths.set(port - 1, activeWidth);
    portSpeeds.set(port - 1, activeSpeed);
  }

  /** Entry 0 of port 1's table: where the responder listens now (zero while it is stopped). */
  Verbs.Gid gid() {
    return gid(1, 0);
  }

  /**
   * Entry {@code index} of port {@code port}'s GID table: all zero when the entry is invalid, the
   * port or index does not exist, or the responder is stopped.
   */
  Verbs.Gid gid(int port, int index) {
    if (port < 1 || port > portStates.length || index < 0 || index >= GID_TABLE_LENGTH) {
      return Verbs.Gid.ZERO;
    }
    int alias = gidAliases[port - 1].get(index);
    int at = listenerPort;
    return alias < 0 || at == 0 ? Verbs.Gid.ZERO : SoftGid.encode(spec.bindAddress(), at, alias);
  }

  /** Sets entry {@code index} of {@code port}'s table to alias {@code alias}, or -1: invalid. */
  void setGidAlias(int port, int index, int alias) {
    gidAliases[port - 1].set(index, alias);
  }

  Verbs.PortAttr portAttr(int port) {
    SoftFabric.PortSpec p = spec.ports().get(port - 1);
    return new Verbs.PortAttr(
        portState(port),
        Ibv.MTU_4096,
        p.activeMtu(),
        GID_TABLE_LENGTH,
        0,
        portWidths.get(port - 1),
        portSpeeds.get(port - 1),
        Ibv.LINK_LAYER_ETHERNET);
  }

  /** Adds an open context; the first one starts the responder. */
  void open(SoftContext context) throws IOException {
    if (contexts.isEmpty()) {
      SoftResponder r = new SoftResponder(this, lock);
      int port = r.start(spec.responderPort());
      responder = r;
      listenerPort = port;
    }
    contexts.add(context);
  }

  /** Removes a context; with the last one the responder stops: the threads to wait for. */
  List<Thread> close(SoftContext context) {
    contexts.remove(context);
    if (!contexts.isEmpty() || responder == null) {
      return List.of();
    }
    List<Thread> threads = responder.stop();
    responder = null;
    listenerPort = 0;
    return threads;
  }
}
