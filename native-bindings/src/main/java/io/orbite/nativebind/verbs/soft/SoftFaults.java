package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Verbs;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The fault table of one {@link SoftVerbs}: a test hook, given only to {@link
 * SoftVerbs#create(SoftFabric, SoftFaults)} and never built from configuration. {@link #none()}
 * (for production) holds nothing and refuses every fault. A table serves one provider; its entries
 * take effect at once, from any thread.
 *
 * <ul>
 *   <li>{@link #withholdCqe}: the next successful completion of that QP with that WR id is never
 *       delivered (the operation itself happens; its send-queue slot is freed); later ones are.
 *   <li>{@link #failDestroy}/{@link #failNextDestroy}: a destroy of that object (or the next of
 *       that kind) answers the errno and leaves the object alive with all its resources; once only,
 *       or sticky (every later destroy of that object fails) until {@link #clearDestroyFaults}.
 *   <li>{@link #failPoll}: every {@code pollCq} of the send CQ of that QP answers {@code -errno}
 *       and takes nothing, until {@link #clearPollFaults}; the CQ keeps its entries, and WRs still
 *       run and complete into it.
 *   <li>{@link #destroyCalls}: how many destroys of a kind named a live object, failed or not: a
 *       count, not a fault, for tests to prove a destroy was never retried.
 *   <li>{@link #failPostSend}: the next {@code postSend} on that QP posts WRs {@code 0..k-1} and
 *       answers the errno with bad index {@code k}: nothing from {@code k} on is posted.
 *   <li>{@link #failPostSendOf}: the next {@code postSend} on that QP that holds a WR of that
 *       opcode posts the WRs before the first such WR and answers the errno with that WR's index;
 *       posts without one are left alone (a refused completion SEND, however the caller groups its
 *       WRs into posts).
 *   <li>{@link #interruptCopy}: the WRITE or READ of that WR id moves exactly its first {@code
 *       bytes} bytes (a WRITE into the target, a READ into the local SGEs), then the QP goes to ERR
 *       as a modify to ERR would: that WR and every later one complete {@code WC_WR_FLUSH_ERR}.
 *   <li>{@link #setPortState}: the port shows the state; every open context of the device gets
 *       {@code EVENT_PORT_ERR} or {@code EVENT_PORT_ACTIVE}. While a port is DOWN, each WR that a
 *       QP of that port starts completes {@code WC_RETRY_EXC_ERR} and the QP goes to ERR (rest
 *       flushed); its responder refuses connections and requests for such QPs.
 *   <li>{@link #setGid}/{@link #invalidateGid}: an entry of a port's GID table becomes a valid GID
 *       (one that still names the device's responder, under an alias, so the wire still leads
 *       there) or invalid (all zero); every open context of the device gets {@code
 *       EVENT_GID_CHANGE}. A QP's source GID is the entry at its address vector's {@code
 *       sgidIndex}, read as each connection to the peer is made: while it is invalid, each WR that
 *       QP starts completes {@code WC_RETRY_EXC_ERR} and the QP goes to ERR, and a move to RTR
 *       naming it is refused {@code EINVAL}.
 *   <li>{@link #dropWire}: the QP's connection is closed: the WR in flight (or the next one to be
 *       sent) completes {@code WC_RETRY_EXC_ERR}, the rest are flushed.
 *   <li>{@link #stallWire}: the QP's requests are held before they leave (no bytes move, no
 *       completion) until {@link #releaseWire}, then they proceed in order.
 *   <li>{@link #setNumaNode}: the NUMA node {@code numaNode} answers for a device (not a fault: a
 *       topology a test gives the provider's devices, which have none of their own).
 *   <li>{@link #nullWire}: while on, every RDMA READ and RDMA WRITE that a QP of this provider
 *       starts completes {@code WC_SUCCESS} at once without moving a byte or sending anything.
 * </ul>
 *
 * <p>Why this file is over 500 lines: it is the provider's whole fault table, one armed fault per
 * method with its Javadoc, and the counts tests read; split, a test would need several tables.
 */
public final class SoftFaults {
  /** The objects whose destroy can be failed. */
  public enum Kind {
    /** {@code destroyQp}. */
    QP,
    /** {@code destroyCq}. */
    CQ,
    /** {@code destroyCompChannel}. */
    COMP_CHANNEL,
    /** {@code deallocPd}. */
    PD,
    /** {@code deregMr}. */
    MR,
    /** {@code deallocMw}. */
    MW,
    /** {@code closeDevice} (the context). */
    CONTEXT
  }

  /** What the table asks of the provider it serves. */
  interface Actions {
    void setPortState(String device, int port, int state);

    void setPortRate(String device, int port, int activeWidth, int activeSpeed);

    void setGidAlias(String device, int port, int index, int alias);

    void deviceFatal(String device);

    void dropWire(int qpNum);

    void wireReleased();

    long payloadBytes(String device);

    /** The handle of QP {@code qpNum}'s send CQ; IllegalArgumentException if there is none. */
    long sendCqOf(int qpNum);
  }

  /** The empty table for production: it refuses every fault. */
  private static final SoftFaults NONE = new SoftFaults(false);

  /**
   * The table of a provider with no fault armed: it refuses every arming (a shared instance that
   * nobody can change).
   *
   * @return the empty table
   */
  public static SoftFaults none() {
    return NONE;
  }

  private record WrKey(int qpNum, long wrId) {}

  private final boolean mutable;
  private final Set<WrKey> withheld = new HashSet<>();
  private final SoftDestroyFaults destroys = new SoftDestroyFaults();
  private final Map<Integer, int[]> postSendFailures = new HashMap<>();
  private final Map<Integer, int[]> opcodeFailures = new HashMap<>();
  private final Map<WrKey, Integer> interrupts = new HashMap<>();
  private final Set<Integer> stalled = new HashSet<>();
  private final Map<Long, Integer> pollFailures = new HashMap<>();

  /** Whether {@link #pollFailures} holds any entry (written under this table's monitor). */
  private volatile boolean anyPollFailure;

  private boolean nullWire;
  private final Map<String, Integer> numaNodes = new HashMap<>();
  private Actions actions;

  private SoftFaults(boolean mutable) {
    this.mutable = mutable;
  }

  /**
   * An empty table to arm.
   *
   * @return the table, for one {@link SoftVerbs#create(SoftFabric, SoftFaults)}
   */
  public static SoftFaults create() {
    return new SoftFaults(true);
  }

  /**
   * Withholds the next successful completion of a WR (send or receive).
   *
   * @param qpNum the QP's number
   * @param wrId the WR's id
   */
  public synchronized void withholdCqe(int qpNum, long wrId) {
    checkMutable();
    withheld.add(new WrKey(qpNum, wrId));
  }

  /**
   * Fails the destroy of one object.
   *
   * @param kind its kind
   * @param handle its handle
   * @param errno what the destroy answers (EIO, EBUSY)
   * @param sticky every destroy of it fails, not only the next one
   */
  public synchronized void failDestroy(Kind kind, long handle, int errno, boolean sticky) {
    checkMutable();
    destroys.failDestroy(Objects.requireNonNull(kind), handle, errno, sticky);
  }

  /**
   * Fails the next destroy of any object of a kind.
   *
   * @param kind the kind
   * @param errno what the destroy answers (EIO, EBUSY)
   * @param sticky every later destroy of the object it hit fails too
   */
  public synchronized void failNextDestroy(Kind kind, int errno, boolean sticky) {
    failDestroy(kind, SoftDestroyFaults.ANY, errno, sticky);
  }

  /**
   * Fails the deregistration of every MR (of any device) whose range starts at {@code address}: the
   * way to hit the MR of one registration, whose handle only the transport knows.
   *
   * @param address the first byte of the registered range
   * @param errno what {@code deregMr} answers (EIO, EBUSY)
   * @param sticky every later deregistration of such an MR fails too, not only the next one
   */
  public synchronized void failDeregAt(long address, int errno, boolean sticky) {
    checkMutable();
    destroys.failDeregAt(address, errno, sticky);
  }

  /** Forgets every destroy fault, sticky ones included. */
  public synchronized void clearDestroyFaults() {
    destroys.clear();
  }

  /**
   * Fails every later {@code pollCq} of a QP's send CQ (the CQ a lane polls) with {@code -errno},
   * taking nothing from it, until {@link #clearPollFaults}: a CQ whose completions can no longer be
   * read. Its QPs keep running and completing into it.
   *
   * @param qpNum the number of a live QP of this table's provider
   * @param errno what the polls answer, negated (EIO, EFAULT); positive
   * @throws IllegalArgumentException if there is no such QP or {@code errno} is not positive
   */
  public void failPoll(int qpNum, int errno) {
    if (errno <= 0) {
      throw new IllegalArgumentException("errno " + errno + " for QP " + qpNum);
    }
    long cq = bound().sendCqOf(qpNum);
    synchronized (this) {
      pollFailures.put(cq, errno);
      anyPollFailure = true;
    }
  }

  /** Lets every CQ be polled again. */
  public synchronized void clearPollFaults() {
    pollFailures.clear();
    anyPollFailure = false;
  }

  /** Whether any CQ's polls are failed now (read without the table's lock). */
  boolean anyPollFailure() {
    return anyPollFailure;
  }

  /**
   * How many destroys of {@code kind} named a live object since the table was made, whether they
   * succeeded or failed (a refused handle is not counted). Not a fault; it changes nothing.
   *
   * @param kind the kind
   * @return the count so far (always 0 for {@link #none()})
   */
  public synchronized int destroyCalls(Kind kind) {
    return destroys.calls(Objects.requireNonNull(kind));
  }

  /**
   * Fails the next {@code postSend} on a QP part-way.
   *
   * @param qpNum the QP's number
   * @param index the bad index: WRs before it are posted, none from it on
   * @param errno what the post answers
   */
  public synchronized void failPostSend(int qpNum, int index, int errno) {
    checkMutable();
    if (index < 0 || errno <= 0) {
      throw new IllegalArgumentException("index " + index + ", errno " + errno);
    }
    postSendFailures.put(qpNum, new int[] {index, errno});
  }

  /**
   * Fails the next {@code postSend} on a QP that holds a WR of {@code opcode}, at that WR.
   *
   * @param qpNum the QP's number
   * @param opcode the WR opcode ({@code Ibv.WR_SEND}, {@code Ibv.WR_RDMA_READ}, ...)
   * @param errno what the post answers
   */
  public synchronized void failPostSendOf(int qpNum, int opcode, int errno) {
    checkMutable();
    if (errno <= 0) {
      throw new IllegalArgumentException("errno " + errno);
    }
    opcodeFailures.put(qpNum, new int[] {opcode, errno});
  }

  /**
   * Interrupts a WRITE's or READ's copy part-way; the QP then goes to ERR.
   *
   * @param qpNum the QP's number
   * @param wrId the WR's id
   * @param bytes how many bytes of the message land
   */
  public synchronized void interruptCopy(int qpNum, long wrId, int bytes) {
    checkMutable();
    if (bytes < 0) {
      throw new IllegalArgumentException("bytes " + bytes);
    }
    interrupts.put(new WrKey(qpNum, wrId), bytes);
  }

  /**
   * Sets the NUMA node the provider reports for a device ({@code Verbs.numaNode}); read by the RDMA
   * transport when it opens its rails, so set it before the engine starts.
   *
   * @param device the device's name
   * @param node its node, 0 or more, or -1 for unknown
   * @throws IllegalArgumentException if {@code node} is below -1
   * @throws UnsupportedOperationException on {@link #none()}
   */
  public synchronized void setNumaNode(String device, int node) {
    checkMutable();
    Objects.requireNonNull(device, "device");
    if (node < -1) {
      throw new IllegalArgumentException("a NUMA node is -1 (unknown) or more, got " + node);
    }
    numaNodes.put(device, node);
  }

  /** The node {@link #setNumaNode} set for {@code device}, or -1. */
  synchronized int numaNode(String device) {
    return numaNodes.getOrDefault(device, -1);
  }

  /**
   * Sets a port's state and raises the matching async event.
   *
   * @param device the device's name
   * @param port the port, from 1
   * @param state {@code PORT_ACTIVE} or {@code PORT_DOWN}
   */
  public void setPortState(String device, int port, int state) {
    bound().setPortState(device, port, state);
  }

  /**
   * Sets the link rate a port reports from now on ({@code ibv_query_port}'s {@code active_width}
   * and {@code active_speed}), as a renegotiated link does; raises no event.
   *
   * @param device the device's name
   * @param port the port, from 1
   * @param activeWidth an {@code active_width} encoding (1, 2, 4, 8 or 16), or 0: unknown
   * @param activeSpeed an {@code active_speed} encoding (1, 2, 4, 8, 16, 32, 64 or 128), or 0:
   *     unknown
   * @throws IllegalArgumentException naming the device or port that does not exist
   */
  public void setPortRate(String device, int port, int activeWidth, int activeSpeed) {
    bound().setPortRate(device, port, activeWidth, activeSpeed);
  }

  /**
   * Makes entry {@code index} of a port's GID table valid: the device's responder address under
   * {@code alias} ({@link SoftGid#encode(java.net.Inet4Address, int, int)}), so distinct aliases
   * give distinct GIDs that all lead to the same responder. Raises {@code EVENT_GID_CHANGE}.
   *
   * @param device the device's name
   * @param port the port, from 1
   * @param index the GID index, 0 up to the table's length ({@code gidTblLen}) - 1
   * @param alias 0..65535 (entry 0 starts with alias 0)
   * @throws IllegalArgumentException naming the device, port, index or alias that does not exist
   */
  public void setGid(String device, int port, int index, int alias) {
    if (alias < 0 || alias > 0xffff) {
      throw new IllegalArgumentException("GID alias out of range (0..65535): " + alias);
    }
    bound().setGidAlias(device, port, index, alias);
  }

  /**
   * Makes entry {@code index} of a port's GID table invalid (all zero), as when the address it
   * carried is removed. Raises {@code EVENT_GID_CHANGE}.
   *
   * @param device the device's name
   * @param port the port, from 1
   * @param index the GID index
   * @throws IllegalArgumentException naming the device, port or index that does not exist
   */
  public void invalidateGid(String device, int port, int index) {
    bound().setGidAlias(device, port, index, -1);
  }

  /**
   * Raises {@code EVENT_DEVICE_FATAL} on every open context of a device, as a device that failed
   * for good would; nothing else changes (its ports, QPs and CQs keep working in the soft
   * provider), so a test sees only what the event itself makes its owner do.
   *
   * @param device the device's name
   * @throws IllegalArgumentException naming the device if there is none
   */
  public void raiseDeviceFatal(String device) {
    bound().deviceFatal(device);
  }

  /**
   * Closes a QP's connection.
   *
   * @param qpNum the QP's number
   */
  public void dropWire(int qpNum) {
    bound().dropWire(qpNum);
  }

  /**
   * Holds a QP's requests until {@link #releaseWire}.
   *
   * @param qpNum the QP's number
   */
  public void stallWire(int qpNum) {
    synchronized (this) {
      checkMutable();
      stalled.add(qpNum);
    }
  }

  /**
   * Lets a QP's held requests go, in order.
   *
   * @param qpNum the QP's number
   */
  public void releaseWire(int qpNum) {
    Actions a;
    synchronized (this) {
      stalled.remove(qpNum);
      a = actions;
    }
    if (a != null) {
      a.wireReleased();
    }
  }

  /**
   * Switches the null wire on or off. While on, every RDMA READ and RDMA WRITE that a QP of this
   * provider starts completes successfully at once without moving any byte or sending anything: its
   * target and its local memory are untouched, its remote address and rkey are not checked, and an
   * armed {@link #interruptCopy} or {@link #stallWire} does not touch it (they stay armed for the
   * wire). Its local SGEs are still resolved, and a port that is down still fails it, as usual.
   * SENDs (and a WRITE with immediate, which consumes a receive at the target), receives, binds and
   * everything else behave as usual. It takes effect for the next WR a QP starts.
   *
   * <p>It exists to measure the engine's own per-slice cost (the RDMA bench), never to carry data.
   *
   * @param on true to complete READs and WRITEs without the wire, false for real copies again
   */
  public synchronized void nullWire(boolean on) {
    checkMutable();
    nullWire = on;
  }

  /**
   * The RDMA READ and WRITE payload bytes the provider this table serves has moved from or into
   * {@code device}'s memory as a requester (a READ's bytes scattered, a WRITE's bytes acknowledged
   * by the target): the provider's own count, as a NIC's port counters are, for tests to compare
   * with an engine's. Not a fault; it changes nothing.
   *
   * @param device the device's name
   * @return the bytes so far
   * @throws IllegalArgumentException if the provider has no such device
   */
  public long payloadBytes(String device) {
    return bound().payloadBytes(device);
  }

  synchronized void attach(Actions provider) {
    if (!mutable) {
      return;
    }
    if (actions != null) {
      throw new IllegalStateException("this fault table already serves a provider");
    }
    actions = provider;
  }

  synchronized boolean takeWithheld(int qpNum, long wrId) {
    return !withheld.isEmpty() && withheld.remove(new WrKey(qpNum, wrId));
  }

  /** The errno a destroy of that object must fail with, or 0. */
  synchronized int destroyFailure(Kind kind, long handle) {
    if (mutable) {
      destroys.count(kind);
    }
    return destroys.failure(kind, handle);
  }

  /** Counts a destroy of a live object that an address rule failed (see {@link #destroyCalls}). */
  synchronized void countDestroy(Kind kind) {
    if (mutable) {
      destroys.count(kind);
    }
  }

  /** The errno a deregistration of an MR starting at {@code address} must fail with, or 0. */
  synchronized int deregFailureAt(long address) {
    return destroys.deregFailureAt(address);
  }

  /** The errno a poll of CQ {@code cq} must fail with, or 0. */
  synchronized int pollFailure(long cq) {
    if (pollFailures.isEmpty()) {
      return 0;
    }
    Integer errno = pollFailures.get(cq);
    return errno == null ? 0 : errno;
  }

  /**
   * {index, errno} of the post-send failure armed for QP {@code qpNum} that {@code wrs} meets (an
   * opcode rule when it holds that opcode, else the next-post rule), taken; or null.
   */
  synchronized int[] takePostSendFailure(int qpNum, List<Verbs.SendWr> wrs) {
    int[] byOpcode = opcodeFailures.isEmpty() ? null : opcodeFailures.get(qpNum);
    if (byOpcode != null) {
      for (int i = 0; i < wrs.size(); i++) {
        if (wrs.get(i) != null && wrs.get(i).opcode() == byOpcode[0]) {
          opcodeFailures.remove(qpNum);
          return new int[] {i, byOpcode[1]};
        }
      }
    }
    return postSendFailures.isEmpty() ? null : postSendFailures.remove(qpNum);
  }

  /** The byte count after which that WR's copy is interrupted, taken; or -1. */
  synchronized int takeInterrupt(int qpNum, long wrId) {
    Integer b = interrupts.isEmpty() ? null : interrupts.remove(new WrKey(qpNum, wrId));
    return b == null ? -1 : b;
  }

  synchronized boolean nullWire() {
    return nullWire;
  }

  synchronized boolean stalled(int qpNum) {
    return !stalled.isEmpty() && stalled.contains(qpNum);
  }

  private Actions bound() {
    Actions a;
    synchronized (this) {
      checkMutable();
      a = actions;
    }
    if (a == null) {
      throw new IllegalStateException("this fault table serves no provider yet");
    }
    return a;
  }

  private void checkMutable() {
    if (!mutable) {
      throw new UnsupportedOperationException("SoftFaults.none() holds no faults");
    }
  }
}
