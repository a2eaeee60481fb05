package io.orbite.engine.spi;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;

/**
 * A lane's word on one frame of a task: confirmed ({@code error == null}, {@code bytes} moved) or
 * failed. A lane sends a failure receipt only once it no longer touches the frame's memory.
 */
public record Receipt(
    int taskIndex, long bytes, ErrorKind error, RemoteEffect effect, String detail) {
  public static Receipt ok(int taskIndex, long bytes, RemoteEffect effect) {
    return new Receipt(taskIndex, bytes, null, effect, "");
  }

  public static Receipt failed(int taskIndex, ErrorKind error, RemoteEffect effect, String detail) {
    return new Receipt(taskIndex, 0, error, effect, detail);
  }
}
