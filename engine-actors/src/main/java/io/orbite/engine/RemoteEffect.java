package io.orbite.engine;

/** What a task is known to have done to the remote peer's bytes. */
public enum RemoteEffect {
  /** The remote bytes were not changed by this task (every READ; a refused or unsent WRITE). */
  NONE,
  /** A WRITE may have changed remote bytes without an acknowledgement. Never replayed (C6). */
  UNKNOWN,
  /** The remote peer acknowledged that (some or all of) this WRITE's bytes were applied. */
  APPLIED
}
