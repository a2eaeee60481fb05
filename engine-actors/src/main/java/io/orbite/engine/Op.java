package io.orbite.engine;

/** The direction of a transfer, seen from the requester. */
public enum Op {
  /** Copy remote bytes into local memory. */
  READ,
  /** Copy local bytes into remote memory. */
  WRITE
}
