package io.orbite.nativebind.verbs.soft;

import java.util.concurrent.locks.ReentrantLock;

/**
 * What each verbs group of one {@link SoftVerbs} holds: the provider's {@link SoftTable}, and its
 * lock, handle table and fault table under their own names, as every verb uses them.
 */
abstract class SoftVerbsGroup {
  final SoftTable table;
  final ReentrantLock lock;
  final SoftHandles handles;
  final SoftFaults faults;

  SoftVerbsGroup(SoftTable table) {
    this.table = table;
    this.lock = table.lock;
    this.handles = table.handles;
    this.faults = table.faults;
  }
}
