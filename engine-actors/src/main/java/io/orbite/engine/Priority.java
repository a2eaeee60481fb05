package io.orbite.engine;

/**
 * Scheduling tier of a request (C14). TCP and RDMA lanes send their waiting work HIGH first, FIFO
 * within a tier, and promote a lower tier whose oldest work waited long enough (10 ms on TCP;
 * {@code rdma.priorityAgingMillis}, default 10 ms, on RDMA); work already sent is never preempted.
 * SHM and file segments copy in arrival order.
 */
public enum Priority {
  /** The first tier; {@link TransferRequest#read} and {@link TransferRequest#write} use it. */
  HIGH,
  /** The middle tier: sent after waiting HIGH work. */
  MEDIUM,
  /** The last tier: sent after waiting HIGH and MEDIUM work, until it ages. */
  LOW
}
