package io.orbite.engine;

/** Scheduling tier of a request (C14). TCP accepts every priority without reordering by it. */
public enum Priority {
  /** The first tier; {@link TransferRequest#read} and {@link TransferRequest#write} use it. */
  HIGH,
  /** The middle tier; carried on the task, not yet acted on by any transport. */
  MEDIUM,
  /** The last tier; carried on the task, not yet acted on by any transport. */
  LOW
}
