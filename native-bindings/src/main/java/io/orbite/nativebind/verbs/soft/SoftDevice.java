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
 * listen elsewhere: its GID (index 0 on every port, {@link SoftGid}) always names where it listens
 * now. Guarded by the provider's lock.
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

  private final int[] portStates;
  private final ReentrantLock lock;
  private SoftResponder responder;
  private Verbs.Gid gid = Verbs.Gid.ZERO;

  SoftDevice(long handle, SoftFabric.DeviceSpec spec, ReentrantLock lock) {
    this.spec = spec;
    this.lock = lock;
    this.record = new Verbs.Device(handle, spec.name(), spec.nodeGuid());
    this.portStates = new int[spec.ports().size()];
    for (int i = 0; i < portStates.length; i++) {
      portStates[i] = spec.ports().get(i).state();
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

  Verbs.Gid gid() {
    return gid;
  }

  Verbs.PortAttr portAttr(int port) {
    SoftFabric.PortSpec p = spec.ports().get(port - 1);
    return new Verbs.PortAttr(
        portState(port),
        Ibv.MTU_4096,
        p.activeMtu(),
        1,
        0,
        p.activeWidth(),
        p.activeSpeed(),
        Ibv.LINK_LAYER_ETHERNET);
  }

  /** Adds an open context; the first one starts the responder. */
  void open(SoftContext context) throws IOException {
    if (contexts.isEmpty()) {
      SoftResponder r = new SoftResponder(this, lock);
      int port = r.start(spec.responderPort());
      responder = r;
      gid = SoftGid.encode(spec.bindAddress(), port);
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
    gid = Verbs.Gid.ZERO;
    return threads;
  }
}
