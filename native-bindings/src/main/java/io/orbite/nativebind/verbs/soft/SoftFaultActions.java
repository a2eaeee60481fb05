package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Ibv;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What the fault table asks of the {@link SoftVerbs} it serves: port states and rates, GID entries,
 * a fatal device, a dropped or released wire, and the provider's own counts. Each change is made
 * under the provider's lock.
 */
final class SoftFaultActions implements SoftFaults.Actions {
  private final ReentrantLock lock;
  private final List<SoftDevice> devices;

  SoftFaultActions(SoftTable table) {
    this.lock = table.lock;
    this.devices = table.devices;
  }

  @Override
  public void setPortRate(String device, int port, int activeWidth, int activeSpeed) {
    if (!Set.of(0, 1, 2, 4, 8, 16).contains(activeWidth)) {
      throw new IllegalArgumentException(
          "active_width " + activeWidth + " is not an encoding (0, 1, 2, 4, 8 or 16)");
    }
    if (!Set.of(0, 1, 2, 4, 8, 16, 32, 64, 128).contains(activeSpeed)) {
      throw new IllegalArgumentException(
          "active_speed " + activeSpeed + " is not an encoding (0, 1, 2, 4, 8, 16, 32, 64, 128)");
    }
    lock.lock();
    try {
      SoftDevice d = named(device);
      if (d == null || port < 1 || port > d.portCount()) {
        throw new IllegalArgumentException("no port " + port + " on " + device);
      }
      d.setPortRate(port, activeWidth, activeSpeed);
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void setPortState(String device, int port, int state) {
    if (state != Ibv.PORT_ACTIVE && state != Ibv.PORT_DOWN) {
      throw new IllegalArgumentException("ACTIVE or DOWN, not " + state);
    }
    lock.lock();
    try {
      SoftDevice d = named(device);
      if (d == null || port < 1 || port > d.portCount()) {
        throw new IllegalArgumentException("no port " + port + " on " + device);
      }
      d.setPortState(port, state);
      int type = state == Ibv.PORT_ACTIVE ? Ibv.EVENT_PORT_ACTIVE : Ibv.EVENT_PORT_ERR;
      for (SoftContext c : d.contexts) {
        c.event(type, port);
      }
      for (SoftQp q : d.qps.values()) {
        q.changed.signalAll();
      }
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void setGidAlias(String device, int port, int index, int alias) {
    lock.lock();
    try {
      SoftDevice d = named(device);
      if (d == null || port < 1 || port > d.portCount()) {
        throw new IllegalArgumentException("no port " + port + " on " + device);
      }
      if (index < 0 || index >= SoftDevice.GID_TABLE_LENGTH) {
        throw new IllegalArgumentException(
            "GID index "
                + index
                + " of "
                + device
                + " port "
                + port
                + " is outside its table (0.."
                + (SoftDevice.GID_TABLE_LENGTH - 1)
                + ")");
      }
      d.setGidAlias(port, index, alias);
      for (SoftContext c : d.contexts) {
        c.event(Ibv.EVENT_GID_CHANGE, port);
      }
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void deviceFatal(String device) {
    lock.lock();
    try {
      SoftDevice d = named(device);
      if (d == null) {
        throw new IllegalArgumentException("no device " + device);
      }
      for (SoftContext c : d.contexts) {
        c.event(Ibv.EVENT_DEVICE_FATAL, 0);
      }
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void dropWire(int qpNum) {
    lock.lock();
    try {
      for (SoftDevice d : devices) {
        SoftQp q = d.qps.get(qpNum);
        if (q != null) {
          q.requester.drop();
          return;
        }
      }
      throw new IllegalArgumentException("no QP " + qpNum);
    } finally {
      lock.unlock();
    }
  }

  @Override
  public long payloadBytes(String device) {
    return devices.stream()
        .filter(x -> x.name().equals(device))
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no device " + device))
        .payloadBytes
        .sum();
  }

  @Override
  public long sendCqOf(int qpNum) {
    lock.lock();
    try {
      for (SoftDevice d : devices) {
        SoftQp q = d.qps.get(qpNum);
        if (q != null) {
          return q.sendCq.handle;
        }
      }
      throw new IllegalArgumentException("no QP " + qpNum);
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void wireReleased() {
    lock.lock();
    try {
      for (SoftDevice d : devices) {
        for (SoftQp q : d.qps.values()) {
          q.changed.signalAll();
        }
      }
    } finally {
      lock.unlock();
    }
  }

  /** The device of that name, or null. */
  private SoftDevice named(String device) {
    return devices.stream().filter(x -> x.name().equals(device)).findFirst().orElse(null);
  }
}
