package io.orbite.engine;

/** Scheduling tier of a request (C14). TCP accepts every priority without reordering by it. */
public enum Priority {
  HIGH,
  MEDIUM,
  LOW
}
