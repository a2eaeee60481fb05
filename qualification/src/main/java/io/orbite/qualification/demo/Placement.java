package io.orbite.qualification.demo;

/** Where one demo task's bytes sit on each side, and its nominal size class. */
record Placement(String sizeClass, long length, long localOffset, long remoteOffset) {}
